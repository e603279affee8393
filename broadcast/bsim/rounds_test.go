package bsim

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/broadcast"
	"github.com/gossipreduce/gossipreduce/broadcast/internal/plantest"
	"github.com/gossipreduce/gossipreduce/gossip"
)

// exactAllColored returns the exact probability that gossip alone colors
// all n processes in the given number of rounds, by enumerating every
// acting order and every choice of target: a computation that shares
// nothing with RoundSimulator but the model's definition. The state is
// the set of colored processes (bit v for process v); the root starts
// colored.
func exactAllColored(n, rounds int, synchronous bool) float64 {
	full := 1<<n - 1
	dist := map[int]float64{1: 1}
	perms := permutations(n)
	for range rounds {
		next := map[int]float64{}
		for set, p := range dist {
			if synchronous {
				// The processes colored at the start push, each to one
				// of the n-1 others.
				var senders []int
				for v := range n {
					if set&(1<<v) != 0 {
						senders = append(senders, v)
					}
				}
				var each func(i, cur int, q float64)
				each = func(i, cur int, q float64) {
					if i == len(senders) {
						next[cur] += q
						return
					}
					for to := range n {
						if to != senders[i] {
							each(i+1, cur|1<<to, q/float64(n-1))
						}
					}
				}
				each(0, set, p)
				continue
			}
			for _, perm := range perms {
				// In this order, whoever is colored at its turn pushes.
				var turn func(i, cur int, q float64)
				turn = func(i, cur int, q float64) {
					if i == n {
						next[cur] += q
						return
					}
					v := perm[i]
					if cur&(1<<v) == 0 {
						turn(i+1, cur, q)
						return
					}
					for to := range n {
						if to != v {
							turn(i+1, cur|1<<to, q/float64(n-1))
						}
					}
				}
				turn(0, set, p/float64(len(perms)))
			}
		}
		dist = next
	}
	return dist[full]
}

// permutations lists every order of 0 … n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int{}, p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}

// The exact computation agrees with cases worked by hand. N = 3, one
// unsynchronized round: the root colors some x; x pushes in the same
// round only if its turn comes after the root's (probability 1/2 over the
// 6 orders), and then reaches the third process with probability 1/2:
// 1/4. Synchronously one round colors one process (0); two rounds fail
// only if the root and x both miss the third (each 1/2): 3/4.
func TestExactRoundsByHand(t *testing.T) {
	assert.InDelta(t, 0.25, exactAllColored(3, 1, false), 1e-12)
	assert.InDelta(t, 0.0, exactAllColored(3, 1, true), 1e-12)
	assert.InDelta(t, 0.75, exactAllColored(3, 2, true), 1e-12)
	assert.Len(t, permutations(4), 24)
}

// The simulator's frequency of full coloring matches the exact probability
// for small N in both orders.
func TestRoundSimulatorExact(t *testing.T) {
	ctx := context.Background()
	const runs = 100000
	for _, c := range []struct {
		n, rounds int
		sync      bool
	}{{5, 3, false}, {5, 3, true}, {4, 2, false}, {5, 4, true}} {
		p := gossipPlan(t, c.n, c.rounds)
		exact := exactAllColored(c.n, c.rounds, c.sync)
		e := EngineRounds
		if c.sync {
			e = EngineSyncRounds
		}
		s, err := Campaign{Plan: p, Runs: runs, Seed: 7, Engine: e}.Run(ctx)
		require.NoError(t, err)
		got := float64(runs-s.UncoloredRuns) / runs
		// Binomial standard error of a frequency over `runs` runs; 4.5 of
		// them is a false alarm about once in 150,000 seeds.
		se := math.Sqrt(exact * (1 - exact) / runs)
		assert.InDelta(t, exact, got, 4.5*se, "N=%d T=%d sync=%v", c.n, c.rounds, c.sync)
		assert.Greater(t, exact, 0.05, "a case worth testing")
		assert.Less(t, exact, 0.95, "a case worth testing")
	}
}

