package transport

import (
	"bytes"
	"context"
	"crypto/hmac"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
)

// Channel is a broadcast channel of a group: what one member publishes
// reaches every channel of the same group and name that is open, its own
// included, best effort and without sessions (no anti-replay: what travels
// on it must tolerate replays; the membership protocol of package
// member/view does). With a group key every message carries a MAC bound to
// the channel's subject, and messages that fail it are dropped. It is safe
// for concurrent use.
type Channel interface {
	// Publish sends b to every open channel of the group and name. It does
	// not keep b. It fails with ErrClosed after Close, and with an error
	// wrapping ErrMalformed when b exceeds MaxChannelMessage.
	Publish(ctx context.Context, b []byte) error
	// Messages returns the channel the messages arrive on (buffered:
	// when it is full, arrivals are dropped and counted in Dropped). Close
	// closes it.
	Messages() <-chan []byte
	// Dropped counts arrivals dropped: the buffer was full, or (with a
	// group key) the MAC was missing or wrong.
	Dropped() uint64
	// Close stops the channel. It is safe to call more than once.
	Close() error
}

// MaxChannelMessage bounds a message on a Channel: it travels in one NATS
// message, whatever the server's max_payload allows beyond (1 MiB by
// default).
const MaxChannelMessage = 512 << 10

// channelBuffer is a channel's receive buffer, in messages.
const channelBuffer = 4096

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
	dropped atomic.Uint64

	mu     sync.Mutex
	closed bool
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
	c := &channel{hub: h, subject: g.ChannelSubject(name), ch: make(chan []byte, channelBuffer), stop: func() {}}
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

// seal returns b with its MAC appended (with a group key), bound to the
// channel's subject.
func (c *channel) seal(b []byte) []byte {
	out := slices.Clip(slices.Clone(b))
	if c.hub.mac == nil {
		return out
	}
	return append(out, c.tag(b)...)
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
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	select {
	case c.ch <- bytes.Clone(b):
	default:
		c.dropped.Add(1)
	}
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
	return c.send(c.seal(b))
}

func (c *channel) Messages() <-chan []byte { return c.ch }

func (c *channel) Dropped() uint64 { return c.dropped.Load() }

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
