package rdb_test

import (
	"math"
	"math/bits"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
	"github.com/gossipreduce/gossipreduce/rdb"
)

func newRDB(c gossip.Config) (gossip.Machine, error) { return rdb.New(c) }

// TestEveryNodeGetsTheBitwiseSameExactResult runs recursive doubling for
// every N from 1 to 1000 with messages delivered in a random order.
func TestEveryNodeGetsTheBitwiseSameExactResult(t *testing.T) {
	maxN := 1000
	if testing.Short() {
		maxN = 200
	}
	for n := 1; n <= maxN; n++ {
		inputs := gossiptest.Inputs(n, 2, uint64(n))
		ms, err := gossiptest.Build(gossiptest.Complete(n), inputs, gossip.Average, 1, newRDB)
		require.NoError(t, err)
		net := gossiptest.NewNet(ms, uint64(n))
		net.Start()
		for {
			ok, err := net.DeliverOne()
			require.NoError(t, err, "n=%d", n)
			if !ok {
				break
			}
		}
		weights := make([]float64, n)
		for i := range weights {
			weights[i] = 1
		}
		exact, err := gossip.Aggregate(inputs, weights)
		require.NoError(t, err)

		first := ms[0].Estimate(nil)
		p := 1 << (bits.Len(uint(n)) - 1)
		for i, m := range ms {
			require.True(t, m.(gossip.Finisher).Done(), "n=%d node %d not done", n, i)
			got := m.Estimate(nil)
			for c := range got {
				require.Equal(t, math.Float64bits(first[c]), math.Float64bits(got[c]), "n=%d node %d component %d differs", n, i, c)
			}
			// Sends per node: one per exchange step, plus one fold message.
			require.LessOrEqual(t, net.Sent[i], bits.Len(uint(p))-1+1, "n=%d node %d", n, i)
		}
		// The sum tree has depth ⌊log2 N⌋+1 (the fold adds one level) and
		// inputs are positive, so the relative rounding error of the sum is
		// at most depth·u with u = 2^-53; the division by the exact integer
		// weight adds one more u. Allow twice that.
		depth := bits.Len(uint(n)) + 1
		bound := 2 * float64(depth+1) * 0x1p-53
		require.LessOrEqual(t, gossip.RelError(first, exact), bound, "n=%d", n)
	}
}

func TestStepsPerNode(t *testing.T) {
	// Power of two: d exchanges each. N = 6: p = 4, r = 2; ranks 0 and 2
	// fold in and out (one send each), ranks 1 and 3 send 2 exchanges + 1
	// fold-out, ranks 4 and 5 send 2 exchanges.
	for _, tc := range []struct {
		n    int
		want []int
	}{
		{8, []int{3, 3, 3, 3, 3, 3, 3, 3}},
		{6, []int{1, 3, 1, 3, 2, 2}},
		{1, []int{0}},
		{3, []int{1, 2, 1}},
	} {
		inputs := gossiptest.Inputs(tc.n, 1, 1)
		ms, err := gossiptest.Build(gossiptest.Complete(tc.n), inputs, gossip.Sum, 1, newRDB)
		require.NoError(t, err)
		net := gossiptest.NewNet(ms, 1)
		net.Start()
		for {
			ok, err := net.DeliverOne()
			require.NoError(t, err)
			if !ok {
				break
			}
		}
		assert.Equal(t, tc.want, net.Sent, "n=%d", tc.n)
	}
}

func TestRejectsWhatIsNotInTheSchedule(t *testing.T) {
	m, err := rdb.New(gossip.Config{ID: 0, Overlay: gossiptest.Complete(4), Value: []float64{1}, Epoch: 2})
	require.NoError(t, err)
	out := m.Tick(nil)
	require.Len(t, out, 1)
	assert.Equal(t, gossip.NodeID(1), out[0].To, "step 1 partner of 0 is 1")

	msg := gossip.Message{From: 1, To: 0, Kind: gossip.KindRDB, Epoch: 2, Tag: 1, Payload: []float64{2, 1}}
	for name, tc := range map[string]struct {
		edit func(*gossip.Message)
		want error
	}{
		"wrong partner": {func(m *gossip.Message) { m.From = 3 }, gossip.ErrForeignMessage},
		"unknown step":  {func(m *gossip.Message) { m.Tag = 9 }, gossip.ErrForeignMessage},
		"epoch":         {func(m *gossip.Message) { m.Epoch = 3 }, gossip.ErrForeignMessage},
		"kind":          {func(m *gossip.Message) { m.Kind = gossip.KindPush }, gossip.ErrForeignMessage},
		"length":        {func(m *gossip.Message) { m.Payload = []float64{1} }, gossip.ErrLength},
	} {
		bad := msg.Clone()
		tc.edit(&bad)
		_, err := m.Step(bad, nil)
		assert.ErrorIs(t, err, tc.want, name)
	}
	out, err = m.Step(msg, nil)
	require.NoError(t, err)
	require.Len(t, out, 1)
	assert.Equal(t, gossip.NodeID(2), out[0].To)
	assert.Equal(t, []float64{3, 2}, out[0].Payload)
	_, err = m.Step(msg, nil)
	assert.ErrorIs(t, err, gossip.ErrForeignMessage, "duplicate")
	assert.False(t, m.Done())
}

func TestEarlyMessageWaitsForItsStep(t *testing.T) {
	m, err := rdb.New(gossip.Config{ID: 0, Overlay: gossiptest.Complete(4), Value: []float64{1}})
	require.NoError(t, err)
	// Step 2's partial from node 2 arrives before step 1's from node 1.
	out, err := m.Step(gossip.Message{From: 2, To: 0, Kind: gossip.KindRDB, Tag: 2, Payload: []float64{5, 2}}, nil)
	require.NoError(t, err)
	require.Len(t, out, 1, "the first message starts the node: it sends step 1")
	out, err = m.Step(gossip.Message{From: 1, To: 0, Kind: gossip.KindRDB, Tag: 1, Payload: []float64{2, 1}}, nil)
	require.NoError(t, err)
	require.Len(t, out, 1)
	assert.True(t, m.Done())
	assert.Equal(t, []float64{2}, m.Estimate(nil))
}

// TestRankIsNodesInverse: every node that does not fold in has a distinct
// hypercube rank below 2^⌊log2 n⌋, and Node maps it back.
func TestRankIsNodesInverse(t *testing.T) {
	for n := 1; n <= 70; n++ {
		p := 1 << (bits.Len(uint(n)) - 1)
		seen := make([]bool, p)
		for id := range n {
			r := rdb.Rank(id, n)
			if r < 0 {
				continue
			}
			require.Less(t, r, p, "n=%d id=%d", n, id)
			require.False(t, seen[r], "n=%d rank %d twice", n, r)
			seen[r] = true
			require.Equal(t, id, rdb.Node(r, n), "n=%d", n)
		}
		require.NotContains(t, seen, false, "n=%d", n)
	}
}
