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
	e := freshTotal(m)
	for n := range m.nbr {
		if m.nb[n].gone {
			continue
		}
		vals := m.nb[n].pendVal
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

// freshTotal is input + Σ live flows, summed now in the machine's order.
func freshTotal(m *Machine) []float64 {
	e := append([]float64(nil), m.input...)
	for n := range m.nbr {
		if m.nb[n].gone {
			continue
		}
		for c, v := range m.flows[n*m.width : (n+1)*m.width] {
			e[c] += v
		}
	}
	return e
}

// TestTotalCacheIsFresh drives PFCC machines with random deliveries, losses,
// idle steps, exclusions and bit flips written through Words, and checks
// after every event that the cached total the estimate is read from is
// bitwise a fresh sum of the state.
func TestTotalCacheIsFresh(t *testing.T) {
	const seed = 5
	rng := rand.New(rand.NewPCG(seed, 2))
	inputs := gossiptest.Inputs(8, 4, seed)
	ms, inflight := started(t, 8, inputs, seed, func(c gossip.Config) (gossip.Machine, error) {
		return NewChecked(c, Cooperative, 1e-11)
	})
	flips, checks := 0, 0
	for step := range 5000 {
		var msg gossip.Message
		msg, inflight = takeAny(rng, ms, inflight)
		m := ms[msg.To].(*Machine)
		switch r := rng.IntN(20); {
		case r == 0: // lost, and its sender steps on its own
			m = ms[msg.From].(*Machine)
			inflight = m.Idle(inflight)
		case r == 2:
			m = ms[msg.From].(*Machine)
			inflight = m.Tick(inflight)
		case r == 1: // a flip between steps, written through Words
			m.Estimate(nil) // the cache is filled before the flip
			var words []gossip.Word
			for w := range m.Words() {
				words = append(words, w)
			}
			w := words[rng.IntN(len(words))]
			*w.Ptr = math.Float64frombits(math.Float64bits(*w.Ptr) ^ 1<<rng.IntN(52))
			flips++
			inflight, _ = m.Step(msg, inflight)
		case step == 2000:
			m.Exclude(gossip.NodeID((int(msg.To) + 1) % 8))
			inflight, _ = m.Step(msg, inflight)
		default:
			inflight, _ = m.Step(msg, inflight)
		}
		require.Equal(t, freshTotal(m), m.total(), "seed %d step %d", seed, step)
		checks++
	}
	require.Positive(t, flips)
	require.Greater(t, checks, 1000)
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
	checked, bounded, scanned := 0, 0, 0
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
		for n := range m.nbr {
			switch {
			case m.nb[n].pendLo != nil:
				bounded++
			case len(m.nb[n].pendSeq) > 0:
				scanned++
			}
		}
		for _, tol := range tols {
			require.Equal(t, settledNaive(m, tol), m.Settled(tol), "seed %d step %d tol %g", seed, step, tol)
			checked++
		}
	}
	require.Greater(t, checked, 1000)
	// Both ways of answering were taken: bounds for a neighbour with many
	// pending pushes, the pushes themselves for one with a few.
	require.Positive(t, bounded, "neighbours answered from bounds")
	require.Positive(t, scanned, "neighbours answered from their pushes")
}

// TestResendAtIsNeverLate drives machines with Resend set through random
// deliveries, losses, idle steps and an exclusion, and checks after every
// call that resendAt is no later than the first step at which the pass it
// lets resendOld skip would resend: the skipped passes would have sent
// nothing. It also checks that resends happen, so that a bound that never
// lets one through cannot pass.
func TestResendAtIsNeverLate(t *testing.T) {
	const seed, resend = 13, 6
	rng := rand.New(rand.NewPCG(seed, 3))
	inputs := gossiptest.Inputs(6, 2, seed)
	ms, err := gossiptest.Build(gossiptest.Complete(6), inputs, gossip.Average, seed, func(c gossip.Config) (gossip.Machine, error) {
		c.Resend = resend
		return NewChecked(c, Cooperative, 1e-11)
	})
	require.NoError(t, err)
	var inflight []gossip.Message
	for _, m := range ms {
		inflight = m.Tick(inflight)
	}
	for step := range 20000 {
		var msg gossip.Message
		msg, inflight = takeAny(rng, ms, inflight)
		m := ms[msg.To].(*Machine)
		switch r := rng.IntN(10); {
		case r < 3: // lost; its sender steps on its own
			m = ms[msg.From].(*Machine)
			if r == 0 {
				inflight = m.Tick(inflight)
			} else {
				inflight = m.Idle(inflight)
			}
		case step == 5000:
			m.Exclude(gossip.NodeID((int(msg.To) + 1) % 6))
			fallthrough
		default:
			inflight, _ = m.Step(msg, inflight)
		}
		for _, x := range ms {
			x := x.(*Machine)
			for n := range x.nbr {
				if x.nb[n].gone || len(x.nb[n].pendAt) == 0 {
					continue
				}
				due := max(x.nb[n].pendAt[0], x.nb[n].resent) + resend
				require.LessOrEqual(t, x.resendAt, due, "seed %d step %d: node %d, neighbour %d due at step %d", seed, step, x.id, n, due)
			}
		}
	}
	resends := 0
	for _, m := range ms {
		resends += m.(*Machine).cnt.Resends
	}
	require.Greater(t, resends, 100)
}

