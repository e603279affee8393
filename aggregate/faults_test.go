package aggregate_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
	"github.com/gossipreduce/gossipreduce/internal/livegroup"
	"github.com/gossipreduce/gossipreduce/sdc"
	"github.com/gossipreduce/gossipreduce/transport"
)

func memory(t *testing.T, loss float64, seed uint64) *transport.Memory {
	t.Helper()
	tr, err := transport.NewMemory(transport.MemoryOptions{Options: transport.Options{Loss: loss, Seed: seed}})
	require.NoError(t, err)
	t.Cleanup(func() { tr.Close() })
	return tr
}

func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestEveryAlgorithmAgrees(t *testing.T) {
	for _, name := range []string{"ps", "pf", "pflc", "pfcc", "rdb", "central"} {
		t.Run(name, func(t *testing.T) {
			tr := memory(t, 0, 1)
			nodes := group(t, tr, 12, aggregate.Config{Group: "algo-" + name, Algorithm: name, Epsilon: 1e-9})
			inputs := gossiptest.Inputs(12, 3, 2)
			o := averageAll(timeout(t, 20*time.Second), nodes, inputs)
			requireOK(t, o, 1e-9)
		})
	}
}

func TestRepeatedOperationsNeverMix(t *testing.T) {
	tr := memory(t, 0, 1)
	nodes := group(t, tr, 8, aggregate.Config{Group: "epochs", Epsilon: 1e-10})
	ctx := timeout(t, 20*time.Second)
	for round := range 5 {
		inputs := gossiptest.Inputs(8, 1, uint64(100+round))
		o := averageAll(ctx, nodes, inputs)
		requireOK(t, o, 1e-10)
		assert.Equal(t, uint64(round+1), o.Results[0].Epoch)
	}
}

func TestSumCountsTheLive(t *testing.T) {
	tr := memory(t, 0, 1)
	nodes := group(t, tr, 10, aggregate.Config{Group: "sum", Epsilon: 1e-10})
	res := make([]aggregate.Result, 10)
	errs := make([]error, 10)
	var wg sync.WaitGroup
	for i, nd := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i], errs[i] = nd.Sum(timeout(t, 20*time.Second), []float64{float64(i + 1)})
		}()
	}
	wg.Wait()
	for i := range res {
		require.NoError(t, errs[i], "node %d", i)
		require.Equal(t, math.Float64bits(res[0].Value[0]), math.Float64bits(res[i].Value[0]), "node %d", i)
	}
	assert.InDelta(t, 55, res[0].Value[0], 55e-10)
}

// TestMessageLoss loses a fifth of all messages: the default (exchange)
// resends what it stored, PFCC gossips on.
func TestMessageLoss(t *testing.T) {
	for _, alg := range []string{"", "pfcc"} {
		tr := memory(t, 0.2, 7)
		nodes := group(t, tr, 16, aggregate.Config{Group: "loss", Algorithm: alg, Epsilon: 1e-9})
		inputs := gossiptest.Inputs(16, 1, 3)
		o := averageAll(timeout(t, 30*time.Second), nodes, inputs)
		requireOK(t, o, 1e-9)
		assert.Positive(t, tr.Stats().Lost, "algorithm %q", alg)
	}
}

// runWithCrashes runs one Average where the members in crash die after
// sending after messages: silently, at the transport, as a process that
// is killed (the harness's crash would close them, which announces it).
// The member falls silent at once, on its own goroutine; its Close runs
// on another.
func runWithCrashes(t *testing.T, n int, algorithm string, after int, crash []gossip.NodeID) *livegroup.Outcome {
	t.Helper()
	g := joinWithCrashes(t, n, algorithm, after, crash)
	o := g.Average(timeout(t, 30*time.Second), gossiptest.Inputs(n, 1, 4))
	for _, c := range crash {
		assert.Error(t, o.Errs[c], "member %d crashed: it gets no result", c)
	}
	return o
}

