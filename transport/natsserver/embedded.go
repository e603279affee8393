package natsserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
)

// DefaultStartTimeout bounds how long StartEmbedded waits for the server when
// [EmbeddedOptions.StartTimeout] is zero.
const DefaultStartTimeout = 10 * time.Second

// EmbeddedOptions configure [StartEmbedded].
type EmbeddedOptions struct {
	// Port is the loopback TCP port to listen on; zero picks a free one.
	Port int

	// InProcess starts the server without any listener: only this
	// process can connect, through [Server.Connect], over an in-memory pipe.
	InProcess bool

	// Token, if set, is required from every client.
	Token string

	// User and Password, if set, are required from every client (besides
	// the nkeys below). A token excludes users and nkeys.
	User, Password string

	// NKeys lists the public user nkeys ("U…") the server accepts, each
	// proved by signing the server's challenge with its seed (see
	// [transport.NATSOptions].NkeySeedFile). Not with InProcess.
	NKeys []string

	// TLS, if Cert and Key are set, makes the server require TLS with that
	// certificate, and if CA is set too, a client certificate signed by it.
	// Not with InProcess.
	TLS transport.TLSFiles

	// Logger receives the server's log at debug level (and a failure to
	// start at error level); nil discards it.
	Logger *slog.Logger

	// StartTimeout bounds the wait for the server to accept clients; zero
	// means DefaultStartTimeout.
	StartTimeout time.Duration

	// MaxPayload, if positive, is the largest message the server accepts,
	// in bytes (NATS's max_payload; zero keeps the server's default of 1
	// MiB). The transport splits longer messages into fragments, so this
	// changes how many messages travel, never what arrives.
	MaxPayload int32
}

// Server is a NATS server running inside this process, listening on
// 127.0.0.1 only, so that a live run needs nothing else installed. It does
// not install signal handlers and does not log unless asked to.
type Server struct {
	ns   *server.Server
	opts EmbeddedOptions
}

// StartEmbedded starts a NATS server in this process and waits until it
// accepts clients. A port already in use fails at once with the listener's
// error rather than after the start timeout.
func StartEmbedded(ctx context.Context, opts EmbeddedOptions) (*Server, error) {
	sopts, err := serverOptions(opts)
	if err != nil {
		return nil, err
	}
	sopts.ServerName = "gossipreduce-embedded"
	return startServer(ctx, sopts, opts)
}

// serverOptions checks opts and translates them for nats-server.
func serverOptions(opts EmbeddedOptions) (*server.Options, error) {
	if opts.Port < 0 || opts.Port > 65535 {
		return nil, fmt.Errorf("natsserver: %w: port %d outside 0…65535", gossip.ErrInvalidConfig, opts.Port)
	}
	if opts.Token != "" && (opts.User != "" || opts.Password != "" || len(opts.NKeys) > 0) {
		return nil, fmt.Errorf("natsserver: %w: the embedded server takes a token, or users and nkeys, not both", gossip.ErrInvalidConfig)
	}
	if opts.MaxPayload < 0 {
		return nil, fmt.Errorf("natsserver: %w: negative max payload %d", gossip.ErrInvalidConfig, opts.MaxPayload)
	}
	if opts.Password != "" && opts.User == "" {
		return nil, fmt.Errorf("natsserver: %w: a password without a user name", gossip.ErrInvalidConfig)
	}
	if opts.InProcess && (len(opts.NKeys) > 0 || !opts.TLS.IsZero()) {
		return nil, fmt.Errorf("natsserver: %w: an in-process server takes a token or a user and password, not nkeys or TLS", gossip.ErrInvalidConfig)
	}
	port := opts.Port
	if port == 0 {
		port = server.RANDOM_PORT
	}
	sopts := &server.Options{
		Host:          "127.0.0.1",
		Port:          port,
		DontListen:    opts.InProcess,
		NoSigs:        true,
		NoLog:         true,
		Authorization: opts.Token,
		MaxPayload:    opts.MaxPayload,
	}
	if opts.User != "" {
		sopts.Users = []*server.User{{Username: opts.User, Password: opts.Password}}
	}
	for _, k := range opts.NKeys {
		if !nkeys.IsValidPublicUserKey(k) {
			return nil, fmt.Errorf("natsserver: %w: %q is not a public user nkey", gossip.ErrInvalidConfig, k)
		}
		sopts.Nkeys = append(sopts.Nkeys, &server.NkeyUser{Nkey: k})
	}
	if !opts.TLS.IsZero() {
		f := opts.TLS
		if f.Cert == "" || f.Key == "" || f.ServerName != "" {
			return nil, fmt.Errorf("natsserver: %w: server TLS needs a certificate and a key file (and no server name)", gossip.ErrInvalidConfig)
		}
		if err := checkTLSFiles(f); err != nil {
			return nil, err
		}
		cfg, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: f.Cert, KeyFile: f.Key, CaFile: f.CA, Verify: f.CA != ""})
		if err != nil {
			return nil, fmt.Errorf("natsserver: embedded server TLS: %w", err)
		}
		sopts.TLS, sopts.TLSConfig, sopts.TLSVerify = true, cfg, f.CA != ""
	}
	return sopts, nil
}

