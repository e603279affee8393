package exchange_test

import (
	"errors"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/exchange"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
	"github.com/gossipreduce/gossipreduce/rdb"
	"github.com/gossipreduce/gossipreduce/rhd"
)

// chunkedK is the number of components the chunked tests use for n nodes:
// enough words (k+1) for every one of the 2^⌊log2 n⌋ ranks to own a slice
// of at least one word, most of them of one or two.
func chunkedK(n int) int { return n + 3 }

func buildChunked(t *testing.T, n, k int, seed uint64) ([]gossip.Machine, [][]float64) {
	t.Helper()
	inputs := gossiptest.Inputs(n, k, seed)
	ms, err := gossiptest.Build(gossiptest.Complete(n), inputs, gossip.Average, seed,
		func(c gossip.Config) (gossip.Machine, error) { return exchange.NewChunked(c) })
	require.NoError(t, err)
	return ms, inputs
}

// rhdReference is recursive halving and doubling's result for the same
// inputs: the chunked first pass runs rhd's schedule, so only the owner of
// a slice adds its terms, in rhd's order, and the bits must be the same.
func rhdReference(t *testing.T, n, k int, seed uint64) []uint64 {
	t.Helper()
	return referenceOf(t, n, k, seed, func(c gossip.Config) (gossip.Machine, error) { return rhd.New(c) })
}

// counted wraps a network's machines so that the payload words each node
// hands out (hash words included) are counted.
type counted struct {
	gossip.Machine
	words *int
}

func (c counted) Tick(out []gossip.Message) []gossip.Message {
	n := len(out)
	out = c.Machine.Tick(out)
	for _, m := range out[n:] {
		*c.words += len(m.Payload)
	}
	return out
}

func (c counted) Step(msg gossip.Message, out []gossip.Message) ([]gossip.Message, error) {
	n := len(out)
	out, err := c.Machine.Step(msg, out)
	for _, m := range out[n:] {
		*c.words += len(m.Payload)
	}
	return out, err
}

func unwrapDone(net *gossiptest.Net) bool {
	for _, m := range net.Machines {
		if !m.(counted).Machine.(*exchange.Machine).Done() {
			return false
		}
	}
	return true
}

// TestChunkedIdenticalAtEveryNode: for every N from 1 to 70, in a random
// delivery order, every node ends with rhd's bits, within rounding of the
// exact average; fault-free, a node sends no more than the schedule's
// 2⌊log2 N⌋ partials, ⌊log2 N⌋ vouches and a fold, and (a rank of the
// hypercube) no more than 2 (p−1)/p of its vector in partials plus the
// whole result to a folded neighbour: the ring's bytes, not rdb's.
func TestChunkedIdenticalAtEveryNode(t *testing.T) {
	for n := 1; n <= 70; n++ {
		k := chunkedK(n)
		ms, inputs := buildChunked(t, n, k, uint64(n))
		words := make([]int, n)
		for i := range ms {
			ms[i] = counted{ms[i], &words[i]}
		}
		net := gossiptest.NewNet(ms, uint64(n))
		net.Start()
		require.NoError(t, net.RunUntil(1<<20, func() bool { return unwrapDone(net) }))
		require.True(t, unwrapDone(net), "N=%d: not every node finished", n)
		want := rhdReference(t, n, k, uint64(n))
		for i, m := range ms {
			var got []uint64
			for _, v := range m.Estimate(nil) {
				got = append(got, math.Float64bits(v))
			}
			require.Equal(t, want, got, "N=%d node %d", n, i)
		}
		// 1e-14: log2 N additions of values in [0, 1), a few ulps each.
		assert.LessOrEqual(t, net.MaxError(exact(t, inputs)), 1e-14, "N=%d", n)
		d := bits.Len(uint(n)) - 1
		p := 1 << d
		w := k + 1
		for i, s := range net.Sent {
			assert.LessOrEqual(t, s, 3*d+1, "N=%d node %d sent %d messages", n, i, s)
			// Each slice is ⌊w/p⌋ or ⌈w/p⌉ words: the partials are at most
			// 2 (p−1) slices; every message carries 2 hash words; a vouch
			// is 3 words; a fold is the whole vector.
			bound := 2*(p-1)*((w+p-1)/p) + 2*s + 3*d + w
			assert.LessOrEqual(t, words[i], bound, "N=%d node %d sent %d words", n, i, words[i])
		}
	}
}

