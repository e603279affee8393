package transport

import (
	"bytes"
	"context"
	"crypto/hmac"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
)

// Channel is a broadcast channel of a group: what one member publishes
// reaches every channel of the same group and name that is open, its own
// included, best effort and in the order it was published.
//
// Every channel publishes under a random sender session with a sequence
// number that grows by one a message, and a receiving channel drops a
// message whose number is not above the last it took from that session (a
// replay, counted in Replayed). With a group key every message carries a
// MAC bound to the channel's subject and covering the session and the
// number, and messages that fail it are dropped, so a recorded message
// cannot be replayed to a channel that heard it, nor altered. Two replays
// remain possible, and what travels on a channel must tolerate them (the
// membership protocol of package member/view does): a recording played to
// a channel opened after it was made, once per message, and to a channel
// that has forgotten the session (it remembers the last MaxChannelSenders
// sessions it heard from). Without a key anyone who can publish on the
// subject can forge anything. It is safe for concurrent use.
type Channel interface {
	// Publish sends b to every open channel of the group and name. It does
	// not keep b. It fails with ErrClosed after Close, and with an error
	// wrapping ErrMalformed when b exceeds MaxChannelMessage.
	Publish(ctx context.Context, b []byte) error
	// Messages returns the channel the messages arrive on (buffered:
	// when it is full, arrivals are dropped and counted in Dropped). Close
	// closes it.
	Messages() <-chan []byte
	// Dropped counts arrivals dropped: the buffer was full, the message
	// was malformed, (with a group key) the MAC was missing or wrong, or
	// it was a replay (which Replayed counts too).
	Dropped() uint64
	// Replayed counts arrivals dropped because their sender session's
	// sequence number was not above the last one taken.
	Replayed() uint64
	// Close stops the channel. It is safe to call more than once.
	Close() error
}

// MaxChannelMessage bounds a message on a Channel: it travels in one NATS
// message, whatever the server's max_payload allows beyond (1 MiB by
// default).
const MaxChannelMessage = 512 << 10

// channelBuffer is a channel's receive buffer, in messages.
const channelBuffer = 4096

// MaxChannelSenders bounds the sender sessions a channel remembers for
// anti-replay: past it, the one heard from longest ago is forgotten (a
// recording of its messages would be taken again). A group's members each
// open one session per channel, so a group of up to this many members
// (and the sessions of those that left, while room remains) is covered.
const MaxChannelSenders = 4096

// channelHeader is the size of a channel message's header: the sender
// session (8 bytes) and the sequence number (8 bytes, big-endian).
const channelHeader = 16

// ChannelSubject returns the subject of g's channel name:
// "<prefix>.<group>._<name>" (node subjects are numbers, so the two never
// meet).
func (g Group) ChannelSubject(name string) string { return g.subjectBase() + "_" + name }

type channel struct {
	hub     *hub
	subject string
	ch      chan []byte
	send    func([]byte) error
	stop    func() // unsubscribes (NATS) or unregisters (Memory)
	session uint64 // this channel's sender session

	dropped, replayed atomic.Uint64

	// sendMu orders publications: sequence numbers leave in order.
	sendMu sync.Mutex
	seq    uint64 // last sequence number published

	mu      sync.Mutex
	closed  bool
	senders map[uint64]*heard // by session
	clock   uint64            // counts arrivals taken, to age senders
}

// heard is what a channel remembers of one sender session.
type heard struct {
	seq  uint64 // the last sequence number taken
	when uint64 // the channel's clock then
}

// openChannel checks g and name and returns a channel not yet attached.
func (h *hub) openChannel(ctx context.Context, g Group, name string) (*channel, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("transport: open channel %s: %w", name, err)
	}
	if err := g.Validate(); err != nil {
		return nil, err
	}
	if err := checkToken(name); err != nil || bytes.ContainsRune([]byte(name), '.') {
		return nil, fmt.Errorf("transport: channel name %q: want one subject token", name)
	}
	c := &channel{hub: h, subject: g.ChannelSubject(name), ch: make(chan []byte, channelBuffer), stop: func() {},
		session: newIncarnation(), senders: map[uint64]*heard{}}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	if h.chs == nil {
		h.chs = map[*channel]struct{}{}
	}
	h.chs[c] = struct{}{}
	return c, nil
}

// seal returns b behind the header of sequence number seq, with its MAC
// appended (with a group key), bound to the channel's subject.
func (c *channel) seal(b []byte, seq uint64) []byte {
	out := make([]byte, 0, channelHeader+len(b)+MACSize)
	out = binary.BigEndian.AppendUint64(out, c.session)
	out = binary.BigEndian.AppendUint64(out, seq)
	out = append(out, b...)
	if c.hub.mac == nil {
		return out
	}
	return append(out, c.tag(out)...)
}

