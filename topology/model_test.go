package topology_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/sim"
	"github.com/gossipreduce/gossipreduce/topology"
)

// thesisModel is equation 5.2 with coefficients typed here again from thesis
// tables 5.1 (sync), 5.2 (async, all converged) and 5.3 (async, first
// converged), so a transcription slip in the package shows up.
func thesisModel(a, b, c, n, gap float64) float64 {
	return a*math.Log2(n+b)/gap + c
}

func TestThesisModelCoefficients(t *testing.T) {
	type abc struct{ a, b, c float64 }
	tables := map[topology.ModelKind]map[string]abc{
		topology.ModelSyncRounds: {
			"complete": {0.5442, -15.9551, 68.6655}, "hypercube": {0.9064, -15.9920, 133.1687}, "torus": {0.9327, 8679000, 28.88},
		},
		topology.ModelAsyncMsgs: {
			"complete": {1.7359, -12.7597, 144.5031}, "hypercube": {1.6106, -15.7585, 211.4465}, "torus": {2.6268, -60.1879, 207.9838},
		},
		topology.ModelAsyncFirstMsgs: {
			"complete": {0.267, -16.00, 109.24}, "hypercube": {0.96, -15.94, 157.64}, "torus": {1.33, -26.99, 220.39},
		},
	}
	for kind, fams := range tables {
		for fam, k := range fams {
			for _, n := range []int{64, 512, 4096} {
				g := mustParse(t, fam, n)
				cf, ok := topology.ClosedForm(g)
				require.True(t, ok)
				got, ok := topology.ThesisModel(kind, g)
				require.True(t, ok, "%v %s %d", kind, fam, n)
				// Same arithmetic in another order: a few ulps.
				assert.InEpsilon(t, thesisModel(k.a, k.b, k.c, float64(n), cf.Gap), got, 1e-13, "%v %s %d", kind, fam, n)
			}
		}
	}
	_, ok := topology.ThesisModel(topology.ModelSyncJacobiRounds, mustParse(t, "hypercube", 64))
	assert.False(t, ok, "the thesis did not fit Jacobi rounds")
}

func TestThesisModelByHand(t *testing.T) {
	// Hypercube, 1024 nodes, gap 1/10, table 5.1, by hand:
	// log2(1024 - 15.992) = ln(1008.008)/ln 2 = 6.91573/0.693147 = 9.97729,
	// 0.9064 · 9.97729 · 10 + 133.1687 = 90.4341 + 133.1687 = 223.603.
	got, ok := topology.ThesisModel(topology.ModelSyncRounds, mustParse(t, "hypercube", 1024))
	require.True(t, ok)
	assert.InDelta(t, 223.603, got, 0.001, "hand arithmetic carried 6 digits")
}

func TestModelUnavailable(t *testing.T) {
	for _, kind := range topology.ModelKinds {
		for _, c := range []struct {
			spec string
			n    int
		}{
			{"bmg", 64}, {"ring", 64}, {"dhypercube", 64},
			{"torus:8x8", 0}, // two-dimensional
			{"torus", 31},    // 1x1x31 is a ring
		} {
			_, ok := topology.Model(kind, mustParse(t, c.spec, c.n))
			assert.False(t, ok, "%v %s %d", kind, c.spec, c.n)
			_, ok = topology.ThesisModel(kind, mustParse(t, c.spec, c.n))
			assert.False(t, ok, "%v %s %d", kind, c.spec, c.n)
		}
	}
	for _, kind := range []topology.ModelKind{topology.ModelKind(7), topology.ModelKind(-1)} {
		_, ok := topology.Model(kind, mustParse(t, "hypercube", 64))
		assert.False(t, ok)
		_, ok = topology.ThesisModel(kind, mustParse(t, "hypercube", 64))
		assert.False(t, ok)
	}
	// Where N + b ≤ 1 the thesis's fits say nothing.
	for _, c := range []struct {
		kind topology.ModelKind
		spec string
		n    int
	}{
		{topology.ModelSyncRounds, "complete", 16},    // 16 - 15.9551 ≤ 1
		{topology.ModelSyncRounds, "hypercube", 16},   // 16 - 15.992 ≤ 1
		{topology.ModelAsyncMsgs, "torus", 27},        // 27 - 60.19 < 0
		{topology.ModelAsyncFirstMsgs, "torus", 27},   // 27 - 26.99 ≤ 1
		{topology.ModelAsyncFirstMsgs, "complete", 2}, // 2 - 16 < 0
	} {
		_, ok := topology.ThesisModel(c.kind, mustParse(t, c.spec, c.n))
		assert.False(t, ok, "%v %s %d", c.kind, c.spec, c.n)
	}
}

