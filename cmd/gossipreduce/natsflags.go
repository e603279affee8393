package main

import (
	"context"
	"flag"
	"log/slog"
	"strings"

	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/gossipreduce/gossipreduce/transport/natsserver"
)

// natsFlags are the flags the live verbs share for reaching a secured
// NATS: the servers, credentials, TLS, the subject prefix and the group
// key.
//
// The group key is read from a file (--key-file) and never taken on the
// command line: arguments are visible to every local user (ps,
// /proc/<pid>/cmdline) and stay in shell histories, and the key is what
// keeps a foreign publisher from injecting into the group. The password
// flag has the same weakness; its help says so and points to --creds and
// --nkey, whose secrets stay in files.
type natsFlags struct {
	url                    string // --nats; empty: an embedded server
	token, user, password  string
	creds, nkey            string
	tlsCA, tlsCert, tlsKey string
	tlsServerName          string
	prefix, keyFile        string
}

// register defines the shared flags on fs, --nats with the default url
// (empty: an embedded server).
func (f *natsFlags) register(fs *flag.FlagSet, url string) {
	fs.StringVar(&f.url, "nats", url, "NATS server URL(s), comma separated (run, bench, chaos: default an embedded server on a loopback port; "+
		"node, a process of its own: default the one gossipreduce server starts)")
	fs.StringVar(&f.token, "token", "", "NATS authentication token")
	fs.StringVar(&f.user, "user", "", "NATS user name")
	fs.StringVar(&f.password, "password", "", "NATS password of --user (visible in the process list: prefer --creds or --nkey)")
	fs.StringVar(&f.creds, "creds", "", "NATS credentials file (user JWT and nkey seed, as nsc writes them)")
	fs.StringVar(&f.nkey, "nkey", "", "file holding a NATS user nkey seed (SU…)")
	fs.StringVar(&f.tlsCA, "tls-ca", "", "PEM file of the CA(s) that sign the NATS server's certificate (turns TLS on)")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "PEM client certificate, for servers that verify clients (with --tls-key)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&f.tlsServerName, "tls-server-name", "", "name the server's certificate must carry (default: the URL's host)")
	fs.StringVar(&f.prefix, "prefix", "", `first subject token(s) of the group's subjects, e.g. "acme.metrics" (default "`+transport.DefaultPrefix+`"), so NATS permissions can scope the group`)
	fs.StringVar(&f.keyFile, "key-file", "", "file holding the group key (at least 16 bytes, one trailing newline ignored): every message is authenticated with it; every member needs the same key")
}

// connecting reports whether any credential or TLS flag is set: flags that
// only make sense towards an external server.
func (f *natsFlags) connecting() bool {
	return f.token != "" || f.user != "" || f.password != "" || f.creds != "" || f.nkey != "" ||
		f.tlsCA != "" || f.tlsCert != "" || f.tlsKey != "" || f.tlsServerName != ""
}

// check validates the flags that can be judged without reading files; the
// errors are usage errors (exit 2).
func (f *natsFlags) check() error {
	if f.url == "" && f.connecting() {
		return usagef("--token, --user, --password, --creds, --nkey and --tls-* are for an external server: give --nats")
	}
	if f.password != "" && f.user == "" {
		return usagef("--password needs --user")
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return usagef("--tls-cert and --tls-key go together")
	}
	if f.prefix != "" {
		if err := (transport.Group{Prefix: f.prefix, Name: "check"}).Validate(); err != nil {
			return usagef("--prefix: %v", err)
		}
	}
	return nil
}

// options returns the transport options the flags describe on top of base,
// reading the group key file.
func (f *natsFlags) options(base transport.Options) (transport.NATSOptions, error) {
	if err := f.check(); err != nil {
		return transport.NATSOptions{}, err
	}
	if f.keyFile != "" {
		key, err := transport.ReadKeyFile(f.keyFile)
		if err != nil {
			return transport.NATSOptions{}, err
		}
		base.Key = key
	}
	return transport.NATSOptions{
		Options:      base,
		Token:        f.token,
		User:         f.user,
		Password:     f.password,
		CredsFile:    f.creds,
		NkeySeedFile: f.nkey,
		TLS:          transport.TLSFiles{CA: f.tlsCA, Cert: f.tlsCert, Key: f.tlsKey, ServerName: f.tlsServerName},
	}, nil
}

// openNet connects to the NATS servers of --nats with the flags'
// credentials, or, without --nats, starts an embedded server on a random
// loopback port. The group key and base go into the transport's options.
func (f *natsFlags) openNet(ctx context.Context, base transport.Options) (*liveNet, error) {
	opts, err := f.options(base)
	if err != nil {
		return nil, err
	}
	if f.url != "" {
		if opts.Logger == nil {
			// The verbs warn about a missing key themselves (warnNoKey),
			// in their JSON too; the transport's own warning would repeat it.
			opts.Logger = slog.New(slog.DiscardHandler)
		}
		tr, err := transport.Connect(ctx, f.urls(), opts)
		if err != nil {
			return nil, err
		}
		return &liveNet{tr: tr, url: f.url}, nil
	}
	srv, err := natsserver.StartEmbedded(ctx, natsserver.EmbeddedOptions{})
	if err != nil {
		return nil, err
	}
	tr, err := srv.Connect(ctx, opts)
	if err != nil {
		srv.Shutdown()
		return nil, err
	}
	return &liveNet{srv: srv, tr: tr, url: srv.ClientURL()}, nil
}

// urls returns the servers of --nats, none for an embedded server.
func (f *natsFlags) urls() []string {
	if f.url == "" {
		return nil
	}
	return strings.Split(f.url, ",")
}
