package ring_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
	"github.com/gossipreduce/gossipreduce/ring"
)

// ringNet is the nodes of one ring and the messages in flight between
// them, delivered in a seeded random order.
type ringNet struct {
	ms       []*ring.Machine
	inFlight []gossip.Message
	sent     []int // messages sent per node
	words    []int // payload words sent per node
	r        *rand.Rand
}

func newNet(t *testing.T, inputs [][]float64, mode gossip.WeightMode, seed uint64) *ringNet {
	t.Helper()
	n := len(inputs)
	net := &ringNet{sent: make([]int, n), words: make([]int, n), r: rand.New(rand.NewPCG(seed, 7))}
	for i, x := range inputs {
		m, err := ring.New(gossip.Config{ID: gossip.NodeID(i), Overlay: gossiptest.Complete(n), Value: x, Mode: mode, Epoch: 4})
		require.NoError(t, err)
		net.ms = append(net.ms, m)
	}
	return net
}

func (net *ringNet) post(out []gossip.Message) {
	for _, m := range out {
		net.sent[m.From]++
		net.words[m.From] += len(m.Payload)
		net.inFlight = append(net.inFlight, m)
	}
}

// run ticks every node and delivers until nothing is in flight.
func (net *ringNet) run(t *testing.T) {
	t.Helper()
	for _, m := range net.ms {
		net.post(m.Tick(nil))
	}
	for len(net.inFlight) > 0 {
		i := net.r.IntN(len(net.inFlight))
		msg := net.inFlight[i]
		net.inFlight[i] = net.inFlight[len(net.inFlight)-1]
		net.inFlight = net.inFlight[:len(net.inFlight)-1]
		out, err := net.ms[msg.To].Step(msg, nil)
		require.NoError(t, err, "%v", msg)
		net.post(out)
	}
}

func ones(n int) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = 1
	}
	return w
}

// TestEveryNodeGetsTheBitwiseSameExactAverage runs the ring for N from 1 to
// 40 and, for each, vector lengths below, at and above N (K = 1, K+1 < N,
// K+1 = N, uneven and even splits), with messages delivered in a random
// order: every node finishes, every node has the same bits, the result is
// the average within the rounding of a chain of N additions, and each node
// sends the words of two rounds of the ring less its own two slices.
func TestEveryNodeGetsTheBitwiseSameExactAverage(t *testing.T) {
	maxN := 40
	if testing.Short() {
		maxN = 17
	}
	for n := 1; n <= maxN; n++ {
		for _, k := range []int{1, 2, n - 2, n - 1, n, n + 1, 2*n + 3, 5*n - 1} {
			if k < 1 {
				continue
			}
			seed := uint64(1000*n + k)
			inputs := gossiptest.Inputs(n, k, seed)
			net := newNet(t, inputs, gossip.Average, seed)
			net.run(t)
			exact, err := gossip.Aggregate(inputs, ones(n))
			require.NoError(t, err)
			first := net.ms[0].Estimate(nil)
			require.Len(t, first, k)
			w := k + 1
			for i, m := range net.ms {
				require.True(t, m.Done(), "n=%d k=%d node %d not done", n, k, i)
				got := m.Estimate(nil)
				for c := range got {
					require.Equal(t, math.Float64bits(first[c]), math.Float64bits(got[c]), "n=%d k=%d node %d component %d differs", n, k, i, c)
				}
				lo, hi := ring.Slice(i, w, n)
				lo1, hi1 := ring.Slice((i+1)%n, w, n)
				want := 2*w - (hi - lo) - (hi1 - lo1)
				if n == 1 {
					want = 0
				}
				require.Equal(t, want, net.words[i], "n=%d k=%d node %d words sent", n, k, i)
				require.LessOrEqual(t, net.sent[i], ring.Steps(n), "n=%d k=%d node %d", n, k, i)
				if w >= n {
					require.Equal(t, ring.Steps(n), net.sent[i], "n=%d k=%d node %d: no empty slice, a message per step", n, k, i)
				}
			}
			// Each slice is a chain of N−1 additions of positive values, so
			// the relative error of a sum is at most (N−1)u, u = 2^-53; the
			// division by the exact integer weight adds u. Allow twice that.
			bound := 2 * float64(n) * 0x1p-53
			require.LessOrEqual(t, gossip.RelError(first, exact), bound, "n=%d k=%d", n, k)
		}
	}
}

