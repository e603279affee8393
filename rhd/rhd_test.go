package rhd_test

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
	"github.com/gossipreduce/gossipreduce/rhd"
)

// TestEveryNodeGetsTheBitwiseSameExactAverage: for N from 1 to 40 and
// vectors shorter and longer than N, with messages delivered in a random
// order, every node finishes with the same bits, the average within the
// rounding of log2 N + 1 additions, and sends at most 2 log2 N messages
// (+1 when folded); for N a power of two and W a multiple of N, exactly
// 2(N−1)/N·W words.
func TestEveryNodeGetsTheBitwiseSameExactAverage(t *testing.T) {
	for n := 1; n <= 40; n++ {
		for _, k := range []int{1, 2, n - 1, n, n + 3, 4*n - 1} {
			if k < 1 {
				continue
			}
			seed := uint64(1000*n + k)
			inputs := gossiptest.Inputs(n, k, seed)
			var ms []*rhd.Machine
			for i, x := range inputs {
				m, err := rhd.New(gossip.Config{ID: gossip.NodeID(i), Overlay: gossiptest.Complete(n), Value: x, Epoch: 1})
				require.NoError(t, err)
				ms = append(ms, m)
			}
			sent, words := make([]int, n), make([]int, n)
			var flight []gossip.Message
			post := func(out []gossip.Message) {
				for _, m := range out {
					sent[m.From]++
					words[m.From] += len(m.Payload)
				}
				flight = append(flight, out...)
			}
			for _, m := range ms {
				post(m.Tick(nil))
			}
			r := rand.New(rand.NewPCG(seed, 1))
			for len(flight) > 0 {
				i := r.IntN(len(flight))
				msg := flight[i]
				flight[i] = flight[len(flight)-1]
				flight = flight[:len(flight)-1]
				out, err := ms[msg.To].Step(msg, nil)
				require.NoError(t, err, "n=%d k=%d %v", n, k, msg)
				post(out)
			}
			ones := make([]float64, n)
			for i := range ones {
				ones[i] = 1
			}
			exact, err := gossip.Aggregate(inputs, ones)
			require.NoError(t, err)
			first := ms[0].Estimate(nil)
			d := bits.Len(uint(n)) - 1
			w := k + 1
			for i, m := range ms {
				require.True(t, m.Done(), "n=%d k=%d node %d", n, k, i)
				got := m.Estimate(nil)
				for c := range got {
					require.Equal(t, math.Float64bits(first[c]), math.Float64bits(got[c]), "n=%d k=%d node %d component %d", n, k, i, c)
				}
				require.LessOrEqual(t, sent[i], 2*d+1, "n=%d k=%d node %d", n, k, i)
				if n == 1<<d && w%n == 0 {
					require.Equal(t, 2*(n-1)*w/n, words[i], "n=%d k=%d node %d", n, k, i)
				}
			}
			bound := 2 * float64(d+3) * 0x1p-53
			require.LessOrEqual(t, gossip.RelError(first, exact), bound, "n=%d k=%d", n, k)
		}
	}
}

// TestRejectsWhatIsNotInTheSchedule: among 4 nodes with 3 components,
// node 0's step 1 partner is node 2 (the halving goes by the top bit
// first), for words 2 and 3 of the vector.
func TestRejectsWhatIsNotInTheSchedule(t *testing.T) {
	m, err := rhd.New(gossip.Config{ID: 0, Overlay: gossiptest.Complete(4), Value: []float64{1, 2, 3}, Epoch: 2})
	require.NoError(t, err)
	out := m.Tick(nil)
	require.Len(t, out, 1)
	assert.Equal(t, gossip.Message{From: 0, To: 2, Kind: gossip.KindRHD, Epoch: 2, Tag: rhd.Tag(1, 4), Payload: []float64{3, 1}}, out[0])
	msg := gossip.Message{From: 2, To: 0, Kind: gossip.KindRHD, Epoch: 2, Tag: rhd.Tag(1, 4), Payload: []float64{5, 6}}
	for name, tc := range map[string]struct {
		edit func(*gossip.Message)
		want error
	}{
		"not the partner":     {func(m *gossip.Message) { m.From = 1 }, gossip.ErrForeignMessage},
		"unknown step":        {func(m *gossip.Message) { m.Tag = rhd.Tag(9, 4) }, gossip.ErrForeignMessage},
		"epoch":               {func(m *gossip.Message) { m.Epoch = 3 }, gossip.ErrForeignMessage},
		"kind":                {func(m *gossip.Message) { m.Kind = gossip.KindRing }, gossip.ErrForeignMessage},
		"short payload":       {func(m *gossip.Message) { m.Payload = m.Payload[:1] }, gossip.ErrLength},
		"other vector length": {func(m *gossip.Message) { m.Tag = rhd.Tag(1, 5) }, gossip.ErrLength},
	} {
		bad := msg.Clone()
		tc.edit(&bad)
		out, err := m.Step(bad, nil)
		assert.ErrorIs(t, err, tc.want, name)
		assert.Empty(t, out, name)
	}
	out, err = m.Step(msg, nil)
	require.NoError(t, err)
	// Step 2: to node 1, word 1 (node 0 keeps word 0): 2 plus node 2's 6.
	require.Len(t, out, 1)
	assert.Equal(t, gossip.NodeID(1), out[0].To)
	assert.Equal(t, []float64{2 + 6}, out[0].Payload)
	_, err = m.Step(msg, nil)
	assert.ErrorIs(t, err, gossip.ErrForeignMessage, "duplicate")
}