// joinWithCrashes joins the group runWithCrashes runs (Suspect 150 ms),
// whose members crash go silent after sending after messages.
func joinWithCrashes(t *testing.T, n int, algorithm string, after int, crash []gossip.NodeID) *livegroup.Group {
	t.Helper()
	tr := memory(t, 0, 1)
	cfg := aggregate.Config{Group: "crash", Algorithm: algorithm, Epsilon: 1e-9, Suspect: 150 * time.Millisecond}
	var g *livegroup.Group
	f := livegroup.Faults{Crash: crash, CrashAfter: after, FlipBit: -1, // Kill: nil, Close
		Silence: func(id gossip.NodeID) {
			tr.Crash(transport.Group{Name: cfg.Group, ConfigHash: g.Nodes[id].ConfigHash()}, id)
		}}
	g, err := livegroup.Join(context.Background(), tr, cfg, n, f)
	require.NoError(t, err)
	t.Cleanup(g.Close)
	return g
}

func joinOne(t *testing.T, tr transport.Transport, cfg aggregate.Config) *aggregate.Node {
	nd, err := aggregate.Join(context.Background(), tr, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { nd.Close() })
	return nd
}

func TestCrashedNodesAreExcluded(t *testing.T) {
	o := runWithCrashes(t, 16, "pfcc", 10, []gossip.NodeID{5, 11})
	requireOK(t, o, 1e-9)
	assert.Equal(t, 14, o.Results[0].Live)
}

// TestExchangeCrashes crashes members of the default algorithm before
// their first message or just after it, the lowest member among them: the
// survivors return one result, exact for the inputs it names. A member
// whose first message got out is covered, one whose did not is left out
// by the fallback to PFCC.
func TestExchangeCrashes(t *testing.T) {
	for _, after := range []int{0, 1} {
		for _, crash := range [][]gossip.NodeID{{5}, {0}, {3, 12}} {
			o := runWithCrashes(t, 16, "", after, crash)
			requireOK(t, o, 1e-9)
			r := o.Results[slices.IndexFunc(o.Alive, func(a bool) bool { return a })]
			assert.GreaterOrEqual(t, r.Live, 16-len(crash), "after %d, crash %v", after, crash)
			for _, a := range r.Absent {
				assert.Contains(t, crash, a, "only crashed members are left out")
			}
		}
	}
}

func TestRootCrash(t *testing.T) {
	o := runWithCrashes(t, 16, "pfcc", 10, []gossip.NodeID{0})
	requireOK(t, o, 1e-9)
	assert.Equal(t, 15, o.Results[1].Live)
	assert.NotEqual(t, gossip.NodeID(0), o.Results[1].Root, "another member took over")
}

func TestBitFlipInAFlow(t *testing.T) {
	for _, bit := range []int{3, 40, 56, 62} {
		tr := memory(t, 0, 1)
		cfgs := aggregate.Config{Group: "sdc", Algorithm: "pfcc", Epsilon: 1e-9}
		flipper, err := sdc.NewSingle(bit, sdc.Flow, 8, 0)
		require.NoError(t, err)
		nodes := make([]*aggregate.Node, 16)
		for i := range nodes {
			c := cfgs
			c.ID, c.Nodes = gossip.NodeID(i), 16
			if i == 7 {
				c.Injector = func(uint64) gossip.Injector { return flipper }
			}
			nodes[i] = joinOne(t, tr, c)
		}
		inputs := gossiptest.Inputs(16, 1, uint64(bit))
		o := averageAll(timeout(t, 30*time.Second), nodes, inputs)
		require.Len(t, flipper.Flips(), 1, "bit %d: exactly one flip", bit)
		requireOK(t, o, 1e-9)
	}
}