// TestSumMode: with weights 1/N the estimate is the sum.
func TestSumMode(t *testing.T) {
	inputs := [][]float64{{1, 10}, {2, 20}, {3, 30}, {4, 40}, {5, 50}}
	net := newNet(t, inputs, gossip.Sum, 1)
	net.run(t)
	for _, m := range net.ms {
		assert.InDeltaSlice(t, []float64{15, 150}, m.Estimate(nil), 1e-12)
	}
}

// TestSlicesCoverTheVector: the slices of w words among n nodes are
// consecutive, cover the vector and differ in length by at most one.
func TestSlicesCoverTheVector(t *testing.T) {
	for n := 1; n <= 20; n++ {
		for w := 1; w <= 45; w++ {
			end, short, long := 0, w, 0
			for j := range n {
				lo, hi := ring.Slice(j, w, n)
				require.Equal(t, end, lo, "n=%d w=%d slice %d", n, w, j)
				short, long = min(short, hi-lo), max(long, hi-lo)
				end = hi
			}
			require.Equal(t, w, end, "n=%d w=%d", n, w)
			require.LessOrEqual(t, long-short, 1, "n=%d w=%d", n, w)
		}
	}
}

// TestRejectsWhatIsNotInTheSchedule: among 4 nodes with 3 components
// (4 words, a slice of one word each), node 1 takes from node 0 only, only
// steps 0 … 5, only one word, only vectors of 4 words, and each step once.
func TestRejectsWhatIsNotInTheSchedule(t *testing.T) {
	m, err := ring.New(gossip.Config{ID: 1, Overlay: gossiptest.Complete(4), Value: []float64{1, 2, 3}, Epoch: 2})
	require.NoError(t, err)
	out := m.Tick(nil)
	require.Len(t, out, 1)
	// Step 0: node 1 sends slice 0 (its value[0]) to node 2.
	assert.Equal(t, gossip.Message{From: 1, To: 2, Kind: gossip.KindRing, Epoch: 2, Tag: ring.Tag(0, 4), Payload: []float64{1}}, out[0])

	// Step 0's message from node 0 is its slice 3, the weight.
	msg := gossip.Message{From: 0, To: 1, Kind: gossip.KindRing, Epoch: 2, Tag: ring.Tag(0, 4), Payload: []float64{1}}
	for name, tc := range map[string]struct {
		edit func(*gossip.Message)
		want error
	}{
		"not the predecessor": {func(m *gossip.Message) { m.From = 2 }, gossip.ErrForeignMessage},
		"stranger":            {func(m *gossip.Message) { m.From = 99 }, gossip.ErrForeignMessage},
		"step past the end":   {func(m *gossip.Message) { m.Tag = ring.Tag(6, 4) }, gossip.ErrForeignMessage},
		"step 2^32-1":         {func(m *gossip.Message) { m.Tag = ring.Tag(-1, 4) }, gossip.ErrForeignMessage},
		"epoch":               {func(m *gossip.Message) { m.Epoch = 3 }, gossip.ErrForeignMessage},
		"recipient":           {func(m *gossip.Message) { m.To = 2 }, gossip.ErrForeignMessage},
		"kind":                {func(m *gossip.Message) { m.Kind = gossip.KindRDB }, gossip.ErrForeignMessage},
		"long payload":        {func(m *gossip.Message) { m.Payload = []float64{1, 1} }, gossip.ErrLength},
		"empty payload":       {func(m *gossip.Message) { m.Payload = nil }, gossip.ErrLength},
		"other vector length": {func(m *gossip.Message) { m.Tag = ring.Tag(0, 5) }, gossip.ErrLength},
	} {
		bad := msg.Clone()
		tc.edit(&bad)
		before := m.Estimate(nil)
		out, err := m.Step(bad, nil)
		assert.ErrorIs(t, err, tc.want, name)
		assert.Empty(t, out, name)
		assert.Equal(t, before, m.Estimate(nil), name)
	}
	out, err = m.Step(msg, nil)
	require.NoError(t, err)
	// Step 1: node 1 sends what it has just added to: slice 3, weight 1+1.
	require.Len(t, out, 1)
	assert.Equal(t, ring.Tag(1, 4), out[0].Tag)
	assert.Equal(t, []float64{2}, out[0].Payload)
	_, err = m.Step(msg, nil)
	assert.ErrorIs(t, err, gossip.ErrForeignMessage, "duplicate of a step done")
	early := gossip.Message{From: 0, To: 1, Kind: gossip.KindRing, Epoch: 2, Tag: ring.Tag(3, 4), Payload: []float64{7}}
	_, err = m.Step(early, nil)
	require.NoError(t, err, "a later step waits")
	_, err = m.Step(early, nil)
	assert.ErrorIs(t, err, gossip.ErrForeignMessage, "duplicate of a step waiting")
	assert.False(t, m.Done())
}