func (c *channel) tag(b []byte) []byte {
	st, t := c.hub.mac.mac(slices.Concat([]byte("gossipreduce channel\x00"+c.subject+"\x00"), b))
	t = slices.Clone(t)
	c.hub.mac.pool.Put(st)
	return t
}

// deliver takes in raw bytes that arrived on the channel's subject.
func (c *channel) deliver(raw []byte) {
	b := raw
	if c.hub.mac != nil {
		if len(raw) < MACSize {
			c.dropped.Add(1)
			return
		}
		body, got := raw[:len(raw)-MACSize], raw[len(raw)-MACSize:]
		if !hmac.Equal(c.tag(body), got) {
			c.dropped.Add(1)
			return
		}
		b = body
	}
	if len(b) < channelHeader {
		c.dropped.Add(1)
		return
	}
	session, seq := binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:])
	b = b[channelHeader:]
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	s := c.senders[session]
	if s != nil && seq <= s.seq {
		c.dropped.Add(1)
		c.replayed.Add(1)
		return
	}
	select {
	case c.ch <- bytes.Clone(b):
	default:
		// Not taken: a later copy of it is not a replay.
		c.dropped.Add(1)
		return
	}
	c.clock++
	if s == nil {
		if len(c.senders) >= MaxChannelSenders {
			c.forgetOldest()
		}
		s = &heard{}
		c.senders[session] = s
	}
	s.seq, s.when = seq, c.clock
}

// forgetOldest forgets the sender session heard from longest ago.
func (c *channel) forgetOldest() {
	oldest, at := uint64(0), uint64(math.MaxUint64)
	for session, s := range c.senders {
		if s.when < at {
			oldest, at = session, s.when
		}
	}
	delete(c.senders, oldest)
}

func (c *channel) Publish(ctx context.Context, b []byte) error {
	if len(b) > MaxChannelMessage {
		return fmt.Errorf("transport: %w: channel message of %d bytes, at most %d", ErrMalformed, len(b), MaxChannelMessage)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return ErrClosed
	}
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	c.seq++
	return c.send(c.seal(b, c.seq))
}

func (c *channel) Messages() <-chan []byte { return c.ch }

func (c *channel) Dropped() uint64 { return c.dropped.Load() }

func (c *channel) Replayed() uint64 { return c.replayed.Load() }

func (c *channel) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.ch)
	c.mu.Unlock()
	c.stop()
	c.hub.mu.Lock()
	delete(c.hub.chs, c)
	c.hub.mu.Unlock()
	return nil
}

// Channel implements [Transport].
func (t *NATS) Channel(ctx context.Context, g Group, name string) (Channel, error) {
	c, err := t.hub.openChannel(ctx, g, name)
	if err != nil {
		return nil, err
	}
	sub, err := t.nc.Subscribe(c.subject, func(msg *nats.Msg) { c.deliver(msg.Data) })
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("transport: subscribe %s: %w", c.subject, natsErr(err))
	}
	c.stop = func() { _ = sub.Unsubscribe() }
	c.send = func(b []byte) error { return natsErr(t.nc.Publish(c.subject, b)) }
	if err := t.flushThroughReconnect(ctx); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("transport: subscribe %s: %w", c.subject, err)
	}
	return c, nil
}

// Channel implements [Transport]: a message reaches every channel of the
// subject at once, unless the network is down ([Memory.Outage]).
func (t *Memory) Channel(ctx context.Context, g Group, name string) (Channel, error) {
	c, err := t.hub.openChannel(ctx, g, name)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	if t.chans == nil {
		t.chans = map[string][]*channel{}
	}
	t.chans[c.subject] = append(t.chans[c.subject], c)
	t.mu.Unlock()
	c.stop = func() {
		t.mu.Lock()
		t.chans[c.subject] = slices.DeleteFunc(t.chans[c.subject], func(x *channel) bool { return x == c })
		t.mu.Unlock()
	}
	c.send = func(b []byte) error {
		t.mu.Lock()
		down := t.outage
		to := slices.Clone(t.chans[c.subject])
		t.mu.Unlock()
		if down {
			return nil
		}
		if t.tap != nil {
			t.tap(c.subject, bytes.Clone(b))
		}
		for _, x := range to {
			x.deliver(b)
		}
		return nil
	}
	return c, nil
}
