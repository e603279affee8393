package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/gossipreduce/gossipreduce/gossip"
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

	// Logger receives the server's log at debug level (and a failure to
	// start at error level); nil discards it.
	Logger *slog.Logger

	// StartTimeout bounds the wait for the server to accept clients; zero
	// means DefaultStartTimeout.
	StartTimeout time.Duration
}

// Server is a NATS server running inside this process, listening on
// 127.0.0.1 only, so that a live run needs nothing else installed. It does
// not install signal handlers and does not log unless asked to.
type Server struct {
	ns    *server.Server
	opts  EmbeddedOptions
	token string
}

// StartEmbedded starts a NATS server in this process and waits until it
// accepts clients. A port already in use fails at once with the listener's
// error rather than after the start timeout.
func StartEmbedded(ctx context.Context, opts EmbeddedOptions) (*Server, error) {
	if opts.Port < 0 || opts.Port > 65535 {
		return nil, fmt.Errorf("transport: %w: port %d outside 0…65535", gossip.ErrInvalidConfig, opts.Port)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("transport: start embedded server: %w", err)
	}
	port := opts.Port
	if port == 0 {
		port = server.RANDOM_PORT
	}
	ns, err := server.NewServer(&server.Options{
		ServerName:    "gossipreduce-embedded",
		Host:          "127.0.0.1",
		Port:          port,
		DontListen:    opts.InProcess,
		NoSigs:        true,
		NoLog:         true,
		Authorization: opts.Token,
	})
	if err != nil {
		return nil, fmt.Errorf("transport: embedded server: %w", err)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	fatal := make(chan string, 1)
	ns.SetLoggerV2(&serverLog{log: logger, fatal: fatal}, false, false, false)
	ns.Start()

	s := &Server{ns: ns, opts: opts, token: opts.Token}
	deadline := time.Now().Add(orDefault(opts.StartTimeout, DefaultStartTimeout))
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
			return nil, fmt.Errorf("transport: start embedded server: %w", err)
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
// InProcess server, over loopback TCP otherwise. The server's token is used
// unless opts sets one.
func (s *Server) Connect(ctx context.Context, opts NATSOptions) (*NATS, error) {
	if opts.Token == "" {
		opts.Token = s.token
	}
	if s.opts.InProcess {
		// Over the unbuffered in-process pipe, a refused client and the
		// server block writing to each other until the server's write
		// deadline, and the client then reports a closed pipe. The token
		// is the server's only credential, so check it here instead.
		if s.token != "" && opts.Token != s.token {
			return nil, fmt.Errorf("transport: connect to the in-process server: %w: wrong token: %w", ErrAuth, nats.ErrAuthorization)
		}
		return connect(ctx, "", s.ns, opts)
	}
	return connect(ctx, s.ns.ClientURL(), nil, opts)
}

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
