package sim_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
	"github.com/gossipreduce/gossipreduce/sim"
	"github.com/gossipreduce/gossipreduce/topology"
)

// graph turns a gossiptest overlay into a topology.Graph.
type graph struct {
	gossip.Neighborhood
	name string
}

func (g graph) Name() string   { return g.name }
func (g graph) Directed() bool { return false }

func hypercube(d int) topology.Graph { return graph{gossiptest.Hypercube(d), "hypercube"} }
func complete(n int) topology.Graph  { return graph{gossiptest.Complete(n), "complete"} }

func TestPushSumConvergesEverywhere(t *testing.T) {
	r, err := sim.Run(context.Background(), sim.Config{Overlay: hypercube(5), Epsilon: 1e-11, Seed: 1})
	require.NoError(t, err)
	assert.True(t, r.Converged)
	assert.Equal(t, "all-accurate", r.Reason)
	assert.LessOrEqual(t, r.MaxRelError, 1e-11)
	assert.Equal(t, 32, r.Nodes)
	assert.Equal(t, 32, r.Live)
	assert.GreaterOrEqual(t, float64(r.MaxMsgs), r.MeanMsgs)
	assert.Positive(t, r.MeanMsgs)
	// One send per receive and one initial tick each: every event but the
	// 32 ticks is a delivery, and each delivery causes one send.
	assert.Equal(t, r.TotalMsgs, r.Events)
}

func TestRunIsDeterministicPerSeed(t *testing.T) {
	cfg := sim.Config{Overlay: complete(20), Epsilon: 1e-9, Seed: 42, Jitter: 0.5, Components: 3}
	a, err := sim.Run(context.Background(), cfg)
	require.NoError(t, err)
	b, err := sim.Run(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, a, b)
	cfg.Seed = 43
	c, err := sim.Run(context.Background(), cfg)
	require.NoError(t, err)
	assert.NotEqual(t, a.Exact, c.Exact, "another seed draws other inputs")
}

func TestRecursiveDoublingInTheSimulator(t *testing.T) {
	for _, n := range []int{5, 32} {
		r, err := sim.Run(context.Background(), sim.Config{Algorithm: "rdb", Overlay: complete(n), Epsilon: 1e-14, Seed: 3})
		require.NoError(t, err)
		assert.True(t, r.Converged, "n=%d: %s", n, r.Reason)
		// ⌊log2 N⌋ exchanges, plus one fold message for the extra ranks.
		assert.LessOrEqual(t, r.MaxMsgs, int(math.Floor(math.Log2(float64(n))))+1)
	}
}

func TestStopFirstIsCheaper(t *testing.T) {
	all, err := sim.Run(context.Background(), sim.Config{Overlay: hypercube(6), Epsilon: 1e-12, Seed: 5})
	require.NoError(t, err)
	first, err := sim.Run(context.Background(), sim.Config{Overlay: hypercube(6), Epsilon: 1e-12, Seed: 5, Stop: sim.StopFirst})
	require.NoError(t, err)
	assert.Equal(t, "first-accurate", first.Reason)
	assert.Less(t, first.MaxMsgs, all.MaxMsgs)
}

func TestMessageCap(t *testing.T) {
	// 1e-300 is far below what float64 Push-Sum can reach.
	r, err := sim.Run(context.Background(), sim.Config{Overlay: hypercube(3), Epsilon: 1e-300, MaxMsgs: 50, Seed: 1})
	require.NoError(t, err)
	assert.False(t, r.Converged)
	assert.Equal(t, "message-cap", r.Reason)
	assert.Equal(t, 50, r.MaxMsgs)
}

func TestLossBreaksPushSum(t *testing.T) {
	r, err := sim.Run(context.Background(), sim.Config{Overlay: hypercube(5), Epsilon: 1e-11, Loss: 0.2, MaxMsgs: 500, Seed: 2})
	require.NoError(t, err)
	assert.Positive(t, r.Lost)
	assert.False(t, r.Converged, "lost mass makes Push-Sum converge to a wrong value")
	// Losing a fifth of the messages loses far more than 1e-6 of the mass.
	assert.Greater(t, r.MaxRelError, 1e-6)
}

func TestDeadNodesExcludedAtOnceGiveTheSurvivorsAggregate(t *testing.T) {
	r, err := sim.Run(context.Background(), sim.Config{
		Overlay: hypercube(5), Epsilon: 1e-11, Seed: 4, Dead: []gossip.NodeID{3, 17},
	})
	require.NoError(t, err)
	assert.Equal(t, 30, r.Live)
	assert.True(t, r.Converged, r.Reason)
	assert.Zero(t, r.Lost, "excluded before the first send, nothing goes to the dead")
}

func TestCrashWithoutDetectionStallsPushSum(t *testing.T) {
	r, err := sim.Run(context.Background(), sim.Config{
		Overlay: hypercube(4), Epsilon: 1e-11, Seed: 4, MaxMsgs: 400, DetectAfter: -1,
		Crashes: []sim.Crash{{Node: 5, At: 3}},
	})
	require.NoError(t, err)
	assert.Equal(t, 15, r.Live)
	assert.Positive(t, r.Lost)
	assert.False(t, r.Converged, "the crashed node's mass is gone and it is never excluded")
}

// countingInjector counts the calls a driver makes and corrupts one word.
type countingInjector struct {
	msgs, states int
	flipAt       int
}

func (c *countingInjector) InjectMessage(p gossip.InjectPoint, m *gossip.Message) { c.msgs++ }
func (c *countingInjector) InjectState(p gossip.InjectPoint, m gossip.Machine) {
	c.states++
	if p.Node == 0 && p.Sent == c.flipAt {
		for w := range m.Words() {
			if w.Part == gossip.PartWeight {
				*w.Ptr *= 4 // creates mass: Push-Sum cannot recover
			}
		}
	}
}