// TestEmptySliceStepsSendNothing: with 1 component among 5 nodes the
// vector is 2 words; slices 0, 1 and 3 are empty, slice 2 is the value and
// slice 4 the weight. A message for a step whose slice is empty is refused,
// whatever it carries, and a node sends nothing in such a step.
func TestEmptySliceStepsSendNothing(t *testing.T) {
	for j, want := range [][2]int{{0, 0}, {0, 0}, {0, 1}, {1, 1}, {1, 2}} {
		lo, hi := ring.Slice(j, 2, 5)
		require.Equal(t, want, [2]int{lo, hi}, "slice %d", j)
	}
	m, err := ring.New(gossip.Config{ID: 0, Overlay: gossiptest.Complete(5), Value: []float64{3}})
	require.NoError(t, err)
	// Step 0: node 0 sends slice 4 (the weight); it would receive slice 3
	// from node 4, which is empty, so it goes straight on to step 1 and
	// sends slice 3: nothing.
	out := m.Tick(nil)
	require.Len(t, out, 1)
	assert.Equal(t, ring.Tag(0, 2), out[0].Tag)
	assert.Equal(t, []float64{1}, out[0].Payload)
	for _, p := range [][]float64{{}, {1}} {
		_, err = m.Step(gossip.Message{From: 4, To: 0, Kind: gossip.KindRing, Tag: ring.Tag(0, 2), Payload: p}, nil)
		assert.ErrorIs(t, err, gossip.ErrForeignMessage, "step 0 has no message")
	}
	// Step 1: slice 2, the value, from node 4.
	_, err = m.Step(gossip.Message{From: 4, To: 0, Kind: gossip.KindRing, Tag: ring.Tag(1, 2), Payload: []float64{1, 1}}, nil)
	assert.ErrorIs(t, err, gossip.ErrLength)
	out, err = m.Step(gossip.Message{From: 4, To: 0, Kind: gossip.KindRing, Tag: ring.Tag(1, 2), Payload: []float64{4}}, nil)
	require.NoError(t, err)
	// Step 2 sends slice 2, the value just added to (3+4), and receives
	// slice 1: empty; step 3 sends slice 1 and receives slice 0, both
	// empty; step 4, the first of the all-gather, sends slice 0 (empty)
	// and waits for slice 4 from node 4.
	require.Len(t, out, 1)
	assert.Equal(t, gossip.Message{From: 0, To: 1, Kind: gossip.KindRing, Tag: ring.Tag(2, 2), Payload: []float64{7}}, out[0])
	_, err = m.Step(gossip.Message{From: 4, To: 0, Kind: gossip.KindRing, Tag: ring.Tag(3, 2), Payload: []float64{1}}, nil)
	assert.ErrorIs(t, err, gossip.ErrForeignMessage, "step 3 has no message")
	out, err = m.Step(gossip.Message{From: 4, To: 0, Kind: gossip.KindRing, Tag: ring.Tag(4, 2), Payload: []float64{5}}, nil)
	require.NoError(t, err)
	// Step 5 sends slice 4, the weight just copied, and waits for slice 3
	// (empty), 6 sends slice 3 (nothing) and waits for slice 2.
	require.Len(t, out, 1)
	assert.Equal(t, gossip.Message{From: 0, To: 1, Kind: gossip.KindRing, Tag: ring.Tag(5, 2), Payload: []float64{5}}, out[0])
	assert.False(t, m.Done())
}

