package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/gossipreduce/gossipreduce/transport/natsserver"
)

func init() {
	register("server", "run the embedded NATS server on a loopback port", runServer)
}

// runServer starts the embedded NATS server, prints its client URL, and
// serves until ctx ends (SIGINT or SIGTERM), so that a multi-process run
// needs nothing else installed.
func runServer(ctx context.Context, args []string, out *stdio) error {
	fs := newFlags("server", out)
	port := fs.Int("port", 4222, "TCP port on 127.0.0.1 (0 picks a free one)")
	token := fs.String("token", "", "require this token from clients")
	user := fs.String("user", "", "require this user name from clients (with --password)")
	password := fs.String("password", "", "the password of --user (visible in the process list)")
	tlsCert := fs.String("tls-cert", "", "PEM server certificate: require TLS (with --tls-key)")
	tlsKey := fs.String("tls-key", "", "PEM private key of --tls-cert")
	tlsCA := fs.String("tls-ca", "", "PEM CA file: require client certificates signed by it (with --tls-cert)")
	verbose := fs.Bool("v", false, "log the server's messages to stderr")
	asJSON := fs.Bool("json", false, `print {"url": …} instead of text`)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *port < 0 || *port > 65535 {
		return usagef("--port %d outside 0…65535", *port)
	}
	switch {
	case *token != "" && *user != "":
		return usagef("--token or --user, not both")
	case (*user == "") != (*password == ""):
		return usagef("--user and --password go together")
	case (*tlsCert == "") != (*tlsKey == ""):
		return usagef("--tls-cert and --tls-key go together")
	case *tlsCA != "" && *tlsCert == "":
		return usagef("--tls-ca needs --tls-cert and --tls-key")
	}
	opts := natsserver.EmbeddedOptions{Port: *port, Token: *token, User: *user, Password: *password,
		TLS: transport.TLSFiles{Cert: *tlsCert, Key: *tlsKey, CA: *tlsCA}}
	if *verbose {
		opts.Logger = slog.New(slog.NewTextHandler(out.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	srv, err := natsserver.StartEmbedded(ctx, opts)
	if err != nil {
		return err
	}
	defer srv.Shutdown()

	url := srv.ClientURL()
	if *asJSON {
		err = json.NewEncoder(out.Stdout).Encode(struct {
			URL string `json:"url"`
		}{url})
	} else {
		_, err = fmt.Fprintln(out.Stdout, url)
	}
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	fmt.Fprintf(out.Stderr, "gossipreduce server: NATS on %s until interrupted; watch with: nats sub --server %s '%s.>'\n", url, url, transport.DefaultPrefix)
	<-ctx.Done()
	return nil
}