func TestCoefficientsEval(t *testing.T) {
	c := topology.Coefficients{A: 2, B: -8, C: 10}
	// 2·log2(16 - 8)/0.5 + 10 = 2·3·2 + 10 = 22.
	f, ok := c.Eval(16, 0.5)
	require.True(t, ok)
	assert.InDelta(t, 22.0, f, 1e-12, "exact in binary but for log2's rounding")
	for _, bad := range []struct {
		n   int
		gap float64
	}{{9, 0.5}, {8, 0.5}, {16, 0}, {16, -1}, {16, math.NaN()}} {
		_, ok := c.Eval(bad.n, bad.gap)
		assert.False(t, ok, "%+v", bad)
	}
}

func TestModelKindString(t *testing.T) {
	assert.Equal(t, "sync-rounds", topology.ModelSyncRounds.String())
	assert.Equal(t, "async-msgs", topology.ModelAsyncMsgs.String())
	assert.Equal(t, "async-first-msgs", topology.ModelAsyncFirstMsgs.String())
	assert.Equal(t, "sync-jacobi-rounds", topology.ModelSyncJacobiRounds.String())
	assert.Equal(t, "ModelKind(9)", topology.ModelKind(9).String())
}

// synthetic returns equation 5.2 with c evaluated on family fam at sizes ns,
// plus Gaussian noise of standard deviation sd drawn from seed.
func synthetic(t *testing.T, c topology.Coefficients, fam string, ns []int, sd float64, seed uint64) []topology.ModelPoint {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0))
	var pts []topology.ModelPoint
	for _, n := range ns {
		g := mustParse(t, fam, n)
		cf, ok := topology.ClosedForm(g)
		require.True(t, ok)
		f, ok := c.Eval(g.Len(), cf.Gap)
		require.True(t, ok)
		pts = append(pts, topology.ModelPoint{Nodes: g.Len(), Gap: cf.Gap, Mean: f + sd*rng.NormFloat64()})
	}
	return pts
}

var fitSizes = []int{32, 64, 128, 256, 512, 1024, 2048, 4096}

func TestFitModelRecoversCoefficients(t *testing.T) {
	// Exact data from known coefficients (the thesis's complete and
	// hypercube ones, and a torus-like one with a moderate b): the fit must
	// find them again. The only errors are rounding and the resolution of
	// the search over b (golden section to ~1e-9 relative in ln(N + b)),
	// so 1e-4 relative is generous.
	for _, c := range []struct {
		fam  string
		want topology.Coefficients
	}{
		{"complete", topology.Coefficients{A: 0.5442, B: -15.9551, C: 68.6655}},
		{"hypercube", topology.Coefficients{A: 0.9064, B: -15.9920, C: 133.1687}},
		{"hypercube", topology.Coefficients{A: 1.5, B: 40, C: 20}},
		{"complete", topology.Coefficients{A: 3, B: 1000, C: -5}},
	} {
		f, err := topology.FitModel(synthetic(t, c.want, c.fam, fitSizes, 0, 0))
		require.NoError(t, err)
		assert.InEpsilon(t, c.want.A, f.A, 1e-4, "%+v", c)
		assert.InEpsilon(t, c.want.B, f.B, 1e-4, "%+v", c)
		assert.InEpsilon(t, c.want.C, f.C, 1e-4, "%+v", c)
		assert.InDelta(t, 1.0, f.RSquared, 1e-9, "a perfect fit")
		assert.Equal(t, len(fitSizes), f.Points)
	}
}

func TestFitModelNoisy(t *testing.T) {
	// Data with noise of one round (the standard error of a mean of 100
	// runs whose spread is 10 rounds, as in our data) from table 5.1(b):
	// the fit need not find b again (the residual sum of squares is flat
	// in b), but it must predict the noiseless model within a few noise
	// widths over the fitted range: 3 rounds, about 1.5 % of 200.
	const seed = 20161
	t.Logf("seed %d", seed)
	want := topology.Coefficients{A: 0.9064, B: -15.9920, C: 133.1687}
	pts := synthetic(t, want, "hypercube", fitSizes, 1, seed)
	f, err := topology.FitModel(pts)
	require.NoError(t, err)
	assert.Greater(t, f.RSquared, 0.99)
	for _, p := range pts {
		exact, _ := want.Eval(p.Nodes, p.Gap)
		got, ok := f.Eval(p.Nodes, p.Gap)
		require.True(t, ok)
		assert.InDelta(t, exact, got, 3, "N = %d", p.Nodes)
	}
}