func TestInjectorSeesEveryMessageAndStep(t *testing.T) {
	inj := &countingInjector{flipAt: 10}
	r, err := sim.Run(context.Background(), sim.Config{Overlay: hypercube(4), Epsilon: 1e-11, Seed: 9, MaxMsgs: 300, Injector: inj})
	require.NoError(t, err)
	assert.Equal(t, int(r.TotalMsgs), inj.msgs)
	assert.Equal(t, int(r.Events)+16, inj.states, "once before the start and once per event, per node")
	assert.False(t, r.Converged)
}

func TestTraceShowsConvergence(t *testing.T) {
	r, err := sim.Run(context.Background(), sim.Config{Overlay: hypercube(5), Epsilon: 1e-11, Seed: 6, TraceEvery: 5})
	require.NoError(t, err)
	require.Greater(t, len(r.Trace), 5)
	assert.Greater(t, r.Trace[0].MaxRelError, 1e-3)
	assert.Less(t, r.Trace[len(r.Trace)-1].MaxRelError, 1e-8)
	for i := 1; i < len(r.Trace); i++ {
		assert.Greater(t, r.Trace[i].Time, r.Trace[i-1].Time)
	}
}

func TestOverheadSlowsTheClock(t *testing.T) {
	fast, err := sim.Run(context.Background(), sim.Config{Overlay: hypercube(4), Epsilon: 1e-10, Seed: 1})
	require.NoError(t, err)
	slow, err := sim.Run(context.Background(), sim.Config{Overlay: hypercube(4), Epsilon: 1e-10, Seed: 1, O: 0.5})
	require.NoError(t, err)
	// Each hop costs L + 2o instead of L.
	assert.Greater(t, slow.SimTime, 1.5*fast.SimTime)
	hops, err := sim.Run(context.Background(), sim.Config{Overlay: hypercube(4), Epsilon: 1e-10, Seed: 1,
		Distance: func(from, to gossip.NodeID) float64 { return 3 }})
	require.NoError(t, err)
	assert.InDelta(t, 3*fast.SimTime, hops.SimTime, 1e-9, "a constant distance factor scales time only")
	assert.Equal(t, fast.MaxMsgs, hops.MaxMsgs)
}

func TestBadConfigs(t *testing.T) {
	ok := sim.Config{Overlay: hypercube(3), Epsilon: 1e-9}
	cases := map[string]func(*sim.Config){
		"no overlay":    func(c *sim.Config) { c.Overlay = nil },
		"eps zero":      func(c *sim.Config) { c.Epsilon = 0 },
		"eps NaN":       func(c *sim.Config) { c.Epsilon = math.NaN() },
		"eps one":       func(c *sim.Config) { c.Epsilon = 1 },
		"loss one":      func(c *sim.Config) { c.Loss = 1 },
		"negative L":    func(c *sim.Config) { c.L = -1 },
		"Inf o":         func(c *sim.Config) { c.O = math.Inf(1) },
		"dead range":    func(c *sim.Config) { c.Dead = []gossip.NodeID{8} },
		"crash range":   func(c *sim.Config) { c.Crashes = []sim.Crash{{Node: 9}} },
		"crash NaN":     func(c *sim.Config) { c.Crashes = []sim.Crash{{Node: 1, At: math.NaN()}} },
		"NaN input":     func(c *sim.Config) { c.Inputs = gossiptest.Inputs(8, 1, 1); c.Inputs[2][0] = math.NaN() },
		"short inputs":  func(c *sim.Config) { c.Inputs = gossiptest.Inputs(7, 1, 1) },
		"ragged inputs": func(c *sim.Config) { c.Inputs = gossiptest.Inputs(8, 2, 1); c.Inputs[3] = []float64{1} },
		"negative cap":  func(c *sim.Config) { c.MaxMsgs = -1 },
		"all dead":      func(c *sim.Config) { c.Dead = []gossip.NodeID{0, 1, 2, 3, 4, 5, 6, 7} },
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			c := ok
			edit(&c)
			_, err := sim.Run(context.Background(), c)
			require.Error(t, err)
			assert.Equal(t, 1, gossiptest.PrefixCount(err), "%q should name one package", err)
		})
	}
	_, err := sim.Run(context.Background(), sim.Config{Algorithm: "bogus", Overlay: hypercube(3), Epsilon: 1e-9})
	assert.ErrorIs(t, err, gossip.ErrUnknownAlgorithm)
}

func TestCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := sim.Run(ctx, sim.Config{Overlay: hypercube(5), Epsilon: 1e-11})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, "cancelled", r.Reason)
}

func TestRunManyReplaysEachSeed(t *testing.T) {
	cfg := sim.Config{Overlay: hypercube(4), Epsilon: 1e-10, Seed: 100}
	var calls int
	rs, err := sim.RunMany(context.Background(), cfg, 6, 2, func(done, total int) { calls++ })
	require.NoError(t, err)
	require.Len(t, rs, 6)
	assert.Equal(t, 6, calls)
	for i, r := range rs {
		c := cfg
		c.Seed = cfg.Seed + uint64(i)
		one, err := sim.Run(context.Background(), c)
		require.NoError(t, err)
		assert.Equal(t, one, r)
	}
	s := sim.Summarize(rs)
	assert.Equal(t, 6, s.Runs)
	assert.Equal(t, 6, s.Converged)
	assert.Equal(t, uint64(100), s.FirstSeed)
	assert.Equal(t, uint64(105), s.LastSeed)

	_, err = sim.RunMany(context.Background(), cfg, 0, 1, nil)
	assert.Error(t, err)
}
