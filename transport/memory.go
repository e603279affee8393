package transport

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// MemoryOptions configure a [Memory] transport.
type MemoryOptions struct {
	Options

	// Delay, if set, returns how long a message from node from to node to
	// takes to arrive; zero or negative delivers it during Send. Delayed
	// messages may overtake each other. Delay is called from Send, possibly
	// from many goroutines at once.
	Delay func(from, to gossip.NodeID) time.Duration

	// Tap, if set, sees every message an endpoint hands to the network
	// (application and handshake messages, not those of crashed nodes),
	// as it is sent and before any delay: the subject it is published on
	// and a copy of its bytes, which Tap may keep. Tests record traffic
	// with it, to replay it with [Memory.Inject]. Tap is called from Send
	// and from the goroutines that deliver messages, possibly many at
	// once; it must not block.
	Tap func(subject string, raw []byte)

	// MaxFrame, if positive, is the longest message the network carries
	// in one piece, as a NATS server's max_payload is: longer messages
	// travel in fragments (see "Fragments" in the package documentation),
	// each delayed, tapped, lost to a crash and delivered on its own. It
	// must be at least 256.
	MaxFrame int
}

// Memory is an in-process [Transport] for tests and single-process
// experiments. It has the semantics of the NATS transport (messages travel
// in the wire format, so payload bits survive exactly and malformed or
// foreign bytes are dropped and counted the same way; loss is injected at
// Send; full receive buffers drop), plus per-link delays and crashed nodes.
// It is safe for concurrent use.
type Memory struct {
	hub   *hub
	delay func(from, to gossip.NodeID) time.Duration
	tap   func(subject string, raw []byte)
	frame int // MaxFrame, or 0

	mu      sync.Mutex
	crashed map[string]bool          // subjects of crashed nodes
	outage  bool                     // the whole network is down (Outage)
	pending map[*time.Timer]struct{} // delayed deliveries not yet made
	chans   map[string][]*channel    // open channels by subject
	closed  bool
}

var _ Transport = (*Memory)(nil)

// NewMemory returns an empty in-memory transport. It fails, wrapping
// [gossip.ErrInvalidConfig], for invalid options.
func NewMemory(opts MemoryOptions) (*Memory, error) {
	if opts.MaxFrame < 0 || (opts.MaxFrame > 0 && opts.MaxFrame < minFrame) {
		return nil, fmt.Errorf("transport: %w: frame limit %d, want 0 (none) or at least %d", gossip.ErrInvalidConfig, opts.MaxFrame, minFrame)
	}
	t := &Memory{delay: opts.Delay, tap: opts.Tap, frame: opts.MaxFrame, crashed: map[string]bool{}, pending: map[*time.Timer]struct{}{}}
	h, err := newHub(opts.Options, t.publish)
	if err != nil {
		return nil, err
	}
	h.online = t.online
	t.hub = h
	return t, nil
}

// Open implements [Transport]. Memory sees every endpoint of its network, so
// it sends no claim: opening a node that is open already fails with an
// error wrapping [ErrDuplicateID] (and gossip.ErrInvalidConfig), and marks
// the holder (see the package documentation, "Claims").
func (t *Memory) Open(ctx context.Context, g Group, id gossip.NodeID) (Endpoint, error) {
	e, err := t.hub.add(ctx, g, id)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Stats implements [Transport].
func (t *Memory) Stats() Stats { return t.hub.total.snapshot() }

// Close implements [Transport]. Messages still delayed
// ([MemoryOptions.Delay]) are discarded, as messages in flight on a network
// that goes away: they stay counted in Stats.Sent. Messages queued for
// peers without a session are discarded and counted in Stats.Unsent.
func (t *Memory) Close() error {
	t.mu.Lock()
	t.closed = true
	for tm := range t.pending {
		tm.Stop()
	}
	clear(t.pending)
	t.mu.Unlock()
	return t.hub.closeAll()
}

// Crash makes node id of g fail silently: from now on the messages it sends
// and the messages addressed to it vanish (application messages are counted
// in Stats.Crashed, handshake messages are not), as if its process had
// died, while its endpoint stays open (so it keeps its incarnation, unlike
// a node that is closed and opened again). The node need not be open.
func (t *Memory) Crash(g Group, id gossip.NodeID) { t.setCrashed(g.Subject(id), true) }

// Restore undoes [Memory.Crash]: the node sends and receives again.
func (t *Memory) Restore(g Group, id gossip.NodeID) { t.setCrashed(g.Subject(id), false) }

// Outage takes the whole network down (down true) or brings it back, as a
// NATS server that stops and restarts does for its clients: while it is
// down, every message sent vanishes (application messages are counted in
// Stats.Lost, handshake messages are not) and every endpoint's Online
// reports false. Messages already delayed still arrive.
func (t *Memory) Outage(down bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.outage = down
}

func (t *Memory) online() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.outage
}

