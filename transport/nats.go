package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// ErrAuth reports that a NATS server refused the credentials (token,
// user and password, nkey, creds file): the error wraps it and the NATS
// error, so a wrong password reads as such and not as a closed connection.
var ErrAuth = errors.New("transport: NATS authentication failed")

// Defaults for [NATSOptions].
const (
	DefaultConnectTimeout  = 5 * time.Second
	DefaultReconnectWait   = 250 * time.Millisecond
	DefaultReconnectJitter = 50 * time.Millisecond
	DefaultPingInterval    = 10 * time.Second
	DefaultCloseTimeout    = 2 * time.Second
)

// NATSOptions configure [Connect] and [ConnectInProcess] (and
// natsserver's Server.Connect).
type NATSOptions struct {
	Options

	// Name is the connection's name as the server reports it; empty means
	// "gossipreduce".
	Name string

	// Token, or User and Password, authenticate to the server.
	Token          string
	User, Password string

	// NkeySeedFile names a file holding a user nkey seed ("SU…"): the
	// client proves it holds the key by signing the server's challenge.
	NkeySeedFile string

	// CredsFile names a NATS credentials file (a user JWT and its nkey
	// seed, as nsc writes them), for servers in operator mode.
	CredsFile string

	// TLS configures TLS to the server from PEM files: the CA that signs
	// the server's certificate and, for servers that verify clients, the
	// client's certificate and key. TLS is on when any field is set or
	// TLSConfig is not nil.
	TLS TLSFiles

	// TLSConfig, if not nil, is the base TLS configuration (cloned); the
	// files of TLS are added to it.
	TLSConfig *tls.Config

	// ConnectTimeout bounds each attempt to dial and greet a server (zero
	// means DefaultConnectTimeout); the context of Connect bounds them all.
	ConnectTimeout time.Duration

	// ReconnectWait is the pause before a server is tried again after the
	// connection was lost (zero means DefaultReconnectWait). nats.go pauses
	// only once it has tried every server it knows, so with a cluster the
	// connection moves to a live server at once and the wait matters only
	// when all of them are down.
	ReconnectWait time.Duration

	// ReconnectJitter is the upper bound of a random delay added to
	// ReconnectWait (for TLS connections too), so that the clients of a
	// restarting server do not all come back at once (zero means
	// DefaultReconnectJitter; nats.go's own defaults are 100 ms and 1 s).
	ReconnectJitter time.Duration

	// PingInterval is how often the client pings the server; when more
	// than two pings are unanswered the connection counts as lost and the
	// client reconnects, so a server that vanished without closing its
	// connections (a crashed host, a partition) goes unnoticed for about
	// three intervals (zero means DefaultPingInterval, so about 30 s;
	// nats.go's default is 2 minutes). A server shut down, or whose process
	// died, closes its sockets and is noticed at once.
	PingInterval time.Duration

	// MaxReconnects is how many reconnection attempts are made after the
	// connection is lost: zero means no limit (the runtime's own contexts
	// decide when to give up), a negative number none at all.
	MaxReconnects int

	// CloseTimeout bounds how long Close waits for the server to confirm
	// what was sent (zero means DefaultCloseTimeout). It also bounds Open's
	// confirmation of its subscription when Open's context has no deadline.
	CloseTimeout time.Duration

	// Extra options are applied last, after everything above: anything
	// else nats.go offers.
	Extra []nats.Option

	// SkipNoKeyWarning keeps Connect from logging [NoKeyWarning] when
	// there is no group key: for a server that only trusted clients
	// reach, such as one this process runs (natsserver's Server.Connect
	// sets it), or for a program that warns in its own words.
	SkipNoKeyWarning bool
}

// NATS is a [Transport] over one NATS connection. Node id of group g
// receives on the subject g.Subject(id) ("gossipreduce.<group>.<id>") through
// its own subscription, so one connection serves any number of endpoints and
// a process receives only its own nodes' traffic. It is safe for concurrent
// use.
type NATS struct {
	hub          *hub
	nc           *nats.Conn
	owned        bool // Close closes nc
	closeTimeout time.Duration

	once     sync.Once
	closeErr error
}

var _ Transport = (*NATS)(nil)

