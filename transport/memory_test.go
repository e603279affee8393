package transport_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
)

func newMemory(t *testing.T, opts transport.MemoryOptions) *transport.Memory {
	t.Helper()
	tr, err := transport.NewMemory(opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tr.Close()) })
	return tr
}

func TestMemoryCrash(t *testing.T) {
	tr := newMemory(t, transport.MemoryOptions{})
	g := transport.Group{Name: "crash"}
	eps := openNodes(t, tr, g, 3)
	ctx := testCtx(t)
	send := func(from, to gossip.NodeID, tag uint64) {
		require.NoError(t, eps[from].Send(ctx, gossip.Message{From: from, To: to, Kind: gossip.KindPush, Tag: tag}))
	}
	// Sessions first (a node knows its peers' incarnations once they have
	// exchanged a message): node 1 sends 2 messages and receives 2, and
	// probes once (node 2) and answers once (node 0).
	pingPong(t, eps[0], eps[1], 100)
	pingPong(t, eps[0], eps[2], 102)
	pingPong(t, eps[1], eps[2], 104)

	tr.Crash(g, 1)
	send(0, 1, 1) // to the crashed node: vanishes there
	send(1, 2, 2) // from the crashed node: vanishes at once
	send(0, 2, 3) // between live nodes: arrives
	require.Equal(t, uint64(3), recv(t, eps[2]).Tag)
	requireEmpty(t, eps[1])
	requireEmpty(t, eps[2])
	// The crashed node's own message was sent, then vanished.
	assert.Equal(t, transport.Stats{Sent: 3, Received: 2, Crashed: 2, Probes: 1, Answers: 1, Sessions: 2}, eps[1].Stats())
	assert.Equal(t, transport.Stats{Sent: 9, Received: 7, Crashed: 2, Probes: 3, Answers: 3, Sessions: 6}, tr.Stats())

	tr.Restore(g, 1)
	send(0, 1, 4)
	send(1, 2, 5)
	assert.Equal(t, uint64(4), recv(t, eps[1]).Tag)
	assert.Equal(t, uint64(5), recv(t, eps[2]).Tag)

	// Crashing a node that is not open yet holds once it opens. Node 0
	// has no session with it: its probe vanishes (handshakes are not
	// counted in Crashed), and its message waits.
	tr.Crash(g, 3)
	ep3, err := tr.Open(ctx, g, 3)
	require.NoError(t, err)
	sent := eps[0].Stats().Sent
	send(0, 3, 6)
	requireEmpty(t, ep3)
	assert.Equal(t, transport.Stats{}, ep3.Stats())
	assert.Equal(t, sent, eps[0].Stats().Sent, "queued, not sent")
	// Restored, node 3 answers a later probe, and the waiting message
	// arrives first.
	tr.Restore(g, 3)
	first := sendUntilArrival(t, eps[0], ep3, gossip.Message{From: 0, To: 3, Kind: gossip.KindPush, Tag: 7})
	assert.Equal(t, uint64(6), first.Tag)
}

// TestMemoryOutage: while the network is down every endpoint is offline and
// every message vanishes, counted as lost; afterwards messages flow again.
func TestMemoryOutage(t *testing.T) {
	tr := newMemory(t, transport.MemoryOptions{})
	g := transport.Group{Name: "outage"}
	eps := openNodes(t, tr, g, 2)
	pingPong(t, eps[0], eps[1], 100)
	require.True(t, eps[0].Online())

	tr.Outage(true)
	assert.False(t, eps[0].Online())
	assert.False(t, eps[1].Online())
	require.NoError(t, eps[0].Send(testCtx(t), gossip.Message{From: 0, To: 1, Kind: gossip.KindPush, Tag: 1}))
	requireEmpty(t, eps[1])
	assert.Equal(t, uint64(1), eps[0].Stats().Lost)

	tr.Outage(false)
	assert.True(t, eps[1].Online())
	require.NoError(t, eps[0].Send(testCtx(t), gossip.Message{From: 0, To: 1, Kind: gossip.KindPush, Tag: 2}))
	assert.Equal(t, uint64(2), recv(t, eps[1]).Tag)
}

func TestMemoryDelay(t *testing.T) {
	const slow = time.Hour // never elapses during the test
	tr := newMemory(t, transport.MemoryOptions{Delay: func(from, to gossip.NodeID) time.Duration {
		switch {
		case from == 0 && to == 1:
			return slow
		case from == 0 && to == 2:
			return time.Millisecond
		}
		return 0
	}})
	eps := openNodes(t, tr, transport.Group{Name: "delay"}, 3)
	ctx := testCtx(t)
	payload := []float64{1, 2}
	require.NoError(t, eps[0].Send(ctx, gossip.Message{From: 0, To: 1, Kind: gossip.KindPush, Tag: 1, Payload: payload}))
	require.NoError(t, eps[0].Send(ctx, gossip.Message{From: 0, To: 2, Kind: gossip.KindPush, Tag: 2, Payload: payload}))
	payload[0] = 99 // the sender may reuse its payload once Send returns
	require.NoError(t, eps[2].Send(ctx, gossip.Message{From: 2, To: 1, Kind: gossip.KindPush, Tag: 3}))

	// The undelayed message is there when Send returns; the slow one is not.
	got := recv(t, eps[1])
	require.Equal(t, uint64(3), got.Tag)
	requireEmpty(t, eps[1])
	got = recv(t, eps[2])
	require.Equal(t, uint64(2), got.Tag)
	require.Equal(t, []float64{1, 2}, got.Payload)

	// Closing discards the message still in flight and stops its timer.
	base := runtime.NumGoroutine()
	require.NoError(t, tr.Close())
	_, ok := <-eps[1].Messages()
	require.False(t, ok)
	assert.Equal(t, uint64(1), eps[1].Stats().Received, "only the undelayed message arrived")
	waitGoroutines(t, base)
	require.ErrorIs(t, eps[0].Send(ctx, gossip.Message{From: 0, To: 1, Kind: gossip.KindPush}), transport.ErrClosed)
}

func TestMemoryInject(t *testing.T) {
	tr := newMemory(t, transport.MemoryOptions{})
	g := transport.Group{Name: "inject"}
	openNodes(t, tr, g, 1)
	assert.True(t, tr.Inject(g.Subject(0), []byte{1, 2, 3}))
	assert.False(t, tr.Inject(g.Subject(1), []byte{1, 2, 3}), "node 1 is not open")
	assert.Equal(t, transport.Stats{Malformed: 1}, tr.Stats())
}