func TestBadInputs(t *testing.T) {
	tr := memory(t, 0, 1)
	nd := joinOne(t, tr, aggregate.Config{Group: "bad", ID: 0, Nodes: 2})
	ctx := timeout(t, 5*time.Second)
	_, err := nd.Average(ctx, []float64{1, math.NaN()})
	assert.ErrorIs(t, err, gossip.ErrNotFinite)
	_, err = nd.Average(ctx, []float64{math.Inf(1)})
	assert.ErrorIs(t, err, gossip.ErrNotFinite)
	_, err = nd.Average(ctx, nil)
	assert.ErrorIs(t, err, gossip.ErrLength)
	_, err = nd.Average(ctx, make([]float64, aggregate.MaxComponents+1))
	assert.ErrorIs(t, err, gossip.ErrLength)
	assert.ErrorContains(t, err, "1048577 components")

	for name, cfg := range map[string]aggregate.Config{
		"no group":     {Nodes: 2},
		"id too large": {Group: "g", ID: 2, Nodes: 2},
		"eps":          {Group: "g", Nodes: 2, Epsilon: 2},
		"algorithm":    {Group: "g", Nodes: 2, Algorithm: "magic"},
		"topology":     {Group: "g", Nodes: 6, Topology: "hypercube"},
		"acyclic":      {Group: "g", Nodes: 8, Topology: "dhypercube"},
		"tick":         {Group: "g", Nodes: 2, Tick: time.Second, Suspect: time.Millisecond},
		"unsafe":       {Group: "g", Nodes: 2, Algorithm: "pcf-published"},
	} {
		_, err := aggregate.Join(context.Background(), tr, cfg)
		require.Error(t, err, name)
		assert.Equal(t, 1, gossiptest.PrefixCount(err), "%s: %q should name one package", name, err)
	}
	_, err = aggregate.Join(context.Background(), nil, aggregate.Config{Group: "g", Nodes: 1})
	assert.ErrorIs(t, err, gossip.ErrInvalidConfig)
}

// TestMismatchedVectorLengths gives one member of eight a vector one
// component short. The rule (safety before liveness): no member returns a
// result that silently leaves out a healthy input, and the group never
// splits into members with a result and healthy members with an error.
// Either every member fails, or the short one alone fails and the others
// return the same result naming it absent. Every algorithm family and
// both kinds of overlay.
func TestMismatchedVectorLengths(t *testing.T) {
	const bad = 5
	for _, c := range []struct{ topology, algo string }{
		{"complete", "pfcc"}, {"hypercube", "pfcc"}, {"hypercube", "rdb"}, {"complete", "exchange"}, {"complete", "exchange-chunked"},
	} {
		t.Run(c.topology+"/"+c.algo, func(t *testing.T) {
			tr := memory(t, 0, 1)
			nodes := group(t, tr, 8, aggregate.Config{Group: "len", Topology: c.topology, Algorithm: c.algo, Epsilon: 1e-9})
			inputs := gossiptest.Inputs(8, 30, 1)
			inputs[bad] = inputs[bad][:29]
			o := averageAll(timeout(t, 20*time.Second), nodes, inputs)
			require.Error(t, o.Errs[bad], "the short member cannot succeed")
			healthyOK, named := 0, false
			for i, err := range o.Errs {
				if i != bad && err == nil {
					healthyOK++
					assert.Contains(t, o.Results[i].Absent, gossip.NodeID(bad), "member %d's result must name the one left out", i)
				}
				if errors.Is(err, aggregate.ErrGroupMismatch) {
					named = named || strings.Contains(err.Error(), "29 components") || strings.Contains(err.Error(), "30 components")
				}
			}
			for i, err := range o.Errs {
				// Liveness: the members that notice tell the others at
				// once; none waits for the deadline (20 s, a hundred
				// times what the whole operation takes on a loaded
				// machine) to learn the operation is over.
				assert.NotErrorIs(t, err, context.DeadlineExceeded, "member %d", i)
			}
			if healthyOK > 0 {
				require.Equal(t, 7, healthyOK, "some healthy members failed while others succeeded: %v", o.Errs)
				return
			}
			assert.True(t, named, "a mismatch error names a length in components: %v", o.Errs)
		})
	}
}

// TestMismatchedConfigurations checks that members configured differently
// learn it from the notices their transports exchange and fail with an
// error that names the setting, long before their deadline: in a group
// of two neither can tell which is wrong, so both fail.
func TestMismatchedConfigurations(t *testing.T) {
	tr := memory(t, 0, 1)
	a := joinOne(t, tr, aggregate.Config{Group: "cfg", ID: 0, Nodes: 2, Epsilon: 1e-9, Suspect: 50 * time.Millisecond})
	b := joinOne(t, tr, aggregate.Config{Group: "cfg", ID: 1, Nodes: 2, Epsilon: 1e-6, Suspect: 50 * time.Millisecond})
	errs := averageAll(timeout(t, 20*time.Second), []*aggregate.Node{a, b}, [][]float64{{1}, {2}}).Errs
	for i, err := range errs {
		require.ErrorIs(t, err, aggregate.ErrGroupMismatch, "member %d", i)
		assert.NotErrorIs(t, err, context.DeadlineExceeded, "member %d", i)
		assert.Contains(t, err.Error(), "epsilon=", "member %d names the setting", i)
	}
}