// TestEarlyMessagesWaitForTheirStep: the predecessor's messages may
// arrive before this node has started, and later ones before earlier ones;
// the node uses each in its step and ends with the result.
func TestEarlyMessagesWaitForTheirStep(t *testing.T) {
	inputs := [][]float64{{1, 2}, {3, 4}, {5, 6}}
	net := newNet(t, inputs, gossip.Average, 1)
	// Start nodes 0 and 1 only, and hold every message to node 2 until
	// nothing else is in flight; then deliver the held ones newest first.
	// The first starts node 2.
	var held []gossip.Message
	var queue []gossip.Message
	for _, m := range net.ms[:2] {
		queue = m.Tick(queue)
	}
	for len(queue) > 0 || len(held) > 0 {
		if len(queue) == 0 {
			// Deliver node 2's messages newest first.
			msg := held[len(held)-1]
			held = held[:len(held)-1]
			out, err := net.ms[2].Step(msg, nil)
			require.NoError(t, err)
			queue = append(queue, out...)
			continue
		}
		msg := queue[0]
		queue = queue[1:]
		if msg.To == 2 {
			held = append(held, msg)
			continue
		}
		out, err := net.ms[msg.To].Step(msg, nil)
		require.NoError(t, err)
		queue = append(queue, out...)
	}
	for i, m := range net.ms {
		require.True(t, m.Done(), "node %d", i)
		assert.Equal(t, []float64{3, 4}, m.Estimate(nil), "node %d", i)
	}
}

// TestOneNode: a group of one is done at its first tick with its input,
// and sends nothing.
func TestOneNode(t *testing.T) {
	m, err := ring.New(gossip.Config{ID: 0, Overlay: gossiptest.Complete(1), Value: []float64{2.5, -1}})
	require.NoError(t, err)
	assert.False(t, m.Done(), "not before it starts")
	assert.Empty(t, m.Tick(nil))
	assert.True(t, m.Done())
	assert.Equal(t, []float64{2.5, -1}, m.Estimate(nil))
}

// TestWaitingIsBounded: a node served last (every message to it held
// until nothing else can move, then given the newest) keeps at most the
// N−1 slices its predecessor can be ahead, about one vector, and still
// ends with the result.
func TestWaitingIsBounded(t *testing.T) {
	const n, k = 7, 40
	inputs := gossiptest.Inputs(n, k, 3)
	net := newNet(t, inputs, gossip.Average, 3)
	var queue, held []gossip.Message
	for _, m := range net.ms {
		queue = m.Tick(queue)
	}
	most := 0
	for len(queue) > 0 || len(held) > 0 {
		var msg gossip.Message
		if len(queue) > 0 {
			msg, queue = queue[0], queue[1:]
			if msg.To == 0 {
				held = append(held, msg)
				continue
			}
		} else {
			msg, held = held[len(held)-1], held[:len(held)-1]
		}
		out, err := net.ms[msg.To].Step(msg, nil)
		require.NoError(t, err)
		queue = append(queue, out...)
		most = max(most, ring.Waiting(net.ms[0]))
	}
	w := k + 1
	assert.LessOrEqual(t, most, (n-1)*((w+n-1)/n), "N−1 slices of at most ⌈W/N⌉ words")
	assert.Greater(t, most, 0, "the schedule did hold messages back")
	for i, m := range net.ms {
		require.True(t, m.Done(), "node %d", i)
	}
}
