package transport_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/gossipreduce/gossipreduce/transport/internal/testnats"
	"github.com/gossipreduce/gossipreduce/transport/natsserver"
)

func recvChannel(t *testing.T, c transport.Channel) []byte {
	t.Helper()
	select {
	case b, ok := <-c.Messages():
		require.True(t, ok, "channel closed")
		return b
	case <-time.After(testnats.Patience):
		t.Fatal("no message on the channel")
		return nil
	}
}

// openViews opens channel "views" of group "chan" on two transports.
func openViews(t *testing.T, tr, other transport.Transport) (a, b transport.Channel) {
	t.Helper()
	g := transport.Group{Name: "chan"}
	a, err := tr.Channel(testCtx(t), g, "views")
	require.NoError(t, err)
	b, err = other.Channel(testCtx(t), g, "views")
	require.NoError(t, err)
	return a, b
}

// channelConformance checks a transport's channels: every open channel of
// the subject gets every message, its sender's included; other groups and
// names get nothing; a member with another key drops what it cannot verify;
// oversize messages are refused; Close closes.
func channelConformance(t *testing.T, tr, other, otherKey transport.Transport) {
	ctx := testCtx(t)
	g := transport.Group{Name: "chan"}
	a, b := openViews(t, tr, other)
	elsewhere, err := other.Channel(ctx, transport.Group{Name: "chan2"}, "views")
	require.NoError(t, err)
	stranger, err := otherKey.Channel(ctx, g, "views")
	require.NoError(t, err)

	msg := []byte("hello, group")
	require.NoError(t, a.Publish(ctx, msg))
	msg[0] = 'J' // Publish keeps no reference
	assert.Equal(t, []byte("hello, group"), recvChannel(t, a))
	assert.Equal(t, []byte("hello, group"), recvChannel(t, b))

	require.NoError(t, b.Publish(ctx, []byte("second")))
	assert.Equal(t, []byte("second"), recvChannel(t, a))
	assert.Equal(t, []byte("second"), recvChannel(t, b))
	select {
	case m := <-elsewhere.Messages():
		t.Fatalf("another group's channel got %q", m)
	default:
	}
	eventually(t, func() bool { return stranger.Dropped() >= 2 }, "a channel under another key drops both messages (dropped %d)", stranger.Dropped())
	select {
	case m := <-stranger.Messages():
		t.Fatalf("a channel under another key got %q", m)
	default:
	}

	err = a.Publish(ctx, bytes.Repeat([]byte{1}, transport.MaxChannelMessage+1))
	assert.ErrorIs(t, err, transport.ErrMalformed)
	require.NoError(t, a.Close())
	require.NoError(t, a.Close())
	assert.ErrorIs(t, a.Publish(ctx, msg), transport.ErrClosed)
	_, ok := <-a.Messages()
	assert.False(t, ok)

	_, err = tr.Channel(ctx, g, "two.tokens")
	assert.Error(t, err)
}

var key1, key2 = bytes.Repeat([]byte("k"), transport.MinKeyLen), bytes.Repeat([]byte("q"), transport.MinKeyLen)

func TestMemoryChannel(t *testing.T) {
	// A memory transport is one network with one key, so the other key's
	// member is checked over NATS only.
	tr := newMemory(t, transport.MemoryOptions{Options: transport.Options{Key: key1}})
	plain := newMemory(t, transport.MemoryOptions{})
	ctx := testCtx(t)
	g := transport.Group{Name: "chan"}
	a, err := tr.Channel(ctx, g, "views")
	require.NoError(t, err)
	b, err := tr.Channel(ctx, g, "views")
	require.NoError(t, err)
	require.NoError(t, a.Publish(ctx, []byte("x")))
	assert.Equal(t, []byte("x"), recvChannel(t, b))
	assert.Equal(t, []byte("x"), recvChannel(t, a))
	p, err := plain.Channel(ctx, g, "views")
	require.NoError(t, err)
	require.NoError(t, p.Publish(ctx, []byte("y")))
	assert.Equal(t, []byte("y"), recvChannel(t, p))
	require.NoError(t, tr.Close())
	_, ok := <-a.Messages()
	assert.False(t, ok, "closing the transport closes its channels")
	_, err = tr.Channel(ctx, g, "views")
	assert.ErrorIs(t, err, transport.ErrClosed)
}

// keyedPair starts a server and connects two transports to it under key1.
func keyedPair(t *testing.T) (srv *natsserver.Server, tr, other *transport.NATS) {
	srv = testnats.StartServer(t, natsserver.EmbeddedOptions{})
	opts := transport.NATSOptions{Options: transport.Options{Key: key1}, SkipNoKeyWarning: true}
	return srv, connect(t, []string{srv.ClientURL()}, opts), connect(t, []string{srv.ClientURL()}, opts)
}

func TestNATSChannel(t *testing.T) {
	srv, tr, other := keyedPair(t)
	stranger := connect(t, []string{srv.ClientURL()}, transport.NATSOptions{Options: transport.Options{Key: key2}, SkipNoKeyWarning: true})
	channelConformance(t, tr, other, stranger)
}

// recorder keeps what a memory transport's tap sees on one subject.
type recorder struct {
	mu      sync.Mutex
	subject string
	msgs    [][]byte
}

