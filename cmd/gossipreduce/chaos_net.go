package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/gossipreduce/gossipreduce/transport/natsserver"
)

// chaosNet is the network one live chaos case runs on: NATS (an embedded
// server, or external servers) or memory. Every transport opened on it
// reaches every other, as NATS clients of one server do, and raw bytes can
// be recorded from it and published into it as by another process.
type chaosNet interface {
	// open returns a new transport on the network whose endpoints use
	// base (loss, seed, group key). The network closes it.
	open(ctx context.Context, base transport.Options) (transport.Transport, error)
	// record starts recording every raw message published to a node of
	// g; stop ends the recording and returns it in arrival order.
	record(ctx context.Context, g transport.Group) (stop func() []rawMessage, err error)
	// inject publishes raw bytes on subject as another process would, and
	// reports whether they went out (memory: whether an open endpoint
	// received them).
	inject(subject string, raw []byte) bool
	// restart shuts the NATS server down, waits down, and starts it again
	// on the same port; it fails for networks that cannot.
	restart(ctx context.Context, down time.Duration) error
	// close closes every transport opened on the network, and the
	// network.
	close()
}

// rawMessage is one message as it travelled: its subject and its bytes.
type rawMessage struct {
	subject string
	raw     []byte
}

// natsChaosNet is a chaosNet over NATS: an embedded server on a loopback
// port of its own (restartable), or the external servers of --nats.
type natsChaosNet struct {
	opts transport.NATSOptions // credentials and TLS from the flags
	urls []string
	port int // the embedded server's, kept across restarts

	mu  sync.Mutex
	srv *natsserver.Server // the embedded server, nil for external ones
	raw *transport.NATS    // a plain connection for record and inject, once needed
	trs []transport.Transport
}

// newNATSChaosNet starts an embedded server, or, with urls, uses those
// servers; opts carries the flags' credentials and TLS.
func newNATSChaosNet(ctx context.Context, opts transport.NATSOptions, urls []string) (*natsChaosNet, error) {
	n := &natsChaosNet{opts: opts, urls: urls}
	if len(urls) == 0 {
		srv, err := natsserver.StartEmbedded(ctx, natsserver.EmbeddedOptions{})
		if err != nil {
			return nil, err
		}
		u, err := url.Parse(srv.ClientURL())
		if err == nil {
			n.port, err = strconv.Atoi(u.Port())
		}
		if err != nil {
			srv.Shutdown()
			return nil, fmt.Errorf("chaos: embedded server URL %q: %w", srv.ClientURL(), err)
		}
		n.srv, n.urls = srv, []string{srv.ClientURL()}
	}
	return n, nil
}

// quiet gives base a logger that discards: the chaos verb runs groups
// without a group key on purpose, and Connect would warn about each.
func quiet(base transport.Options) transport.Options {
	if base.Logger == nil {
		base.Logger = slog.New(slog.DiscardHandler)
	}
	return base
}

func (n *natsChaosNet) open(ctx context.Context, base transport.Options) (transport.Transport, error) {
	o := n.opts
	o.Options = quiet(base)
	tr, err := connectRetry(ctx, n.urls, o)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.trs = append(n.trs, tr)
	n.mu.Unlock()
	return tr, nil
}

// connectRetry connects, trying again every 100 ms until ctx ends (for up
// to 10 s when it has no deadline): a restart scenario may have the server
// down (or still starting) when a case connects, and a node may be
// started before its server.
func connectRetry(ctx context.Context, urls []string, o transport.NATSOptions) (*transport.NATS, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(10 * time.Second)
	}
	var last error // the last error that says why, not just that time ran out
	for {
		tr, err := transport.Connect(ctx, urls, o)
		switch {
		case err == nil:
			return tr, nil
		case errors.Is(err, transport.ErrAuth) || errors.Is(err, transport.ErrTLS):
			// Refused credentials or certificates stay refused: trying again
			// until the deadline only hid the reason behind "context
			// deadline exceeded" when the last try was cut short.
			return nil, err
		case last == nil || !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled):
			last = err
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return nil, last
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return nil, last
		}
	}
}

// conn returns the plain connection, connecting it the first time.
func (n *natsChaosNet) conn(ctx context.Context) (*nats.Conn, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.raw == nil {
		o := n.opts
		o.Options = quiet(transport.Options{})
		tr, err := connectRetry(ctx, n.urls, o)
		if err != nil {
			return nil, err
		}
		n.raw = tr
	}
	return n.raw.Conn(), nil
}

func (n *natsChaosNet) record(ctx context.Context, g transport.Group) (func() []rawMessage, error) {
	nc, err := n.conn(ctx)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var got []rawMessage
	sub, err := nc.Subscribe(g.Wildcard(), func(m *nats.Msg) {
		mu.Lock()
		got = append(got, rawMessage{m.Subject, m.Data})
		mu.Unlock()
	})
	if err != nil {
		return nil, fmt.Errorf("chaos: record %s: %w", g.Wildcard(), err)
	}
	// Recording starts when the server has the subscription.
	if err := nc.FlushTimeout(5 * time.Second); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("chaos: record %s: %w", g.Wildcard(), err)
	}
	return func() []rawMessage {
		// What the server routed to us before it answers the flush has
		// arrived (or will not: a recording need not be complete).
		_ = nc.FlushTimeout(time.Second)
		_ = sub.Unsubscribe()
		mu.Lock()
		defer mu.Unlock()
		return got
	}, nil
}

