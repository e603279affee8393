package pushflow

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
)

// settledNaive is Settled as it was: every pending push compared with the
// estimate.
func settledNaive(m *Machine, tol float64) bool {
	e := m.sum(m.e)
	for n := range m.nbr {
		if m.gone[n] {
			continue
		}
		vals := m.pendVal[n]
		for p := 0; p+m.width <= len(vals); p += m.width {
			d := vals[p : p+m.width]
			for c := range m.k {
				want := e[c] / e[m.k]
				diff := math.Abs(d[c]/d[m.k] - want)
				if want != 0 {
					diff /= math.Abs(want)
				}
				if !(diff <= tol) {
					return false
				}
			}
		}
	}
	return true
}

// TestSettledMatchesNaive drives machines with random deliveries, losses
// (pushes never acknowledged) and exclusions, and checks after every step
// that the bounded Settled answers as the scan over every pending push.
func TestSettledMatchesNaive(t *testing.T) {
	const seed = 11
	rng := rand.New(rand.NewPCG(seed, 1))
	inputs := gossiptest.Inputs(8, 3, seed)
	ms, err := gossiptest.Build(gossiptest.Complete(8), inputs, gossip.Average, seed, func(c gossip.Config) (gossip.Machine, error) { return New(c) })
	require.NoError(t, err)
	var inflight []gossip.Message
	for _, m := range ms {
		inflight = m.Tick(inflight)
	}
	tols := []float64{0, 1e-12, 1e-6, 1e-2, 1}
	checked := 0
	for step := 0; step < 20000 && len(inflight) > 0; step++ {
		i := rng.IntN(len(inflight))
		msg := inflight[i]
		inflight[i] = inflight[len(inflight)-1]
		inflight = inflight[:len(inflight)-1]
		if rng.IntN(4) == 0 { // lost: its push stays unacknowledged
			inflight = ms[msg.From].Tick(inflight)
			continue
		}
		if step == 500 {
			ms[3].Exclude(5)
		}
		inflight, _ = ms[msg.To].Step(msg, inflight)
		m := ms[msg.To].(*Machine)
		for _, tol := range tols {
			require.Equal(t, settledNaive(m, tol), m.Settled(tol), "seed %d step %d tol %g", seed, step, tol)
			checked++
		}
	}
	require.Greater(t, checked, 1000)
}