// checkTLSFiles reads the server's certificate and key, and its CA file if
// any, so that a missing or bad file fails with an error that names it;
// nats-server reads them again.
func checkTLSFiles(f transport.TLSFiles) error {
	if _, err := tls.LoadX509KeyPair(f.Cert, f.Key); err != nil {
		return fmt.Errorf("natsserver: TLS certificate %s with key %s: %w", f.Cert, f.Key, err)
	}
	if f.CA == "" {
		return nil
	}
	pem, err := os.ReadFile(f.CA)
	if err != nil {
		return fmt.Errorf("natsserver: TLS CA file: %w", err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(pem) {
		return fmt.Errorf("natsserver: TLS CA file %s: %w: no PEM certificate in it", f.CA, gossip.ErrInvalidConfig)
	}
	return nil
}

// startTimeout is StartTimeout, or its default.
func (o EmbeddedOptions) startTimeout() time.Duration {
	if o.StartTimeout <= 0 {
		return DefaultStartTimeout
	}
	return o.StartTimeout
}

// startServer starts a server with sopts and waits until it accepts
// clients (and, in a cluster, listens for routes).
func startServer(ctx context.Context, sopts *server.Options, opts EmbeddedOptions) (*Server, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("natsserver: start embedded server: %w", err)
	}
	ns, err := server.NewServer(sopts)
	if err != nil {
		return nil, fmt.Errorf("natsserver: embedded server: %w", err)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	fatal := make(chan string, 1)
	ns.SetLoggerV2(&serverLog{log: logger, fatal: fatal}, false, false, false)
	ns.Start()

	s := &Server{ns: ns, opts: opts}
	deadline := time.Now().Add(opts.startTimeout())
	for !ns.ReadyForConnections(50 * time.Millisecond) {
		var err error
		select {
		case msg := <-fatal:
			err = errors.New(msg)
		case <-ctx.Done():
			err = ctx.Err()
		default:
			if time.Now().After(deadline) {
				err = errors.New("not ready before the start timeout")
			}
		}
		if err != nil {
			s.Shutdown()
			return nil, fmt.Errorf("natsserver: start embedded server: %w", err)
		}
	}
	return s, nil
}

// ClientURL returns the URL clients connect to ("nats://127.0.0.1:port"), or
// "" for an in-process server, which has none.
func (s *Server) ClientURL() string {
	if s.opts.InProcess {
		return ""
	}
	return s.ns.ClientURL()
}

// Connect returns a transport over a new connection to s: in-process for an
// InProcess server ([transport.ConnectInProcess]), over loopback TCP
// otherwise ([transport.Connect]). The server's token, or its user and
// password, are used unless opts sets a token, user or password (nkeys and
// TLS files are the caller's to give). It logs no warning without a group
// key (opts.Key): the process runs the server, and decides who else can
// reach it.
func (s *Server) Connect(ctx context.Context, opts transport.NATSOptions) (*transport.NATS, error) {
	if opts.Token == "" && opts.User == "" && opts.Password == "" {
		opts.Token, opts.User, opts.Password = s.opts.Token, s.opts.User, s.opts.Password
	}
	if s.opts.InProcess {
		return transport.ConnectInProcess(ctx, s.door(opts), opts)
	}
	opts.SkipNoKeyWarning = true
	return transport.Connect(ctx, []string{s.ns.ClientURL()}, opts)
}

// door returns what lets a client with opts into an in-process server: the
// server, or, when the server would refuse the client's token or user and
// password, a stand-in that refuses it at once. Over the unbuffered
// in-process pipe a refused client and the server block writing to each
// other until the server's write deadline, and the client then reports a
// closed pipe instead of the refusal. The token, or the user and password,
// are an in-process server's only credentials (it takes no nkeys and no
// TLS), so this check is the server's whole.
func (s *Server) door(opts transport.NATSOptions) nats.InProcessConnProvider {
	if (s.opts.Token != "" && opts.Token != s.opts.Token) ||
		(s.opts.User != "" && (opts.User != s.opts.User || opts.Password != s.opts.Password)) {
		return refused{}
	}
	return s.ns
}

// refused is an in-process server that refuses every client with the
// error nats.go gives for refused credentials, so that the client reports
// it as such ([transport.ErrAuth]).
type refused struct{}

func (refused) InProcessConn() (net.Conn, error) { return nil, nats.ErrAuthorization }

// NumClients returns the number of clients connected to the server.
func (s *Server) NumClients() int { return s.ns.NumClients() }

// Shutdown stops the server, disconnecting its clients, and returns once it
// has stopped. It is safe to call more than once.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}

// serverLog routes the server's log to slog at debug level, and reports a
// fatal error (such as a port in use) to StartEmbedded instead of exiting.
type serverLog struct {
	log   *slog.Logger
	fatal chan<- string
}

func (l *serverLog) logf(level slog.Level, format string, v []any) {
	if l.log.Enabled(context.Background(), level) {
		l.log.Log(context.Background(), level, fmt.Sprintf(format, v...), "component", "nats-server")
	}
}

func (l *serverLog) Noticef(format string, v ...any) { l.logf(slog.LevelDebug, format, v) }
func (l *serverLog) Warnf(format string, v ...any)   { l.logf(slog.LevelDebug, format, v) }
func (l *serverLog) Errorf(format string, v ...any)  { l.logf(slog.LevelDebug, format, v) }
func (l *serverLog) Debugf(format string, v ...any)  { l.logf(slog.LevelDebug, format, v) }
func (l *serverLog) Tracef(format string, v ...any)  { l.logf(slog.LevelDebug, format, v) }

func (l *serverLog) Fatalf(format string, v ...any) {
	l.logf(slog.LevelError, format, v)
	select {
	case l.fatal <- fmt.Sprintf(format, v...):
	default:
	}
}