func (t *Memory) setCrashed(subject string, crashed bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if crashed {
		t.crashed[subject] = true
	} else {
		delete(t.crashed, subject)
	}
}

func (t *Memory) isCrashed(subject string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.crashed[subject]
}

// Inject delivers raw bytes to whichever endpoint receives on subject, as if
// some other process had published them, and reports whether one does. Tests
// use it to check that malformed, foreign, forged and replayed messages are
// dropped and counted: the bytes go through every check an arriving message
// does, the session layer's included, so a message is delivered only if it
// is bound to the endpoint's current incarnation with a fresh sequence
// number (bytes recorded with [MemoryOptions.Tap] and injected again are
// replays).
//
// On a channel's subject ([Group.ChannelSubject]) it delivers to every
// channel open there, through the same checks (MAC, anti-replay).
func (t *Memory) Inject(subject string, raw []byte) bool {
	t.mu.Lock()
	chans := slices.Clone(t.chans[subject])
	t.mu.Unlock()
	for _, c := range chans {
		c.deliver(raw)
	}
	if len(chans) > 0 {
		return true
	}
	return t.arrive(subject, raw)
}

func (t *Memory) publish(from *endpoint, to gossip.NodeID, raw []byte) error {
	t.mu.Lock()
	crashed, down := t.crashed[from.subject], t.outage
	t.mu.Unlock()
	switch {
	case crashed:
		countCrashed(from, raw)
		return nil
	case down:
		if !isTransportOnly(raw) {
			from.count(cLost)
		}
		return nil
	}
	subject := from.base + to.String()
	if t.frame == 0 {
		return t.transmit(from, to, subject, raw)
	}
	return from.sendFrames(raw, t.frame, func(b []byte) error { return t.transmit(from, to, subject, b) })
}

// transmit taps one frame and delivers it, at once or after its delay.
func (t *Memory) transmit(from *endpoint, to gossip.NodeID, subject string, raw []byte) error {
	if t.tap != nil {
		t.tap(subject, bytes.Clone(raw))
	}
	var d time.Duration
	if t.delay != nil {
		d = t.delay(from.id, to)
	}
	if d <= 0 {
		t.arrive(subject, raw)
		return nil
	}
	raw = bytes.Clone(raw) // raw is the sender's buffer; the timer outlives Send
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	var tm *time.Timer
	tm = time.AfterFunc(d, func() {
		// Close may have stopped the timer too late; whoever removes tm from
		// pending owns the delivery.
		t.mu.Lock()
		_, ok := t.pending[tm]
		delete(t.pending, tm)
		t.mu.Unlock()
		if ok {
			t.arrive(subject, raw)
		}
	})
	t.pending[tm] = struct{}{}
	return nil
}

// arrive hands raw to the endpoint receiving on subject, if any, unless that
// node is crashed.
func (t *Memory) arrive(subject string, raw []byte) bool {
	e := t.hub.lookup(subject)
	if e == nil {
		return false
	}
	if t.isCrashed(subject) {
		countCrashed(e, raw)
		return true
	}
	e.deliver(raw)
	return true
}

// countCrashed counts raw, which vanished at a crashed node, in e's
// Stats.Crashed unless it is a handshake message.
func countCrashed(e *endpoint, raw []byte) {
	if !isTransportOnly(raw) && (!isFragment(raw) || firstFragment(raw)) {
		e.count(cCrashed)
	}
}