// Corrected gossip III: "for N = 1,000 and T = 17, the gossip colors all
// the nodes only 95.1 % of the time" (T = ⌈1.639·log₂ 1000⌉, Drezner and
// Barak's bound). Synchronous push rounds color everyone far less often.
func TestRoundsCorrectedGossipExample(t *testing.T) {
	ctx := context.Background()
	require.Equal(t, 17, DreznerBarakRounds(1000))
	p := gossipPlan(t, 1000, 17)
	const runs = 4000
	s, err := Campaign{Plan: p, Runs: runs, Seed: 1, Engine: EngineRounds}.Run(ctx)
	require.NoError(t, err)
	all := float64(runs-s.UncoloredRuns) / runs
	// 95.1 % is the paper's figure; the binomial standard error over 4000
	// runs is 0.34 %, and 1.5 % is over 4 of them.
	assert.InDelta(t, 0.951, all, 0.015)
	assert.Equal(t, EngineRounds, s.Engine)
	assert.Equal(t, 17.0, s.Quiescence.Max, "quiescence is T rounds")
	sy, err := Campaign{Plan: p, Runs: runs, Seed: 1, Engine: EngineSyncRounds}.Run(ctx)
	require.NoError(t, err)
	// Synchronous push: 38.2 % in 20,000 runs (docs/broadcast.md); the
	// standard error over 4000 runs is 0.77 %, and 3.5 % is over 4 of them.
	assert.InDelta(t, 0.382, float64(runs-sy.UncoloredRuns)/runs, 0.035)
}

// Invariants of every run, with failures: the root is colored at round 0,
// dead processes never, colorings fall in rounds 1 … T, the uncolored count
// and the coloring latency agree with ColorAt, every message comes from a
// live colored process (at most T per process, and at least one per round
// from the root), and a run replays from its seed.
func TestRoundSimulatorInvariants(t *testing.T) {
	ctx := context.Background()
	const n, T = 200, 9
	p := gossipPlan(t, n, T)
	for _, sync := range []bool{false, true} {
		sim, err := NewRoundSimulator(p, sync)
		require.NoError(t, err)
		for seed := uint64(0); seed < 50; seed++ {
			dead := make([]bool, n)
			for v := 1; v < n; v += 7 {
				dead[v] = true
			}
			r, err := sim.Run(ctx, dead, seed, true)
			require.NoError(t, err)
			assert.Equal(t, int64(0), r.ColorAt[0])
			uncolored, last, colored := 0, int64(0), 0
			for v, c := range r.ColorAt {
				switch {
				case dead[v]:
					assert.Equal(t, int64(-1), c)
				case c < 0:
					uncolored++
				default:
					colored++
					assert.LessOrEqual(t, c, int64(T))
					assert.Equal(t, v == 0, c == 0)
					last = max(last, c)
				}
			}
			assert.Equal(t, uncolored, r.Uncolored)
			assert.Equal(t, last, r.ColoringLatency)
			assert.Equal(t, 29, r.Dead)
			assert.GreaterOrEqual(t, r.Msgs, int64(T))
			assert.LessOrEqual(t, r.Msgs, int64(colored*T))
			again, err := sim.Run(ctx, dead, seed, true)
			require.NoError(t, err)
			assert.Equal(t, r, again)
		}
	}
}

func TestRoundSimulatorErrors(t *testing.T) {
	ctx := context.Background()
	_, err := NewRoundSimulator(plantest.MustPlan(t, "gossip", "checked", 100, broadcast.LogP{L: 1, O: 1}), false)
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "bsim: ")
	_, err = NewRoundSimulator(nil, false)
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	_, err = Campaign{Plan: plantest.MustPlan(t, "tree:binomial", "none", 100, broadcast.LogP{L: 1, O: 1}), Runs: 1, Engine: EngineRounds}.Run(ctx)
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	p := gossipPlan(t, 100, 5)
	_, err = Campaign{Plan: p, Runs: 1, OnlineFaults: 1, Engine: EngineSyncRounds}.Run(ctx)
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	sim, err := NewRoundSimulator(p, false)
	require.NoError(t, err)
	_, err = sim.Run(ctx, make([]bool, 3), 1, false)
	require.ErrorIs(t, err, gossip.ErrLength)
	dead := make([]bool, 100)
	dead[0] = true
	_, err = sim.Run(ctx, dead, 1, false)
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	for _, name := range []string{"rounds", "sync-rounds"} {
		e, err := ParseEngine(name)
		require.NoError(t, err)
		assert.Equal(t, name, e.String())
	}
	assert.Zero(t, DreznerBarakRounds(1))
}

// gossipPlan is gossip alone over n processes for T rounds (or LogP time).
func gossipPlan(t *testing.T, n, T int) *broadcast.Plan {
	t.Helper()
	s, err := broadcast.ParseScheme("gossip")
	require.NoError(t, err)
	p, err := broadcast.NewPlan(broadcast.Spec{Nodes: n, Scheme: s, Model: broadcast.LogP{L: 1, O: 1}, GossipT: T})
	require.NoError(t, err)
	return p
}