// pendingNaive is Pending as it was: a pass over the live neighbours'
// unacknowledged pushes.
func pendingNaive(m *Machine) bool {
	for n := range m.nbr {
		if !m.nb[n].gone && len(m.nb[n].pendSeq) > 0 {
			return m.tagged
		}
	}
	return false
}

// TestPendingMatchesScan drives PFCC and plain Push-Flow machines with
// random deliveries, losses, idle steps, asks, exclusions and bit flips (a
// corrupted flow may be zeroed, which forgets its pushes), and checks
// after every event that the counted Pending answers as the pass over
// every neighbour, at the machine that stepped and at the sender.
func TestPendingMatchesScan(t *testing.T) {
	for _, checked := range []bool{false, true} {
		const seed = 17
		rng := rand.New(rand.NewPCG(seed, 3))
		inputs := gossiptest.Inputs(8, 2, seed)
		ms, inflight := started(t, 8, inputs, seed, func(c gossip.Config) (gossip.Machine, error) {
			if checked {
				return NewChecked(c, Local, 1e-11)
			}
			return New(c)
		})
		pending, idle := 0, 0
		for step := range 20000 {
			var msg gossip.Message
			msg, inflight = takeAny(rng, ms, inflight)
			m, from := ms[msg.To].(*Machine), ms[msg.From].(*Machine)
			switch r := rng.IntN(10); {
			case r == 0: // lost: its push stays unacknowledged
				inflight = from.Idle(inflight)
				idle++
			case r == 1:
				inflight = from.Ask(msg.To, inflight)
			case r == 2 && checked:
				var words []gossip.Word
				for w := range m.Words() {
					words = append(words, w)
				}
				w := words[rng.IntN(len(words))]
				*w.Ptr = math.Float64frombits(math.Float64bits(*w.Ptr) ^ 1<<(40+rng.IntN(12)))
				inflight, _ = m.Step(msg, inflight)
			case step%4000 == 3999:
				m.Exclude(gossip.NodeID(rng.IntN(8)))
				inflight, _ = m.Step(msg, inflight)
			default:
				inflight, _ = m.Step(msg, inflight)
			}
			for _, x := range []*Machine{m, from} {
				require.Equal(t, pendingNaive(x), x.Pending(), "checked %v, seed %d, step %d, node %d", checked, seed, step, x.id)
				if x.Pending() {
					pending++
				}
			}
		}
		require.Positive(t, pending)
		require.Positive(t, idle)
	}
}

// started builds machines on a complete overlay of n nodes and ticks each
// once; it returns them and the messages of those ticks.
func started(t *testing.T, n int, inputs [][]float64, seed uint64, mk func(gossip.Config) (gossip.Machine, error)) ([]gossip.Machine, []gossip.Message) {
	t.Helper()
	ms, err := gossiptest.Build(gossiptest.Complete(n), inputs, gossip.Average, seed, mk)
	require.NoError(t, err)
	var inflight []gossip.Message
	for _, m := range ms {
		inflight = m.Tick(inflight)
	}
	return ms, inflight
}

// takeAny takes a message in flight at random, after a Tick of a random
// machine when none is.
func takeAny(rng *rand.Rand, ms []gossip.Machine, inflight []gossip.Message) (gossip.Message, []gossip.Message) {
	for len(inflight) == 0 {
		inflight = ms[rng.IntN(len(ms))].Tick(inflight)
	}
	i := rng.IntN(len(inflight))
	msg := inflight[i]
	inflight[i] = inflight[len(inflight)-1]
	return msg, inflight[:len(inflight)-1]
}