func TestFitModelBadInput(t *testing.T) {
	good := synthetic(t, topology.Coefficients{A: 1, B: 0, C: 10}, "hypercube", fitSizes, 0, 0)
	nan := append([]topology.ModelPoint(nil), good...)
	nan[2].Mean = math.NaN()
	zeroGap := append([]topology.ModelPoint(nil), good...)
	zeroGap[0].Gap = 0
	same := []topology.ModelPoint{{Nodes: 64, Gap: 0.1, Mean: 5}, {Nodes: 64, Gap: 0.1, Mean: 6}, {Nodes: 64, Gap: 0.1, Mean: 7}}
	for name, pts := range map[string][]topology.ModelPoint{
		"none": nil, "two": good[:2], "NaN mean": nan, "zero gap": zeroGap, "one size": same,
	} {
		_, err := topology.FitModel(pts)
		require.Error(t, err, name)
		assert.ErrorIs(t, err, gossip.ErrInvalidConfig, name)
		assert.Regexp(t, "^topology: fit: ", err.Error(), name)
		assert.NotContains(t, err.Error()[len("topology:"):], "topology:", "%s: the package is named once", name)
	}
}

func TestFitModelData(t *testing.T) {
	for name, doc := range map[string]string{
		"not JSON":     "{",
		"other eps":    `{"eps": 1e-10, "series": []}`,
		"unknown kind": `{"eps": 1e-14, "series": [{"kind": "sync", "family": "complete", "points": []}]}`,
		"few points":   `{"eps": 1e-14, "series": [{"kind": "sync-rounds", "family": "complete", "points": []}]}`,
	} {
		_, err := topology.FitModelData([]byte(doc))
		require.Error(t, err, name)
		assert.Regexp(t, "^topology: model data", err.Error(), name)
	}
}

// allowed is how far a model may miss the mean of a point: three standard
// errors of that mean (sd/√runs; a miss beyond them has odds of 1 in 370
// if the model were exact) plus the misfit we accept of the form of
// equation 5.2, 1 % of the mean inside the fitted range (the thesis's
// R² of 0.84 to 0.99 promise no better).
func allowed(p topology.ModelPoint, misfit float64) float64 {
	return 3*p.SD/math.Sqrt(float64(p.Runs)) + misfit*p.Mean
}

// TestModelFits checks our fits of the simulations in modeldata.json and
// logs them next to the thesis's (go test -v -run TestModelFits).
func TestModelFits(t *testing.T) {
	fits, err := topology.ModelFits()
	require.NoError(t, err)
	require.Len(t, fits, len(topology.ModelKinds)*len(topology.ModelFamilies), "one fit per kind and family")
	for _, f := range fits {
		o := f.Ours
		t.Logf("%-18s %-9s a %8.4f b %10.4g c %9.4f  R² %.4f rms %.2f", f.Kind, f.Family, o.A, o.B, o.C, o.RSquared, o.RMS)
		if f.Thesis != nil {
			t.Logf("%-18s %-9s a %8.4f b %10.4g c %9.4f  (thesis)", "", "", f.Thesis.A, f.Thesis.B, f.Thesis.C)
		}
		assert.Equal(t, f.Kind != topology.ModelSyncJacobiRounds, f.Thesis != nil)
		for _, p := range f.Points {
			got, ok := o.Eval(p.Nodes, p.Gap)
			require.True(t, ok)
			if f.Family == "torus3" && p.Nodes < 216 {
				// The form cannot follow the smallest tori: it
				// overestimates 4³ and 5³ by 1 % (synchronous) to 18 %
				// (asynchronous, first node), against a standard error
				// of 0.3 to 1.5 %. A known misfit, held to its sign.
				assert.Greater(t, got, p.Mean, "%v %s N = %d", f.Kind, f.Family, p.Nodes)
				continue
			}
			assert.InDelta(t, p.Mean, got, allowed(p, 0.01), "%v %s N = %d", f.Kind, f.Family, p.Nodes)
		}
	}
	// Jacobi rounds take more rounds than Algorithm 7's on the same overlay
	// (Gauss-Seidel mixing uses the round's own sends); the models agree.
	for _, fam := range []struct {
		spec string
		n    int
	}{{"complete", 1000}, {"hypercube", 1024}, {"torus", 1000}} {
		g := mustParse(t, fam.spec, fam.n)
		seq, ok1 := topology.Model(topology.ModelSyncRounds, g)
		jac, ok2 := topology.Model(topology.ModelSyncJacobiRounds, g)
		require.True(t, ok1 && ok2)
		assert.Greater(t, jac, seq, fam.spec)
	}
}