// TestChunkedSmallVectorsRunThePlainSchedule: a vector of fewer words than
// the hypercube has ranks is not cut: the machine sends whole vectors and
// ends with recursive doubling's bits.
func TestChunkedSmallVectorsRunThePlainSchedule(t *testing.T) {
	for _, n := range []int{8, 16, 21} {
		seed := uint64(40 + n)
		inputs := gossiptest.Inputs(n, 3, seed)
		ms, err := gossiptest.Build(gossiptest.Complete(n), inputs, gossip.Average, seed,
			func(c gossip.Config) (gossip.Machine, error) { return exchange.NewChunked(c) })
		require.NoError(t, err)
		net := gossiptest.NewNet(ms, seed)
		got := run(t, net)
		want := reference(t, n, seed)
		for i := range got {
			require.Equal(t, want, got[i], "N=%d node %d", n, i)
		}
	}
}

// TestChunkedFlipsAreRepaired: a bit flipped in a message in flight (any
// word, either hash word included) is never added, and one flipped in a
// node's state between steps is rebuilt before it is sent or returned:
// every node ends with the fault-free bits.
func TestChunkedFlipsAreRepaired(t *testing.T) {
	const n, seed = 16, 7
	k := chunkedK(n)
	want := rhdReference(t, n, k, seed)
	for bit := range 64 {
		ms, _ := buildChunked(t, n, k, seed)
		net := gossiptest.NewNet(ms, seed+uint64(bit))
		r := rand.New(rand.NewPCG(seed, uint64(bit)))
		flips := 0
		got := drive(t, net, func(d int) {
			if p := net.Pending(); len(p) > 0 && r.Float64() < 0.2 {
				m := &p[r.IntN(len(p))]
				w := r.IntN(len(m.Payload))
				m.Payload[w] = math.Float64frombits(math.Float64bits(m.Payload[w]) ^ 1<<bit)
				flips++
			}
			if d%5 == 0 {
				var words []gossip.Word
				for w := range ms[r.IntN(n)].Words() {
					words = append(words, w)
				}
				w := words[r.IntN(len(words))]
				*w.Ptr = math.Float64frombits(math.Float64bits(*w.Ptr) ^ 1<<bit)
			}
		})
		var c exchange.Counters
		for i, m := range ms {
			require.Equal(t, want, got[i], "bit %d node %d", bit, i)
			mc := m.(*exchange.Machine).Counters()
			c.Corrupt += mc.Corrupt
			c.Repairs += mc.Repairs
		}
		require.Positive(t, flips)
		assert.Positive(t, c.Corrupt, "bit %d: %d flips in messages, none detected", bit, flips)
		assert.Positive(t, c.Repairs, "bit %d: no state repaired", bit)
	}
}

// TestChunkedExtremesAreTheMaxima: extremes ride in the chunked vector
// after the weight; their slices take maxima, not sums.
func TestChunkedExtremesAreTheMaxima(t *testing.T) {
	const n, k = 12, 9
	r := rand.New(rand.NewPCG(5, 5))
	ms := make([]gossip.Machine, n)
	want := make([]float64, 6)
	for i := range want {
		want[i] = math.Inf(-1)
	}
	for i := range n {
		ext := make([]float64, len(want))
		for j := range ext {
			ext[j] = r.NormFloat64()
			want[j] = math.Max(want[j], ext[j])
		}
		var err error
		ms[i], err = exchange.NewChunked(gossip.Config{ID: gossip.NodeID(i), Overlay: gossiptest.Complete(n),
			Value: gossiptest.Inputs(1, k, uint64(i))[0], Extremes: ext, Mode: gossip.Average})
		require.NoError(t, err)
	}
	net := gossiptest.NewNet(ms, 5)
	run(t, net)
	for i, m := range ms {
		assert.Equal(t, want, m.(*exchange.Machine).Extremes(nil), "node %d", i)
	}
}