// TestMisconfiguredMemberFailsFast starts one member of eight with another
// group size (then another overlay): it alone fails, with an error naming
// the setting, and not at its deadline; the seven others do not wait for
// it and return the same result, which names it absent.
func TestMisconfiguredMemberFailsFast(t *testing.T) {
	for name, c := range map[string]struct {
		odd  aggregate.Config
		want string
	}{
		"nodes":    {aggregate.Config{Nodes: 9}, "nodes=8 where this member has nodes=9"},
		"topology": {aggregate.Config{Nodes: 8, Topology: "hypercube"}, "topology=complete where this member has topology=hypercube"},
	} {
		t.Run(name, func(t *testing.T) {
			tr := memory(t, 0, 1)
			base := aggregate.Config{Group: "odd", Nodes: 8, Epsilon: 1e-9}
			nodes := make([]*aggregate.Node, 8)
			for i := range 7 {
				cfg := base
				cfg.ID = gossip.NodeID(i)
				nodes[i] = joinOne(t, tr, cfg)
			}
			odd := c.odd
			odd.Group, odd.ID, odd.Epsilon = base.Group, 7, base.Epsilon
			nodes[7] = joinOne(t, tr, odd)
			inputs := gossiptest.Inputs(8, 3, 1)
			for op := range 2 {
				o := averageAll(timeout(t, 20*time.Second), nodes, inputs)
				err := o.Errs[7]
				require.ErrorIs(t, err, aggregate.ErrGroupMismatch, "operation %d", op)
				assert.NotErrorIs(t, err, context.DeadlineExceeded, "operation %d: the odd member fails fast", op)
				assert.Contains(t, err.Error(), c.want, "operation %d", op)
				for i := range 7 {
					require.NoError(t, o.Errs[i], "operation %d, member %d", op, i)
					assert.Equal(t, o.Results[0].Value, o.Results[i].Value, "operation %d, member %d", op, i)
					assert.Equal(t, []gossip.NodeID{7}, o.Results[i].Absent, "operation %d, member %d", op, i)
				}
				for k, v := range o.Results[0].Value {
					want := 0.0
					for _, in := range inputs[:7] {
						want += in[k] / 7
					}
					assert.InEpsilon(t, want, v, 1e-8, "operation %d, component %d", op, k)
				}
			}
		})
	}
}

func TestDeadlineGivesTheBestEstimate(t *testing.T) {
	tr := memory(t, 0, 1)
	// Node 1 never takes part: node 0 cannot converge and must not hang.
	a := joinOne(t, tr, aggregate.Config{Group: "alone", ID: 0, Nodes: 2})
	res, err := a.Average(timeout(t, 200*time.Millisecond), []float64{3})
	assert.ErrorIs(t, err, aggregate.ErrNotConverged)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, []float64{3}, res.Value, "its own estimate")
}

func TestClose(t *testing.T) {
	tr := memory(t, 0, 1)
	a := joinOne(t, tr, aggregate.Config{Group: "close", ID: 0, Nodes: 2})
	errc := make(chan error, 1)
	go func() { _, err := a.Average(context.Background(), []float64{1}); errc <- err }()
	require.Eventually(t, func() bool { return a.Stats().Operations == 1 }, 30*time.Second, time.Millisecond, "the operation starts")
	require.NoError(t, a.Close())
	assert.ErrorIs(t, <-errc, aggregate.ErrClosed)
	assert.NoError(t, a.Close(), "twice is fine")
	_, err := a.Average(context.Background(), []float64{1})
	assert.ErrorIs(t, err, aggregate.ErrClosed)
}

func TestGroupOfOne(t *testing.T) {
	tr := memory(t, 0, 1)
	for _, algo := range []string{"pfcc", "ps", "rdb"} {
		nd := joinOne(t, tr, aggregate.Config{Group: "one-" + algo, ID: 0, Nodes: 1, Algorithm: algo})
		res, err := nd.Reduce(timeout(t, 5*time.Second), aggregate.Request{Values: []float64{4, 5}})
		require.NoError(t, err, algo)
		assert.Equal(t, []float64{4, 5}, res.Value, algo)
		assert.Equal(t, 1, res.Live)
	}
}
