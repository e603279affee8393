package bsim

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/broadcast"
	"github.com/gossipreduce/gossipreduce/broadcast/internal/plantest"
	"github.com/gossipreduce/gossipreduce/gossip"
)

func TestPercentiles(t *testing.T) {
	xs := make([]float64, 1000)
	for i := range xs {
		xs[i] = float64(1000 - i) // 1000 … 1
	}
	d := NewDist(xs)
	// Nearest rank: the ⌈q·n⌉-th smallest.
	assert.Equal(t, 500.0, d.P50)
	assert.Equal(t, 990.0, d.P99)
	assert.Equal(t, 999.0, d.P999)
	assert.Equal(t, 1000.0, d.Max)
	assert.Equal(t, 0, d.MaxRun)
	assert.InDelta(t, 500.5, d.Mean, 1e-9) // exact in float64
	one := NewDist([]float64{7})
	assert.Equal(t, Dist{P50: 7, P99: 7, P999: 7, Max: 7, Mean: 7}, one)
	assert.True(t, math.IsNaN(NewDist(nil).P50))
}

// A campaign is deterministic, run i replays alone with seed Seed+i, and
// the number of workers does not change the result.
func TestCampaignReplay(t *testing.T) {
	ctx := context.Background()
	p := plantest.MustPlan(t, "gossip", "checked", 300, broadcast.LogP{L: 2, O: 1})
	a, err := Campaign{Plan: p, Faults: 9, Runs: 12, Seed: 100, Workers: 1, Keep: true}.Run(ctx)
	require.NoError(t, err)
	b, err := Campaign{Plan: p, Faults: 9, Runs: 12, Seed: 100, Workers: 3, Keep: true}.Run(ctx)
	require.NoError(t, err)
	assert.Equal(t, a, b)
	one, err := Campaign{Plan: p, Faults: 9, Runs: 1, Seed: 107, Keep: true}.Run(ctx)
	require.NoError(t, err)
	assert.Equal(t, a.Results[7], one.Results[0])
	assert.Equal(t, 12, a.Runs)
	assert.Equal(t, EngineFast, a.Engine)
	m, err := Campaign{Plan: p, Faults: 9, Runs: 12, Seed: 100, Engine: EngineMachines, Keep: true}.Run(ctx)
	require.NoError(t, err)
	assert.Equal(t, a.Results, m.Results, "both engines agree run by run")
	done := 0
	_, err = Campaign{Plan: p, Runs: 5, Seed: 1, Workers: 1, Progress: func(d int) { done = d }}.Run(ctx)
	require.NoError(t, err)
	assert.Equal(t, 5, done)
}

func TestCampaignErrors(t *testing.T) {
	ctx := context.Background()
	p := plantest.MustPlan(t, "tree:binomial", "checked", 10, broadcast.LogP{L: 2, O: 1})
	for name, c := range map[string]Campaign{
		"no plan":          {Runs: 1},
		"no runs":          {Plan: p},
		"too many faults":  {Plan: p, Runs: 1, Faults: 10},
		"negative faults":  {Plan: p, Runs: 1, Faults: -1},
		"fast with online": {Plan: p, Runs: 1, OnlineFaults: 1, Engine: EngineFast},
		"bad engine":       {Plan: p, Runs: 1, Engine: 9},
	} {
		_, err := c.Run(ctx)
		assert.ErrorIs(t, err, gossip.ErrInvalidConfig, name)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err := Campaign{Plan: p, Runs: 50}.Run(cancelled)
	assert.ErrorIs(t, err, context.Canceled)
	for _, s := range []string{"auto", "fast", "machines"} {
		e, err := ParseEngine(s)
		require.NoError(t, err)
		assert.Equal(t, s, e.String())
	}
	_, err = ParseEngine("warp")
	assert.ErrorIs(t, err, gossip.ErrInvalidConfig)
}

// DrawFailures picks distinct non-root processes, uniformly: over many
// draws every non-root process fails about equally often.
func TestDrawFailures(t *testing.T) {
	src := newTestSource(3)
	counts := make([]int, 50)
	const draws = 20000
	for range draws {
		f, err := DrawFailures(src, 50, 10)
		require.NoError(t, err)
		k := 0
		for v, d := range f.Dead {
			if d {
				counts[v]++
				k++
			}
		}
		require.Equal(t, 10, k)
		require.False(t, f.Dead[0])
	}
	// Each non-root process fails with probability 10/49; the count is
	// binomial with σ = sqrt(draws·p(1-p)) ≈ 57, so 5σ ≈ 285 bounds every
	// one of them with overwhelming probability.
	want := float64(draws) * 10 / 49
	for v := 1; v < 50; v++ {
		assert.InDelta(t, want, float64(counts[v]), 285, "process %d", v)
	}
	_, err := DrawFailures(src, 5, 5)
	assert.ErrorIs(t, err, gossip.ErrInvalidConfig)
}

func newTestSource(seed uint64) *rand.PCG { return rand.NewPCG(seed, seed) }