func (n *natsChaosNet) inject(subject string, raw []byte) bool {
	n.mu.Lock()
	tr := n.raw
	n.mu.Unlock()
	return tr != nil && tr.Conn().Publish(subject, raw) == nil
}

// restart shuts the embedded server down, waits down, and starts a new
// server on the same port: the clients' connections, which reconnect
// without limit every transport.DefaultReconnectWait, come back to it and
// restore their subscriptions. A server that cannot listen on the port
// again (another process took it meanwhile) is an error.
func (n *natsChaosNet) restart(ctx context.Context, down time.Duration) error {
	n.mu.Lock()
	srv := n.srv
	n.mu.Unlock()
	if srv == nil {
		return errors.New("chaos: restart needs the embedded server")
	}
	srv.Shutdown()
	select {
	case <-time.After(down):
	case <-ctx.Done():
	}
	// Start it even if ctx ended: close shuts it down.
	s, err := natsserver.StartEmbedded(context.WithoutCancel(ctx), natsserver.EmbeddedOptions{Port: n.port})
	if err != nil {
		return fmt.Errorf("chaos: restart the embedded server on port %d: %w", n.port, err)
	}
	n.mu.Lock()
	n.srv = s
	n.mu.Unlock()
	return nil
}

func (n *natsChaosNet) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, tr := range n.trs {
		tr.Close()
	}
	if n.raw != nil {
		n.raw.Close()
	}
	if n.srv != nil {
		n.srv.Shutdown()
	}
}

// memChaosNet is a chaosNet of Memory transports bridged like the clients
// of one NATS server: a message published on one is delivered by it at
// once and, through its Tap, handed to a goroutine that injects it into
// every other (subscribers of another process see it too), and to the
// recordings whose group it belongs to.
type memChaosNet struct {
	mu   sync.Mutex
	mems []*transport.Memory
	recs []*memRecording

	fwd  chan memForward
	quit chan struct{}
	done chan struct{}
}

// memForward is a message on its way from one Memory to the others.
type memForward struct {
	from *transport.Memory
	rawMessage
}

// memRecording is one recording of a memChaosNet.
type memRecording struct {
	base string // subject prefix of the group's nodes
	got  []rawMessage
}

// memForwardQueue bounds the messages waiting to cross between Memory
// transports; more are dropped, as a slow NATS client's would be.
const memForwardQueue = 1 << 14

func newMemChaosNet() *memChaosNet {
	m := &memChaosNet{fwd: make(chan memForward, memForwardQueue), quit: make(chan struct{}), done: make(chan struct{})}
	go m.forward()
	return m
}

func (m *memChaosNet) open(_ context.Context, base transport.Options) (transport.Transport, error) {
	var tr *transport.Memory
	tap := func(subject string, raw []byte) { m.tapped(tr, subject, raw) }
	tr, err := transport.NewMemory(transport.MemoryOptions{Options: base, Tap: tap})
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.mems = append(m.mems, tr)
	m.mu.Unlock()
	return tr, nil
}

// tapped sees every message a Memory of the network publishes (raw is
// its own copy): it records it and queues it for the other transports,
// never blocking.
func (m *memChaosNet) tapped(from *transport.Memory, subject string, raw []byte) {
	m.mu.Lock()
	for _, r := range m.recs {
		if strings.HasPrefix(subject, r.base) {
			r.got = append(r.got, rawMessage{subject, raw})
		}
	}
	others := len(m.mems) > 1
	m.mu.Unlock()
	if others {
		select {
		case m.fwd <- memForward{from, rawMessage{subject, raw}}:
		default:
		}
	}
}

// forward delivers the queued messages to the transports they did not
// come from, until close.
func (m *memChaosNet) forward() {
	defer close(m.done)
	for {
		select {
		case <-m.quit:
			return
		case f := <-m.fwd:
			m.mu.Lock()
			mems := m.mems
			m.mu.Unlock()
			for _, tr := range mems {
				if tr != f.from {
					tr.Inject(f.subject, f.raw)
				}
			}
		}
	}
}

func (m *memChaosNet) record(_ context.Context, g transport.Group) (func() []rawMessage, error) {
	r := &memRecording{base: strings.TrimSuffix(g.Wildcard(), "*")}
	m.mu.Lock()
	m.recs = append(m.recs, r)
	m.mu.Unlock()
	return func() []rawMessage {
		m.mu.Lock()
		defer m.mu.Unlock()
		for i, x := range m.recs {
			if x == r {
				m.recs = append(m.recs[:i], m.recs[i+1:]...)
				break
			}
		}
		return r.got
	}, nil
}

func (m *memChaosNet) inject(subject string, raw []byte) bool {
	m.mu.Lock()
	mems := m.mems
	m.mu.Unlock()
	ok := false
	for _, tr := range mems {
		if tr.Inject(subject, raw) {
			ok = true
		}
	}
	return ok
}

func (m *memChaosNet) restart(context.Context, time.Duration) error {
	return errors.New("chaos: the memory network has no server to restart")
}

func (m *memChaosNet) close() {
	close(m.quit)
	<-m.done
	m.mu.Lock()
	mems := m.mems
	m.mu.Unlock()
	for _, tr := range mems {
		tr.Close()
	}
}