func TestModelPredictsHeldOutSize(t *testing.T) {
	// Refit each series without its largest size and predict that size:
	// an extrapolation from 2048 to 4096 nodes (from 14³ to 16³ on the
	// torus), allowed twice the in-range misfit (see allowed) for the
	// doubling of N past the fitted range.
	fits, err := topology.ModelFits()
	require.NoError(t, err)
	for _, f := range fits {
		last := f.Points[len(f.Points)-1]
		fit, err := topology.FitModel(f.Points[:len(f.Points)-1])
		require.NoError(t, err)
		got, ok := fit.Eval(last.Nodes, last.Gap)
		require.True(t, ok)
		t.Logf("%-18s %-9s N = %4d: simulated %7.1f, predicted %7.1f (%+.1f %%)", f.Kind, f.Family, last.Nodes,
			last.Mean, got, 100*(got/last.Mean-1))
		assert.InDelta(t, last.Mean, got, allowed(last, 0.02), "%v %s", f.Kind, f.Family)
	}
}

func TestModelPredictsFreshSimulations(t *testing.T) {
	// Sizes that are not in modeldata.json, simulated now with seeds
	// unlike its (which start at 1): the models must predict the mean of 10
	// runs within 3 standard errors plus 1 % (see allowed).
	const seed, runs = 7000, 10
	t.Logf("seeds %d…%d", seed, seed+runs-1)
	for _, c := range []struct {
		kind topology.ModelKind
		spec string
		n    int
	}{
		{topology.ModelSyncRounds, "complete", 1500},
		{topology.ModelSyncJacobiRounds, "complete", 700},
		{topology.ModelSyncRounds, "torus:9x9x9", 0},
		{topology.ModelSyncJacobiRounds, "torus:7x7x7", 0},
		{topology.ModelAsyncMsgs, "complete", 300},
		{topology.ModelAsyncFirstMsgs, "torus:7x7x7", 0},
	} {
		g := mustParse(t, c.spec, c.n)
		want, ok := topology.Model(c.kind, g)
		require.True(t, ok)
		var costs []float64
		switch c.kind {
		case topology.ModelSyncRounds, topology.ModelSyncJacobiRounds:
			for i := range uint64(runs) {
				r, err := sim.RunSync(context.Background(), sim.SyncConfig{Overlay: g, Epsilon: topology.ModelEpsilon,
					Seed: seed + i, Sequential: c.kind == topology.ModelSyncRounds})
				require.NoError(t, err)
				require.True(t, r.Converged)
				costs = append(costs, float64(r.Rounds))
			}
		default:
			stop := sim.StopAll
			if c.kind == topology.ModelAsyncFirstMsgs {
				stop = sim.StopFirst
			}
			rs, err := sim.RunMany(context.Background(), sim.Config{Algorithm: "ps", Overlay: g,
				Epsilon: topology.ModelEpsilon, Stop: stop, Seed: seed}, runs, 0, nil)
			require.NoError(t, err)
			for _, r := range rs {
				require.True(t, r.Converged)
				costs = append(costs, float64(r.MaxMsgs))
			}
		}
		p := topology.ModelPoint{Runs: runs}
		for _, x := range costs {
			p.Mean += x / runs
		}
		for _, x := range costs {
			p.SD += (x - p.Mean) * (x - p.Mean) / (runs - 1)
		}
		p.SD = math.Sqrt(p.SD)
		t.Logf("%-18s %-16s simulated %7.1f ± %.1f (sd), model %7.1f", c.kind, g.Name(), p.Mean, p.SD, want)
		assert.InDelta(t, p.Mean, want, allowed(p, 0.01), "%v %s", c.kind, g.Name())
	}
}