// TestChunkedVectorsOfAnotherLength: halves of vectors of 1,000 and 1,001
// words can have the same length; the tag's length tells them apart, so
// a partial of another length is refused with gossip.ErrLength, never
// added.
func TestChunkedVectorsOfAnotherLength(t *testing.T) {
	const n = 16
	cfg := func(id, k int) gossip.Config {
		return gossip.Config{ID: gossip.NodeID(id), Overlay: gossiptest.Complete(n), Value: make([]float64, k), Mode: gossip.Average}
	}
	a, err := exchange.NewChunked(cfg(0, 999))
	require.NoError(t, err)
	out := a.Tick(nil)
	require.Len(t, out, 1)
	b, err := exchange.NewChunked(cfg(int(out[0].To), 1000))
	require.NoError(t, err)
	mine := b.Tick(nil)
	require.Len(t, mine, 1)
	require.Equal(t, len(mine[0].Payload), len(out[0].Payload), "the test's premise: halves of the same length")
	_, err = b.Step(out[0], nil)
	require.ErrorIs(t, err, gossip.ErrLength)
	assert.Contains(t, err.Error(), "1001 words")
	assert.Zero(t, b.Progress(), "a refused partial moved the node on")
}

// TestChunkedCutAgainstUncut: of 4 nodes, a vector of 2^20 words is cut,
// and one of 3 words (fewer than the 4 ranks) runs the plain schedule with
// no length in its tags; neither node may take the other's message. (Here
// the payload lengths differ too; TestLenTagIsNeverZero covers the tag.)
func TestChunkedCutAgainstUncut(t *testing.T) {
	cfg := func(id, k int) gossip.Config {
		return gossip.Config{ID: gossip.NodeID(id), Overlay: gossiptest.Complete(4), Value: make([]float64, k), Mode: gossip.Average}
	}
	long, err := exchange.NewChunked(cfg(0, 1<<20-1))
	require.NoError(t, err)
	out := long.Tick(nil)
	require.Len(t, out, 1)
	short, err := exchange.NewChunked(cfg(int(out[0].To), 2))
	require.NoError(t, err)
	_, err = short.Step(out[0], nil)
	require.True(t, errors.Is(err, gossip.ErrLength), "%v", err)
	back := short.Tick(nil)
	require.Len(t, back, 1)
	other, err := exchange.NewChunked(cfg(int(back[0].To), 1<<20-1))
	require.NoError(t, err)
	_, err = other.Step(back[0], nil)
	require.True(t, errors.Is(err, gossip.ErrLength), "%v", err)
	assert.Zero(t, short.Progress())
	assert.Zero(t, other.Progress())
}

// TestChunkedCrashNeverEndsWrong: a node that dies at any point after its
// first send leaves every live node that accepted a result with the
// fault-free bits, its input included. Chunked, a partial is held by its
// sender alone, so unlike plain exchange the first pass stalls when the
// dead node still owed a partial (the runtime falls back); when it had sent
// them all, every live node finishes, as plain exchange's do.
func TestChunkedCrashNeverEndsWrong(t *testing.T) {
	for _, n := range []int{4, 6, 8, 13, 16} {
		seed := uint64(300 + n)
		k := chunkedK(n)
		want := rhdReference(t, n, k, seed)
		core := 1 << (bits.Len(uint(n)) - 1)
		for c := range n {
			firstPass := 0
			for _, s := range rhd.Schedule(c, n, k+1) {
				if s.Send[1] > s.Send[0] && s.Tag != 2*(bits.Len(uint(n))-1)+1 {
					firstPass++
				}
			}
			sends := firstPass
			if rdb.Rank(c, n) >= 0 {
				sends += bits.Len(uint(n)) - 1 // the vouches
			}
			stalled := 0
			for after := 1; after <= sends; after++ {
				ms, _ := buildChunked(t, n, k, seed)
				net := gossiptest.NewNet(ms, seed+uint64(c*10+after))
				done := crashRun(t, net, gossip.NodeID(c), after, 1000)
				mustEnd := after >= firstPass && (rdb.Rank(c, n) < 0 || core-1 >= n/2+1 || after > firstPass)
				if mustEnd {
					require.Equal(t, n-1, done, "N=%d node %d dead after %d sends: live nodes finished", n, c, after)
				}
				if done < n-1 {
					stalled++
				}
				for i, m := range ms {
					if i == c || !m.(*exchange.Machine).Accepted() && !m.(*exchange.Machine).Done() {
						continue
					}
					var got []uint64
					for _, v := range m.Estimate(nil) {
						got = append(got, math.Float64bits(v))
					}
					require.Equal(t, want, got, "N=%d node %d dead after %d sends: node %d", n, c, after, i)
				}
			}
			if rdb.Rank(c, n) >= 0 && firstPass > 1 {
				assert.Positive(t, stalled, "N=%d node %d: a crash mid-pass never stalled (the premise of the fallback)", n, c)
			}
		}
	}
}
