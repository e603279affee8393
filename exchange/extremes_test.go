package exchange_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/exchange"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
)

// Extremes are reduced to their maxima beside the sums: every node ends
// with the bits of the true maxima (signed zeros included: +0 wins over
// -0 whichever partner computes it), under 30 % loss and for N with folded
// ranks, and the sums are those of a run without extremes.
func TestExtremesAreTheMaxima(t *testing.T) {
	for _, n := range []int{2, 5, 7, 16, 48} {
		seed := uint64(300 + n)
		want := reference(t, n, seed)
		inputs := gossiptest.Inputs(n, 3, seed)
		r := rand.New(rand.NewPCG(seed, 2))
		ext := make([][]float64, n)
		top := []float64{math.Inf(-1), math.Inf(-1), math.Inf(-1)}
		for i := range ext {
			// A random value, a negative one, and a zero of either sign.
			zero := 0.0
			if i%2 == 1 {
				zero = math.Copysign(0, -1)
			}
			ext[i] = []float64{r.NormFloat64(), -1 - r.Float64(), zero}
			for c, v := range ext[i] {
				top[c] = math.Max(top[c], v)
			}
		}
		ms := make([]gossip.Machine, n)
		for i := range ms {
			m, err := exchange.New(gossip.Config{ID: gossip.NodeID(i), Overlay: gossiptest.Complete(n), Value: inputs[i],
				Extremes: ext[i], Rand: rand.NewPCG(seed, uint64(i))})
			require.NoError(t, err)
			ms[i] = m
		}
		net := gossiptest.NewNet(ms, seed)
		net.Drop = func(gossip.Message) bool { return r.Float64() < 0.3 }
		got := run(t, net)
		for i, m := range ms {
			require.Equal(t, want, got[i], "N=%d node %d: the sums", n, i)
			e := m.(*exchange.Machine).Extremes(nil)
			require.Len(t, e, 3)
			for c := range e {
				assert.Equal(t, math.Float64bits(top[c]), math.Float64bits(e[c]), "N=%d node %d extreme %d: %v, want %v", n, i, c, e[c], top[c])
			}
		}
	}
}

// A flip of an extreme in the state is repaired from the input and the
// partials received, as a flip of a sum is.
func TestFlippedExtremeIsRepaired(t *testing.T) {
	const n = 8
	ms := make([]gossip.Machine, n)
	for i := range ms {
		m, err := exchange.New(gossip.Config{ID: gossip.NodeID(i), Overlay: gossiptest.Complete(n), Value: []float64{float64(i)},
			Extremes: []float64{float64(i)}})
		require.NoError(t, err)
		ms[i] = m
	}
	net := gossiptest.NewNet(ms, 1)
	flipped := false
	drive(t, net, func(d int) {
		if d != 5 {
			return
		}
		for w := range ms[3].Words() {
			if w.Component == 1 { // the extreme, after the one value
				*w.Ptr = math.Float64frombits(math.Float64bits(*w.Ptr) ^ 1<<62)
				flipped = true
			}
		}
	})
	require.True(t, flipped)
	for i, m := range ms {
		assert.Equal(t, []float64{n - 1}, m.(*exchange.Machine).Extremes(nil), "node %d", i)
	}
	assert.Positive(t, ms[3].(*exchange.Machine).Counters().Repairs)
}

// A non-finite extreme is refused at New.
func TestExtremesMustBeFinite(t *testing.T) {
	_, err := exchange.New(gossip.Config{Overlay: gossiptest.Complete(2), Value: []float64{1}, Extremes: []float64{math.NaN()}})
	require.ErrorIs(t, err, gossip.ErrNotFinite)
}