// NewNATS returns a transport over a connection the caller owns: Close
// flushes it but leaves it open.
func NewNATS(nc *nats.Conn, opts Options) (*NATS, error) {
	if nc == nil {
		return nil, fmt.Errorf("transport: %w: nil NATS connection", gossip.ErrInvalidConfig)
	}
	return newNATS(nc, false, opts, DefaultCloseTimeout)
}

func newNATS(nc *nats.Conn, owned bool, opts Options, closeTimeout time.Duration) (*NATS, error) {
	t := &NATS{nc: nc, owned: owned, closeTimeout: closeTimeout}
	h, err := newHub(opts, t.publish)
	if err != nil {
		return nil, err
	}
	h.online = nc.IsConnected
	t.hub = h
	return t, nil
}

// Connect connects to a NATS server, or to a cluster when given several
// URLs (each may itself be a comma-separated list), and returns a transport
// that owns the connection. The connection reconnects after failures (see
// [NATSOptions]). A server refusing the credentials gives an error wrapping
// [ErrAuth], a failed TLS setup one wrapping [ErrTLS]. Without a group key
// (Options.Key) it logs a warning, to Options.Logger or else to
// slog.Default: any client of the server can then forge and replay the
// group's messages.
func Connect(ctx context.Context, urls []string, opts NATSOptions) (*NATS, error) {
	if len(urls) == 0 {
		return nil, fmt.Errorf("transport: %w: no NATS server URL", gossip.ErrInvalidConfig)
	}
	for _, u := range urls {
		if strings.TrimSpace(u) == "" {
			return nil, fmt.Errorf("transport: %w: empty NATS server URL", gossip.ErrInvalidConfig)
		}
	}
	t, err := connect(ctx, strings.Join(urls, ","), nil, opts)
	if err == nil && len(opts.Key) == 0 && !opts.SkipNoKeyWarning {
		// A server others can publish on, without a key: say so, even to
		// a caller who gave no logger (once connected, so that a caller
		// retrying a server that is not up yet is told once).
		log := opts.Logger
		if log == nil {
			log = slog.Default()
		}
		log.Warn(NoKeyWarning, "url", redact(strings.Join(urls, ",")))
	}
	return t, err
}

// NoKeyWarning is the message Connect logs at level Warn when it connects
// without a group key, so that a program that warns in its own words can
// filter it out of its logs; [NATSOptions].SkipNoKeyWarning keeps Connect
// from logging it at all.
const NoKeyWarning = "transport: no group key: any client of the NATS server can forge or replay this group's messages; set Options.Key"

// ConnectInProcess returns a transport over a connection to a NATS server
// running in this process, through the server's in-process pipe instead of
// a socket: a *server.Server of nats-server is such a provider, with or
// without listeners of its own. Package natsserver connects its in-process
// servers this way; a program that configures nats-server itself (for
// accounts, JetStream, a leaf node) can too. opts apply as for [Connect],
// but TLS, which needs a socket, is an error wrapping
// gossip.ErrInvalidConfig, and so is a nil srv. Refused credentials give
// an error wrapping [ErrAuth] that names "the in-process server". Unlike
// Connect it logs no warning without a group key: the process runs the
// server, and decides who else can reach it.
func ConnectInProcess(ctx context.Context, srv nats.InProcessConnProvider, opts NATSOptions) (*NATS, error) {
	if srv == nil {
		return nil, fmt.Errorf("transport: %w: no in-process NATS server", gossip.ErrInvalidConfig)
	}
	return connect(ctx, "", srv, opts)
}

