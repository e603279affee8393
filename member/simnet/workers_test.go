package simnet

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/member"
)

// TestWorkersDoNotChangeARun: a group simulated in 1, 2 or 3 shards
// runs the same operations, message for message: the same outcomes, bit
// for bit, the same counts, the same time, with crashes, pauses, slow
// members, loss, duplication and a partition; with jitter, and without
// (where many deliveries fall due at a member at the same time, and the
// order in which they are queued decides). The shards' order of work at
// equal times differs; what they post is queued in the senders' order,
// and each member draws its own network fate.
func TestWorkersDoNotChangeARun(t *testing.T) {
	type run struct {
		msgs, dropped, events int
		now                   time.Duration
		outs                  []map[gossip.NodeID]member.Outcome
		recorded              []gossip.Message
	}
	const n = 64
	do := func(workers int, jitter time.Duration) run {
		net, err := New(Config{Nodes: n, Topology: "hypercube", Algorithm: "pfcc", Seed: 5, Workers: workers,
			Loss: 0.02, Dup: 0.01, Jitter: jitter, Suspect: 200 * time.Millisecond})
		require.NoError(t, err)
		require.Len(t, net.shards, workers)
		net.Record(true)
		net.Crash(0, 3*time.Millisecond)
		net.Crash(17, 0)
		net.Pause(5, 2*time.Millisecond, 30*time.Millisecond)
		net.Slow(40, 3)
		side := make([]int, n)
		for i := range side {
			side[i] = i % 2
		}
		net.Partition(side, 4*time.Millisecond, 9*time.Millisecond)
		var r run
		for e := uint64(1); e <= 3; e++ {
			r.outs = append(r.outs, net.Run(e, inputs(n), nil, 5*time.Second))
		}
		r.msgs, r.dropped, r.events, r.now, r.recorded = net.Messages, net.Dropped, net.Events, net.Now(), net.Recorded()
		return r
	}
	for _, jitter := range []time.Duration{0, 20 * time.Microsecond} {
		one := do(1, jitter)
		require.Positive(t, one.dropped)
		for _, w := range []int{2, 3} {
			got := do(w, jitter)
			// Counts first: a diff of the outcomes is slow to print.
			require.Equal(t, []int{one.msgs, one.dropped, one.events}, []int{got.msgs, got.dropped, got.events},
				"messages, dropped, events; %d workers, jitter %v", w, jitter)
			require.Equal(t, one.now, got.now, "time, %d workers, jitter %v", w, jitter)
			assert.True(t, reflect.DeepEqual(one.outs, got.outs), "outcomes, %d workers, jitter %v", w, jitter)
			assert.True(t, reflect.DeepEqual(one.recorded, got.recorded), "recorded traffic, %d workers, jitter %v", w, jitter)
		}
	}
}

// TestPostsAreQueuedInTheSendersOrder: what members send in a window is
// queued at its receivers in the order of the senders' numbers, whatever
// order the senders' shard handled them in: it decides between deliveries
// due at the same time, and must not depend on how the group was shared
// out.
func TestPostsAreQueuedInTheSendersOrder(t *testing.T) {
	net, err := New(Config{Nodes: 4, Workers: 2, Seed: 1})
	require.NoError(t, err)
	require.Same(t, net.shards[0], net.nodes[1].sh)
	require.Same(t, net.shards[1], net.nodes[3].sh)
	const at = time.Hour // after every tick queued by New
	src := net.shards[0]
	for _, from := range []gossip.NodeID{1, 0} { // 1 took its turn first
		src.post(&net.nodes[from], from, posted{at: at, ev: event{kind: evDeliver, to: 3}, msg: gossip.Message{From: from, To: 3}})
	}
	net.each(func(s *shard) { s.window(0, 0) }) // a window with nothing to handle
	net.post()
	var froms []gossip.NodeID
	dst := net.shards[1]
	for {
		_, ev, ok := dst.q.Pop()
		if !ok {
			break
		}
		if ev.kind == evDeliver {
			froms = append(froms, dst.landed(ev.msg).From)
		}
	}
	assert.Equal(t, []gossip.NodeID{0, 1}, froms)
	assert.Empty(t, net.nodes[0].posts, "taken posts are cleared")
	assert.Empty(t, src.posters)
}