func (r *recorder) tap(subject string, raw []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if subject == r.subject {
		r.msgs = append(r.msgs, raw)
	}
}

func (r *recorder) recorded() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.msgs)
}

// noMessage fails if c holds a message.
func noMessage(t *testing.T, c transport.Channel) {
	t.Helper()
	select {
	case m := <-c.Messages():
		t.Fatalf("unexpected message %q", m)
	default:
	}
}

func TestMemoryChannelReplay(t *testing.T) {
	for _, key := range [][]byte{nil, key1} {
		t.Run(fmt.Sprintf("key=%t", key != nil), func(t *testing.T) {
			g := transport.Group{Name: "chan"}
			rec := &recorder{subject: g.ChannelSubject("views")}
			tr := newMemory(t, transport.MemoryOptions{Options: transport.Options{Key: key}, Tap: rec.tap})
			ctx := testCtx(t)
			a, err := tr.Channel(ctx, g, "views")
			require.NoError(t, err)
			b, err := tr.Channel(ctx, g, "views")
			require.NoError(t, err)
			for _, m := range []string{"one", "two", "three"} {
				require.NoError(t, a.Publish(ctx, []byte(m)))
				assert.Equal(t, []byte(m), recvChannel(t, b))
				assert.Equal(t, []byte(m), recvChannel(t, a))
			}
			raw := rec.recorded()
			require.Len(t, raw, 3)

			// Played back to channels that heard it: dropped, counted.
			for _, r := range raw {
				assert.True(t, tr.Inject(rec.subject, r))
			}
			noMessage(t, b)
			noMessage(t, a)
			assert.Equal(t, uint64(3), b.Replayed())
			assert.Equal(t, uint64(3), b.Dropped())

			// A channel opened after the recording takes it once, in order;
			// an older message after a newer one is a replay.
			c, err := tr.Channel(ctx, g, "views")
			require.NoError(t, err)
			tr.Inject(rec.subject, raw[1])
			assert.Equal(t, []byte("two"), recvChannel(t, c))
			tr.Inject(rec.subject, raw[0])
			tr.Inject(rec.subject, raw[1])
			noMessage(t, c)
			assert.Equal(t, uint64(2), c.Replayed())
			tr.Inject(rec.subject, raw[2])
			assert.Equal(t, []byte("three"), recvChannel(t, c))

			// Too short for a header: malformed, dropped, not a replay.
			before := c.Dropped()
			tr.Inject(rec.subject, []byte("short"))
			noMessage(t, c)
			assert.Equal(t, before+1, c.Dropped())
			assert.Equal(t, uint64(2), c.Replayed())

			if key != nil {
				// A recording with its sequence number raised fails the MAC.
				forged := slices.Clone(raw[2])
				forged[15]++
				tr.Inject(rec.subject, forged)
				noMessage(t, c)
				assert.Equal(t, before+2, c.Dropped())
			}
		})
	}
}

// TestChannelForgetsOldestSender checks the bound on remembered sender
// sessions: past MaxChannelSenders the one heard from longest ago is
// forgotten, and its recording is taken again.
func TestChannelForgetsOldestSender(t *testing.T) {
	g := transport.Group{Name: "chan"}
	tr := newMemory(t, transport.MemoryOptions{})
	c, err := tr.Channel(testCtx(t), g, "views")
	require.NoError(t, err)
	subject := g.ChannelSubject("views")
	msg := func(session uint64) []byte {
		b := binary.BigEndian.AppendUint64(nil, session)
		return append(binary.BigEndian.AppendUint64(b, 1), "x"...)
	}
	for s := range uint64(transport.MaxChannelSenders) {
		tr.Inject(subject, msg(s+1))
		recvChannel(t, c)
	}
	tr.Inject(subject, msg(1))
	noMessage(t, c)
	require.Equal(t, uint64(1), c.Replayed(), "all sessions remembered")
	tr.Inject(subject, msg(transport.MaxChannelSenders+1)) // forgets session 1
	recvChannel(t, c)
	tr.Inject(subject, msg(1))
	recvChannel(t, c)
	tr.Inject(subject, msg(3)) // session 2 went when 1 came back; 3 is kept
	noMessage(t, c)
	assert.Equal(t, uint64(2), c.Replayed())
}

func TestNATSChannelReplay(t *testing.T) {
	srv, tr, other := keyedPair(t)
	ctx := testCtx(t)
	g := transport.Group{Name: "chan"}
	a, b := openViews(t, tr, other)

	nc, err := nats.Connect(srv.ClientURL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	sub, err := nc.SubscribeSync(g.ChannelSubject("views"))
	require.NoError(t, err)
	require.NoError(t, nc.Flush())

	require.NoError(t, a.Publish(ctx, []byte("beat")))
	assert.Equal(t, []byte("beat"), recvChannel(t, b))
	rec, err := sub.NextMsg(testnats.Patience)
	require.NoError(t, err)
	for range 3 {
		require.NoError(t, nc.Publish(rec.Subject, rec.Data))
	}
	require.NoError(t, nc.Flush())
	eventually(t, func() bool { return b.Replayed() == 3 }, "the replays are dropped (replayed %d)", b.Replayed())
	noMessage(t, b)
}