// connect dials url, or the in-process server when inProcess is set.
func connect(ctx context.Context, url string, inProcess nats.InProcessConnProvider, opts NATSOptions) (*NATS, error) {
	base, err := opts.Options.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("transport: connect to %s: %w", redact(url), err)
	}
	log := base.Logger
	timeout := orDefault(opts.ConnectTimeout, DefaultConnectTimeout)
	if dl, ok := ctx.Deadline(); ok {
		if timeout = min(timeout, time.Until(dl)); timeout <= 0 {
			return nil, fmt.Errorf("transport: connect to %s: %w", redact(url), context.DeadlineExceeded)
		}
	}
	maxReconnects := opts.MaxReconnects
	switch {
	case maxReconnects == 0:
		maxReconnects = -1 // nats.go's "forever"
	case maxReconnects < 0:
		maxReconnects = 0
	}
	name := opts.Name
	if name == "" {
		name = "gossipreduce"
	}
	creds, offered, err := credentials(opts)
	if err != nil {
		return nil, err
	}
	tlsOpts, err := clientTLS(opts.TLS, opts.TLSConfig)
	if err != nil {
		return nil, err
	}
	if inProcess != nil && tlsOpts != nil {
		return nil, fmt.Errorf("transport: %w: TLS to the in-process server, which has no listener", gossip.ErrInvalidConfig)
	}
	jitter := orDefault(opts.ReconnectJitter, DefaultReconnectJitter)
	nopts := []nats.Option{
		nats.Name(name),
		nats.Timeout(timeout),
		nats.ReconnectWait(orDefault(opts.ReconnectWait, DefaultReconnectWait)),
		nats.ReconnectJitter(jitter, jitter),
		nats.PingInterval(orDefault(opts.PingInterval, DefaultPingInterval)),
		nats.MaxReconnects(maxReconnects),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("transport: NATS connection lost", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("transport: NATS reconnected", "url", nc.ConnectedUrlRedacted())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			log.Warn("transport: NATS error", "subject", subject, "err", err)
		}),
	}
	dialer := &ctxDialer{ctx: ctx, Dialer: net.Dialer{Timeout: timeout}}
	if inProcess != nil {
		nopts = append(nopts, nats.InProcessServer(inProcess))
	} else {
		nopts = append(nopts, nats.SetCustomDialer(dialer))
	}
	if opts.MaxReconnects < 0 {
		// nats.go's MaxReconnects(0) still moves to the other servers of a
		// cluster once each; "none at all" takes NoReconnect.
		nopts = append(nopts, nats.NoReconnect())
	}
	nopts = append(nopts, creds...)
	nopts = append(nopts, tlsOpts...)
	nopts = append(nopts, opts.Extra...)

	nc, err := nats.Connect(url, nopts...)
	dialer.detach() // later reconnections outlive ctx
	if err != nil {
		where := redact(url)
		if inProcess != nil {
			where = "the in-process server"
		}
		if cerr := classify(err, where, offered); cerr != nil {
			return nil, cerr
		}
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("transport: connect to %s: %w (%w)", where, cerr, err)
		}
		return nil, fmt.Errorf("transport: connect to %s: %w", where, err)
	}
	t, err := newNATS(nc, true, base, orDefault(opts.CloseTimeout, DefaultCloseTimeout))
	if err != nil {
		nc.Close()
		return nil, err
	}
	return t, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// redact hides credentials written into URLs ("nats://user:pass@host").
func redact(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		u, err := url.Parse(strings.TrimSpace(p))
		if err != nil || u.User == nil {
			continue
		}
		u.User = url.User("REDACTED")
		parts[i] = u.String()
	}
	return strings.Join(parts, ",")
}

// ctxDialer dials with Connect's context until detach, so that cancelling it
// interrupts the first connection, but not later reconnections.
type ctxDialer struct {
	net.Dialer
	mu  sync.Mutex
	ctx context.Context
}

func (d *ctxDialer) Dial(network, address string) (net.Conn, error) {
	d.mu.Lock()
	ctx := d.ctx
	d.mu.Unlock()
	return d.DialContext(ctx, network, address)
}

func (d *ctxDialer) detach() {
	d.mu.Lock()
	d.ctx = context.Background()
	d.mu.Unlock()
}

// Conn returns the underlying connection, for monitoring or for publishing
// other traffic on it.
func (t *NATS) Conn() *nats.Conn { return t.nc }

