package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/gossipreduce/gossipreduce/transport/natsserver"
)

func init() {
	register("server", "run the embedded NATS server on a loopback port", serverFamily, func() command { return &serverCmd{} })
}

// serverCmd starts the embedded NATS server, prints its client URL, and
// serves until ctx ends (SIGINT or SIGTERM), so that a multi-process run
// needs nothing else installed.
type serverCmd struct {
	port                   int
	token, user, password  string
	tlsCert, tlsKey, tlsCA string
	verbose                bool
}

func (c *serverCmd) flags(fs *flag.FlagSet) {
	fs.IntVar(&c.port, "port", 4222, "TCP port on 127.0.0.1 (0 picks a free one)")
	fs.StringVar(&c.token, "token", "", "require this token from clients")
	fs.StringVar(&c.user, "user", "", "require this user name from clients (with --password)")
	fs.StringVar(&c.password, "password", "", "the password of --user (visible in the process list)")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "PEM server certificate: require TLS (with --tls-key)")
	fs.StringVar(&c.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&c.tlsCA, "tls-ca", "", "PEM CA file: require client certificates signed by it (with --tls-cert)")
	fs.BoolVar(&c.verbose, "v", false, "log the server's messages to stderr")
}

func (c *serverCmd) check() error {
	switch {
	case c.port < 0 || c.port > 65535:
		return usagef("--port %d outside 0…65535", c.port)
	case c.token != "" && c.user != "":
		return usagef("--token or --user, not both")
	case (c.user == "") != (c.password == ""):
		return usagef("--user and --password go together")
	case (c.tlsCert == "") != (c.tlsKey == ""):
		return usagef("--tls-cert and --tls-key go together")
	case c.tlsCA != "" && c.tlsCert == "":
		return usagef("--tls-ca needs --tls-cert and --tls-key")
	}
	return nil
}

func (c *serverCmd) exec(ctx context.Context, out *stdio) error {
	opts := natsserver.EmbeddedOptions{Port: c.port, Token: c.token, User: c.user, Password: c.password,
		TLS: transport.TLSFiles{Cert: c.tlsCert, Key: c.tlsKey, CA: c.tlsCA}}
	if c.verbose {
		opts.Logger = debugLogger(out.Stderr)
	}
	srv, err := natsserver.StartEmbedded(ctx, opts)
	if err != nil {
		return err
	}
	defer srv.Shutdown()

	url := srv.ClientURL()
	if out.json {
		// One line: a script reads it to learn where the server listens.
		err = writeJSONLine(out.Stdout, struct {
			URL string `json:"url"`
		}{url})
	} else {
		_, err = fmt.Fprintln(out.Stdout, url)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out.Stderr, "gossipreduce server: NATS on %s until interrupted; watch with: nats sub --server %s '%s.>'\n", url, url, transport.DefaultPrefix)
	<-ctx.Done()
	return nil
}
