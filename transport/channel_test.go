package transport_test

import (
	"bytes"
	"testing"
	"time"

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

// channelConformance checks a transport's channels: every open channel of
// the subject gets every message, its sender's included; other groups and
// names get nothing; a member with another key drops what it cannot verify;
// oversize messages are refused; Close closes.
func channelConformance(t *testing.T, tr, other, otherKey transport.Transport) {
	ctx := testCtx(t)
	g := transport.Group{Name: "chan"}
	a, err := tr.Channel(ctx, g, "views")
	require.NoError(t, err)
	b, err := other.Channel(ctx, g, "views")
	require.NoError(t, err)
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

func TestNATSChannel(t *testing.T) {
	srv := testnats.StartServer(t, natsserver.EmbeddedOptions{})
	urls := []string{srv.ClientURL()}
	opts := transport.NATSOptions{Options: transport.Options{Key: key1}, SkipNoKeyWarning: true}
	tr := connect(t, urls, opts)
	other := connect(t, urls, opts)
	opts.Key = key2
	stranger := connect(t, urls, opts)
	channelConformance(t, tr, other, stranger)
}
