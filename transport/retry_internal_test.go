package transport

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// TestRetryQueueOrder: the retry heap pops in order of due time, whatever
// the order of pushes.
func TestRetryQueueOrder(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 3))
	base := time.Now()
	var q retryQueue
	var want []time.Duration
	for i := range 500 {
		d := time.Duration(r.IntN(1000)) * time.Millisecond
		want = append(want, d)
		q.push(base.Add(d), gossip.NodeID(i))
	}
	slices.Sort(want)
	for i, d := range want {
		at, ok := q.first()
		require.True(t, ok)
		require.Equal(t, d, at.Sub(base), "entry %d", i)
		q.pop()
	}
	_, ok := q.first()
	assert.False(t, ok)
}

// TestOneRetryTimerForManyPeers: an endpoint with messages waiting for
// many peers that never answer probes each of them again from its one
// timer, backing off, and stops after maxRetries; closing it stops the
// timer.
func TestOneRetryTimerForManyPeers(t *testing.T) {
	const peers = 300
	tr, err := NewMemory(MemoryOptions{Options: WithSessionTiming(Options{}, time.Millisecond, time.Millisecond)})
	require.NoError(t, err)
	defer tr.Close()
	ep, err := tr.Open(context.Background(), Group{Name: "retry"}, 0)
	require.NoError(t, err)
	e := ep.(*endpoint)
	for to := 1; to <= peers; to++ {
		require.NoError(t, ep.Send(context.Background(), gossip.Message{From: 0, To: gossip.NodeID(to), Kind: gossip.KindPush}))
	}
	e.smu.Lock()
	armed := len(e.retries)
	e.smu.Unlock()
	assert.Equal(t, peers, armed, "one pending retry per waiting peer, on one timer")
	// One probe at Send, then maxRetries from the timer, for each peer.
	want := uint64(peers * (1 + maxRetries))
	deadline := time.Now().Add(time.Minute)
	for ep.Stats().Probes < want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	require.Equal(t, want, ep.Stats().Probes)
	e.smu.Lock()
	left := len(e.retries)
	e.smu.Unlock()
	assert.Zero(t, left, "nothing armed after the last retry")
	require.NoError(t, ep.Close())
	assert.Equal(t, uint64(peers), ep.Stats().Unsent, "the waiting messages are discarded at Close")
}
