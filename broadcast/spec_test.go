package broadcast

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
)

func TestParseScheme(t *testing.T) {
	for in, want := range map[string]Scheme{
		"tree:binomial": {Kind: SchemeTree, Tree: TreeSpec{Kind: Binomial}},
		"tree:kary:4":   {Kind: SchemeTree, Tree: TreeSpec{Kind: KAry, K: 4}},
		"tree:lame:2":   {Kind: SchemeTree, Tree: TreeSpec{Kind: Lame, K: 2}},
		"tree:optimal":  {Kind: SchemeTree, Tree: TreeSpec{Kind: Optimal}},
		"gossip":        {Kind: SchemeGossip},
		"bmg":           {Kind: SchemeBMG},
		"ack:binomial":  {Kind: SchemeAck, Tree: TreeSpec{Kind: Binomial}},
		"ack:kary:3":    {Kind: SchemeAck, Tree: TreeSpec{Kind: KAry, K: 3}},
	} {
		got, err := ParseScheme(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
		assert.Equal(t, in, got.String())
	}
	for _, bad := range []string{"", "tree", "tree:", "tree:kary", "tree:kary:x", "tree:kary:0", "tree:binomial:2", "tree:fib", "star", "ack:lame"} {
		_, err := ParseScheme(bad)
		assert.ErrorIs(t, err, gossip.ErrInvalidConfig, bad)
	}
}

func TestParseCorrection(t *testing.T) {
	for in, want := range map[string]Correction{
		"none":                         {},
		"opportunistic:4":              {Kind: CorrectionOpportunistic, D: 4},
		"optimized:2":                  {Kind: CorrectionOptimized, D: 2},
		"opportunistic-synchronized:3": {Kind: CorrectionOpportunistic, D: 3, Synchronized: true},
		"optimized-synchronized:1":     {Kind: CorrectionOptimized, D: 1, Synchronized: true},
		"checked":                      {Kind: CorrectionChecked, Synchronized: true},
		"checked-overlapped":           {Kind: CorrectionChecked},
		"failproof:2":                  {Kind: CorrectionFailProof, F: 2, Synchronized: true},
	} {
		got, err := ParseCorrection(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
		assert.Equal(t, in, got.String())
	}
	for _, bad := range []string{"", "opportunistic", "opportunistic:0", "optimized:-1", "checked:2", "failproof", "failproof:x", "delayed"} {
		_, err := ParseCorrection(bad)
		assert.ErrorIs(t, err, gossip.ErrInvalidConfig, bad)
	}
}

func TestNewPlanValidates(t *testing.T) {
	tree := Scheme{Kind: SchemeTree, Tree: TreeSpec{Kind: Binomial}}
	good := Spec{Nodes: 10, Scheme: tree, Correction: Correction{Kind: CorrectionChecked, Synchronized: true}, Model: LogP{L: 2, O: 1}}
	_, err := NewPlan(good)
	require.NoError(t, err)
	for name, edit := range map[string]func(*Spec){
		"no nodes":           func(s *Spec) { s.Nodes = 0 },
		"too many":           func(s *Spec) { s.Nodes = MaxNodes + 1 },
		"o = 0":              func(s *Spec) { s.Model.O = 0 },
		"negative L":         func(s *Spec) { s.Model.L = -1 },
		"live > N":           func(s *Spec) { s.Live = 11 },
		"delta ≥ 1":          func(s *Spec) { s.Delta = 1 },
		"NaN delta":          func(s *Spec) { s.Delta = math.NaN() },
		"negative T":         func(s *Spec) { s.GossipT = -1 },
		"D = 0":              func(s *Spec) { s.Correction = Correction{Kind: CorrectionOpportunistic} },
		"F too big":          func(s *Spec) { s.Correction = Correction{Kind: CorrectionFailProof, F: MaxFailProof + 1} },
		"unknown correction": func(s *Spec) { s.Correction.Kind = 99 },
		"unknown scheme":     func(s *Spec) { s.Scheme.Kind = 99 },
		"bad tree":           func(s *Spec) { s.Scheme.Tree = TreeSpec{Kind: KAry} },
		"bmg + correction":   func(s *Spec) { s.Scheme = Scheme{Kind: SchemeBMG} },
		"ack + correction":   func(s *Spec) { s.Scheme.Kind = SchemeAck },
		"gossip alone":       func(s *Spec) { s.Nodes, s.Scheme, s.GossipT = 1, Scheme{Kind: SchemeGossip}, 5 },
	} {
		s := good
		edit(&s)
		_, err := NewPlan(s)
		assert.ErrorIs(t, err, gossip.ErrInvalidConfig, name)
	}
}

// A plan resolves its defaults: the synchronized start is the tree's
// deadline or T+L+o, gossip and fail-proof correction are synchronized,
// opportunistic distances never wrap past the ring.
func TestPlanDefaults(t *testing.T) {
	p := mustPlan(t, "tree:lame:2", "checked", 100, LogP{L: 2, O: 1})
	st, ok := p.CorrectionStart()
	require.True(t, ok)
	assert.Equal(t, p.Tree().Deadline(LogP{L: 2, O: 1}), st)
	_, ok = mustPlan(t, "tree:lame:2", "checked-overlapped", 100, LogP{L: 2, O: 1}).CorrectionStart()
	assert.False(t, ok)
	g := mustPlan(t, "gossip", "opportunistic:2", 1024, LogP{L: 1, O: 1})
	T, k := g.GossipTime()
	assert.Equal(t, int64(24), T, "equation 3 with a margin of one O")
	assert.Equal(t, 4, k)
	st, ok = g.CorrectionStart()
	require.True(t, ok)
	assert.Equal(t, T+2, st, "T + L + o")
	small := mustPlan(t, "tree:binomial", "opportunistic:5", 4, LogP{L: 2, O: 1})
	assert.Equal(t, int32(2), small.dl) // left distances 1, 2 (2 ≡ -2 mod 4)
	assert.Equal(t, int32(1), small.dr)
	fp := mustPlan(t, "tree:binomial", "failproof:1", 64, LogP{L: 2, O: 1}).Spec()
	assert.True(t, fp.Correction.Synchronized)
	assert.Equal(t, int64(2*64*1+2*4), fp.SOSTimeout, "2·N·o + 2(2o+L)")
	ack := mustPlan(t, "ack:binomial", "none", 64, LogP{L: 2, O: 1}).Spec()
	assert.Positive(t, ack.AckTimeout)
}

// Corrected gossip, Lemma 1 and equations 2-4, N = n = 1024, L = O = 1,
// δ = 6.93·10⁻⁷: c(t) grows fastest around 512 colored (the paper's
// figure 1: "up to around 512 nodes (t ≈ 18)"), and the approximations
// choose T = 24 for OCG and 25 for CCG, as in the paper.
func TestGossipApproximations(t *testing.T) {
	m := GossipModel{Nodes: 1024, Model: LogP{L: 1, O: 1}, Delta: DefaultDelta, F: 1}
	c, err := ExpectedColored(m, 40)
	require.NoError(t, err)
	assert.Equal(t, 1.0, c[0])
	assert.Equal(t, 1.0, c[2], "the first message is received at 2O+L = 3")
	assert.InDelta(t, 2.0, c[3], 1e-12, "1 + 1023·(1/1023)")
	fastest := 0
	for i := 1; i < len(c); i++ {
		if c[i]-c[i-1] > c[fastest+1]-c[fastest] {
			fastest = i - 1
		}
	}
	assert.InDelta(t, 18, fastest, 1, "steepest step")
	assert.InDelta(t, 512, c[fastest], 200)
	// The uncolored remainder shrinks by a factor of about e per step once
	// nearly all are colored; at t = 40 it is a few millionths.
	assert.InDelta(t, 1024, c[40], 1e-4)
	ocg, err := OptimalGossipTime(m, GossipOpportunistic)
	require.NoError(t, err)
	assert.Equal(t, 24, ocg.T)
	assert.Equal(t, 23, ocg.ArgMin)
	ccg, err := OptimalGossipTime(m, GossipChecked)
	require.NoError(t, err)
	assert.Equal(t, 25, ccg.T)
	assert.Equal(t, 24, ccg.ArgMin)
	fcg, err := OptimalGossipTime(m, GossipFailProof)
	require.NoError(t, err)
	assert.Greater(t, fcg.T, ccg.T, "fail-proof correction takes longer, so gossip longer")
	// K̂ shrinks as more processes are colored, and the tail is below δ.
	k1, tail1 := MaxGapQuantile(1024, 900, DefaultDelta)
	k2, tail2 := MaxGapQuantile(1024, 1020, DefaultDelta)
	assert.Greater(t, k1, k2)
	assert.Less(t, tail1, DefaultDelta)
	assert.Less(t, tail2, DefaultDelta)
	// Everyone colored: no gap.
	k0, _ := MaxGapQuantile(1024, 1024, DefaultDelta)
	assert.Zero(t, k0)
	_, err = OptimalGossipTime(GossipModel{Nodes: 1}, GossipChecked)
	assert.ErrorIs(t, err, gossip.ErrInvalidConfig)
	_, err = OptimalGossipTime(GossipModel{Nodes: 100, Delta: 0.1, Model: LogP{O: 1}}, GossipFailProof)
	assert.ErrorIs(t, err, gossip.ErrInvalidConfig, "f = 0")
}

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
	p := mustPlan(t, "gossip", "checked", 300, LogP{L: 2, O: 1})
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
	p := mustPlan(t, "tree:binomial", "checked", 10, LogP{L: 2, O: 1})
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
