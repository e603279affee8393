package pushflow

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
)

// TestRestartedNodeNumbersOn: a node killed and started again within an
// operation (a new machine, the same id) numbers its pushes from 1 again,
// while its neighbour has taken in higher numbers from its earlier self
// and takes the new ones for stale. The flow the neighbour answers with
// acknowledges those higher numbers; the new machine takes it in (it used
// to reject it as foreign, and the two ignored each other until the new
// machine's numbers caught up: seconds with real processes), forgets its
// pushes the neighbour never applied, and numbers on from there, so that
// its next push reaches the neighbour. The pair's flows end opposite.
// With Revive the neighbour does not take the new machine's first push for
// a duplicate of the earlier self's first, which it would not push on
// for: the push acknowledges nothing, as only a sender new in the
// operation's do.
func TestRestartedNodeNumbersOn(t *testing.T) {
	for _, revive := range []bool{false, true} {
		t.Run(map[bool]string{false: "thesis", true: "revive"}[revive], func(t *testing.T) {
			restartedNodeNumbersOn(t, revive)
		})
	}
}

func restartedNodeNumbersOn(t *testing.T, revive bool) {
	overlay := gossiptest.Complete(2)
	node := func(id gossip.NodeID, v float64) *Machine {
		m, err := New(gossip.Config{ID: id, Overlay: overlay, Value: []float64{v}, Revive: revive})
		require.NoError(t, err)
		return m
	}
	a, b := node(0, 1), node(1, 3)
	for range 5 { // a pushes, b answers with a push, which a takes in
		for _, m := range a.Tick(nil) {
			out, err := b.Step(m, nil)
			require.NoError(t, err)
			for _, r := range out {
				_, err := a.Step(r, nil) // its push on is lost
				require.NoError(t, err)
			}
		}
	}
	require.Greater(t, a.nb[0].sent, uint32(2), "the earlier a numbered several pushes")

	a = node(0, 1) // killed and started again
	first := a.Tick(nil)
	require.Len(t, first, 1)
	stale := b.Counters().Stale
	answer, err := b.Step(first[0], nil)
	require.NoError(t, err)
	assert.Equal(t, stale+1, b.Counters().Stale, "b takes the new a's first push for stale")
	require.Len(t, answer, 1)

	out, err := a.Step(answer[0], nil)
	require.NoError(t, err, "the new a takes in b's flow, which acknowledges the earlier a's pushes")
	assert.Equal(t, 1, a.Counters().Restarted)
	assert.Zero(t, a.Counters().Revived, "b's count of its pushes is to the earlier a: no push of it lost")
	assert.NotContains(t, a.nb[0].pendSeq, seqOf(first[0].Tag), "the push b took for stale is forgotten")
	require.Len(t, out, 1)
	assert.Greater(t, seqOf(out[0].Tag), uint32(answer[0].Tag), "numbered past what b acknowledged")

	// a's push reaches b; both go quiet and exchange until nothing is in
	// flight, and the flows are opposite: the pair's mass is whole.
	a.Quiet(true)
	b.Quiet(true)
	msgs := out
	for range 10 {
		var next []gossip.Message
		for _, m := range msgs {
			to := a
			if m.To == 1 {
				to = b
			}
			o, err := to.Step(m, nil)
			require.NoError(t, err)
			next = append(next, o...)
		}
		msgs = next
	}
	require.Empty(t, msgs)
	assert.Equal(t, stale+1, b.Counters().Stale, "no push of the new a taken for stale after the first")
	fa, fb := a.Flow(1), b.Flow(0)
	for c := range fa {
		assert.Equal(t, -fa[c], fb[c], "component %d", c)
	}
	ta, tb := a.total(), b.total() // value and weight held
	assert.InDelta(t, 4.0, ta[0]+tb[0], 1e-12, "the inputs 1 and 3")
	assert.InDelta(t, 2.0, ta[1]+tb[1], 1e-12, "two weights of 1")
}