// Open implements [Transport]: it subscribes to g.Subject(id), publishes
// the endpoint's claim of the node and waits for the server to confirm both
// (bounded by ctx, or by the close timeout when ctx has no deadline), so
// that when Open returns, messages other processes publish to the node
// reach it. Then it waits briefly for another endpoint holding the node to
// answer the claim: twice the round trip of that confirmation, at least 5
// ms and at most 100 ms (or until ctx ends). If one does, Open closes the
// endpoint and fails with an error wrapping [ErrDuplicateID] (see the
// package documentation, "Claims").
func (t *NATS) Open(ctx context.Context, g Group, id gossip.NodeID) (Endpoint, error) {
	e, err := t.hub.add(ctx, g, id)
	if err != nil {
		return nil, err
	}
	sub, err := t.nc.Subscribe(e.subject, func(msg *nats.Msg) { e.deliver(msg.Data) })
	if err != nil {
		t.hub.remove(e)
		return nil, fmt.Errorf("transport: subscribe %s: %w", e.subject, natsErr(err))
	}
	if err := e.attach(func() error { return ignoreClosed(sub.Unsubscribe()) }); err != nil {
		_ = sub.Unsubscribe()
		return nil, err
	}
	// The server handles the subscription before the claim (one
	// connection keeps the order), so an answer to the claim finds it.
	start := time.Now()
	if err := e.claim(); err != nil {
		_ = e.Close()
		return nil, fmt.Errorf("transport: claim %s: %w", e.subject, err)
	}
	if err := t.flushThroughReconnect(ctx); err != nil {
		_ = e.Close()
		return nil, fmt.Errorf("transport: subscribe %s: %w", e.subject, err)
	}
	if err := e.awaitClaim(ctx, t.hub.claimWaitFor(time.Since(start))); err != nil {
		_ = e.Close()
		return nil, err
	}
	return e, nil
}

// Stats implements [Transport].
func (t *NATS) Stats() Stats { return t.hub.total.snapshot() }

// Close implements [Transport]: it closes every endpoint (discarding the
// messages queued for peers without a session, counted in Stats.Unsent),
// waits (at most the close timeout) for the server to confirm everything
// sent so far, and closes the connection if the transport opened it. While
// the connection is down, Close does not wait, and messages buffered for
// the reconnection are lost (they stay counted in Stats.Sent).
func (t *NATS) Close() error {
	t.once.Do(func() {
		errs := []error{t.hub.closeAll()}
		// Disconnected, there is nothing to wait for: what is buffered for
		// the reconnection is lost, as gossip tolerates. A server that goes
		// away during the flush is the same case (not an error of Close).
		if t.nc.IsConnected() {
			err := t.flush(context.Background())
			if err != nil && !errors.Is(err, ErrClosed) && t.nc.IsConnected() {
				errs = append(errs, fmt.Errorf("transport: flush on close: %w", err))
			}
		}
		if t.owned {
			t.nc.Close()
		}
		t.closeErr = errors.Join(errs...)
	})
	return t.closeErr
}

// flushThroughReconnect flushes, and when the server went away meanwhile
// (nats.go fails a pending flush when the connection drops, with the
// error of a closed connection, although it is reconnecting) flushes again
// once the connection is back, until ctx ends (without a deadline, for the
// close timeout): a member joining while its server restarts joins once it
// is back. nats.go restores the
// subscription and sends what was published meanwhile on reconnecting.
func (t *NATS) flushThroughReconnect(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		// Without a deadline, as long as one flush may take.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.closeTimeout)
		defer cancel()
	}
	return retryFlush(ctx, t.flush, t.nc.IsClosed)
}

// retryFlush calls flush until it succeeds, the connection is closed for
// good or ctx ends, pausing reconnectPoll between attempts.
func retryFlush(ctx context.Context, flush func(context.Context) error, closed func() bool) error {
	for {
		err := flush(ctx)
		if err == nil || closed() || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (while the connection was down: %w)", ctx.Err(), err)
		case <-time.After(reconnectPoll):
		}
	}
}

// reconnectPoll is how often flushThroughReconnect looks whether the
// connection is back.
const reconnectPoll = 20 * time.Millisecond

func (t *NATS) flush(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.closeTimeout)
		defer cancel()
	}
	return natsErr(t.nc.FlushWithContext(ctx))
}

// publish sends raw whole when the server's max_payload allows, and in
// fragments otherwise. The limit is read at every send: a reconnection may
// reach a server with another one.
func (t *NATS) publish(from *endpoint, to gossip.NodeID, raw []byte) error {
	subject := from.base + to.String()
	frame := int(t.nc.MaxPayload())
	if frame <= 0 {
		frame = defaultFrame // not told yet
	}
	return from.sendFrames(raw, frame, func(b []byte) error {
		return natsErr(t.nc.Publish(subject, b))
	})
}

// natsErr adds ErrClosed to nats.go's closed-connection error.
func natsErr(err error) error {
	if errors.Is(err, nats.ErrConnectionClosed) {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return err
}

// ignoreClosed treats unsubscribing on a closed connection as done.
func ignoreClosed(err error) error {
	if errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrBadSubscription) {
		return nil
	}
	return err
}
