package topology_test

import (
	"fmt"
	"math"
	"math/cmplx"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/topology"
)

// closedTol is the agreement asked of numeric and closed-form gaps. The
// symmetric solver is backward stable: its eigenvalues are within a small
// multiple of N·2^-52 ≈ 2.3e-13 (N = 1024) of the exact ones, well inside
// 1e-9.
const closedTol = 1e-9

func mustParse(t testing.TB, spec string, n int) topology.Graph {
	t.Helper()
	g, err := topology.Parse(spec, n)
	require.NoError(t, err)
	return g
}

// checkClosedForm asserts that the numeric and the closed-form spectra of g
// agree, and that the closed form is what want says.
func checkClosedForm(t *testing.T, g topology.Graph, wantGap float64) {
	t.Helper()
	cf, ok := topology.ClosedForm(g)
	require.True(t, ok, "%s on %d nodes has a closed form", g.Name(), g.Len())
	assert.Equal(t, topology.MethodClosedForm, cf.Method)
	// The formula of the test and of the package are written differently
	// (cos versus sin², N/(2N-2) versus 1-λ2): a few ulps apart.
	require.InDelta(t, wantGap, cf.Gap, 1e-15, "%s %d: closed form", g.Name(), g.Len())
	require.InDelta(t, 1-wantGap, cf.Lambda2, 1e-15)
	num, err := topology.Spectrum(g)
	require.NoError(t, err)
	assert.Equal(t, topology.MethodNumeric, num.Method)
	require.InDelta(t, cf.Gap, num.Gap, closedTol, "%s on %d nodes: numeric %v closed %v", g.Name(), g.Len(), num.Gap, cf.Gap)
	require.InDelta(t, cf.Lambda2, num.Lambda2, closedTol)
}

func TestClosedFormComplete(t *testing.T) {
	sizes := []int{2, 3, 4, 5, 16, 100, 333, 1024}
	if testing.Short() {
		sizes = sizes[:6]
	}
	for _, n := range sizes {
		// Thesis 5.2.2: 1 - λ2 = N / (2N - 2).
		checkClosedForm(t, mustParse(t, "complete", n), float64(n)/float64(2*n-2))
	}
}

func TestClosedFormHypercube(t *testing.T) {
	maxD := 10
	if testing.Short() {
		maxD = 8
	}
	for d := 1; d <= maxD; d++ {
		// Thesis 5.2.2: 1 - λ2 = 1/d.
		checkClosedForm(t, mustParse(t, "hypercube", 1<<d), 1/float64(d))
	}
}

// torusGapByEigenvalues computes the gap of a torus from the whole
// adjacency spectrum of the Cartesian product of cycles: every sum of one
// eigenvalue 2cos(2πk/n_i) per side (±1 for a side of 2, 0 for a side of 1),
// sorted, second largest taken.
func torusGapByEigenvalues(sides []int) float64 {
	sums := []float64{0}
	deg := 0
	for _, s := range sides {
		var ev []float64
		switch {
		case s == 1:
			ev = []float64{0}
		case s == 2:
			ev = []float64{1, -1}
			deg++
		default:
			for k := range s {
				ev = append(ev, 2*math.Cos(2*math.Pi*float64(k)/float64(s)))
			}
			deg += 2
		}
		var next []float64
		for _, a := range sums {
			for _, b := range ev {
				next = append(next, a+b)
			}
		}
		sums = next
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(sums)))
	// E[C] = ½I + A/(2·deg): λ2 = ½ + μ2/(2·deg).
	return 1 - (0.5 + sums[1]/float64(2*deg))
}

func TestClosedFormTorus(t *testing.T) {
	for _, n := range []int{27, 64, 125, 216, 512} {
		g := mustParse(t, "torus", n)
		side := math.Cbrt(float64(n))
		// Thesis 5.2.2 for d = 3 equal sides: (1 - cos(2π/n)) / (2d).
		checkClosedForm(t, g, (1-math.Cos(2*math.Pi/math.Round(side)))/6)
	}
	for _, sides := range [][]int{
		{2, 4}, {4, 2}, {2, 3, 5}, {1, 1, 7}, {2, 2, 2}, {2, 2}, {2}, {1, 5}, {3, 1, 4},
		{2, 6, 1, 3}, {8, 8}, {16}, {3, 4, 5}, {2, 4, 4}, {8, 8, 16}, {5, 5, 5, 5}, {1, 2},
	} {
		g, err := topology.Torus(sides...)
		require.NoError(t, err)
		checkClosedForm(t, g, torusGapByEigenvalues(sides))
	}
	for _, n := range []int{2, 3, 4, 5, 12, 100} {
		// The ring is the torus with one side.
		checkClosedForm(t, mustParse(t, "ring", n), torusGapByEigenvalues([]int{n}))
	}
}

func TestClosedFormUnavailable(t *testing.T) {
	for _, c := range []struct {
		spec string
		n    int
	}{{"bmg", 64}, {"dhypercube", 64}, {"complete", 1}, {"hypercube", 1}, {"torus", 1}, {"ring", 1}, {"torus:1x1", 0}} {
		_, ok := topology.ClosedForm(mustParse(t, c.spec, c.n))
		assert.False(t, ok, "%s on %d nodes", c.spec, c.n)
	}
	_, ok := topology.ClosedForm(pathGraph{n: 5})
	assert.False(t, ok, "a foreign graph has no closed form")
}

func TestDirectedHypercubeSpectrum(t *testing.T) {
	for d := 1; d <= 9; d++ {
		g := mustParse(t, "dhypercube", 1<<d)
		s, err := topology.Spectrum(g)
		require.NoError(t, err)
		// Triangular after a topological order, diagonal ½ except 1 at the
		// sink: λ2 = ½ exactly. Balancing finds the triangular form, so
		// the solver reads the diagonal; allow the general solver's
		// accuracy anyway (N·2^-52 ≈ 1e-13).
		assert.InDelta(t, 0.5, s.Lambda2, 1e-12, "d=%d", d)
		assert.InDelta(t, 0.5, s.Gap, 1e-12, "d=%d", d)
	}
}

func TestPushMatrix(t *testing.T) {
	for _, c := range []struct {
		spec string
		n    int
	}{{"complete", 6}, {"hypercube", 16}, {"torus", 12}, {"dhypercube", 16}, {"bmg", 11}, {"ring", 2}, {"ring", 1}} {
		g := mustParse(t, c.spec, c.n)
		p, err := topology.PushMatrix(g)
		require.NoError(t, err)
		r, cols := p.Dims()
		require.Equal(t, c.n, r)
		require.Equal(t, c.n, cols)
		for i := range c.n {
			d := g.Degree(gossip.NodeID(i))
			want := make([]float64, c.n)
			if d == 0 {
				want[i] = 1
			} else {
				want[i] = 0.5
				for _, w := range topology.Neighbors(g, gossip.NodeID(i)) {
					want[w] = 0.5 / float64(d)
				}
			}
			// Each entry is one rounded division: exact to 1 ulp.
			require.InDeltaSlice(t, want, mat.Row(nil, i, p), 1e-16, "%s row %d", g.Name(), i)
			// Rows sum to 1 up to the rounding of d additions.
			require.InDelta(t, 1, mat.Sum(p.RowView(i)), 1e-15*float64(d+1), "%s row %d", g.Name(), i)
		}
	}
	// The sink of the directed hypercube keeps everything.
	p, err := topology.PushMatrix(mustParse(t, "dhypercube", 8))
	require.NoError(t, err)
	assert.Equal(t, []float64{1, 0, 0, 0, 0, 0, 0, 0}, mat.Row(nil, 0, p))
}

func TestDenseLimit(t *testing.T) {
	big := mustParse(t, "complete", topology.MaxDenseNodes+1)
	_, err := topology.PushMatrix(big)
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	assert.Contains(t, err.Error(), fmt.Sprintf("limited to %d nodes", topology.MaxDenseNodes))
	_, err = topology.Spectrum(big)
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	// The closed form has no limit.
	s, ok := topology.ClosedForm(mustParse(t, "hypercube", 1<<20))
	require.True(t, ok)
	assert.InDelta(t, 0.05, s.Gap, 1e-17, "1/20 in float64")
}

// generalLambda2 is λ2 of E[C] from the general (non-symmetric) solver, an
// independent route to the same number.
func generalLambda2(t *testing.T, g topology.Graph) float64 {
	t.Helper()
	p, err := topology.PushMatrix(g)
	require.NoError(t, err)
	var eig mat.Eigen
	require.True(t, eig.Factorize(p, mat.EigenNone))
	var mod []float64
	for _, v := range eig.Values(nil) {
		mod = append(mod, cmplx.Abs(v))
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(mod)))
	return mod[1]
}

func TestSymmetricRouteMatchesGeneralSolver(t *testing.T) {
	// The symmetric form is similar to E[C]: both solvers must agree, to
	// the general solver's accuracy on these well-conditioned (normal up to
	// a diagonal scaling) matrices, a few hundred ulps at N ≤ 100.
	const tol = 1e-11
	for _, g := range []topology.Graph{
		mustParse(t, "bmg", 37), mustParse(t, "bmg", 64), mustParse(t, "bmg", 100),
		mustParse(t, "torus:3x4x5", 0), pathGraph{n: 30}, starGraph{leaves: 20},
	} {
		s, err := topology.Spectrum(g)
		require.NoError(t, err)
		assert.InDelta(t, generalLambda2(t, g), s.Lambda2, tol, g.Name())
	}
}

// pathGraph is the path 0 - 1 - … - n-1: undirected and not regular.
type pathGraph struct{ n int }

func (p pathGraph) Len() int { return p.n }
func (p pathGraph) Degree(v gossip.NodeID) int {
	if p.n == 1 {
		return 0
	}
	if v == 0 || int(v) == p.n-1 {
		return 1
	}
	return 2
}
func (p pathGraph) Neighbor(v gossip.NodeID, k int) gossip.NodeID {
	if v == 0 {
		return 1
	}
	if k == 0 {
		return v - 1
	}
	return v + 1
}
func (p pathGraph) Name() string   { return fmt.Sprintf("path%d", p.n) }
func (p pathGraph) Directed() bool { return false }

// starGraph is one hub (node 0) linked to the leaves 1 … leaves.
type starGraph struct{ leaves int }

func (s starGraph) Len() int { return s.leaves + 1 }
func (s starGraph) Degree(v gossip.NodeID) int {
	if v == 0 {
		return s.leaves
	}
	return 1
}
func (s starGraph) Neighbor(v gossip.NodeID, k int) gossip.NodeID {
	if v == 0 {
		return gossip.NodeID(k + 1)
	}
	return 0
}
func (s starGraph) Name() string   { return "star" }
func (s starGraph) Directed() bool { return false }

func TestNonRegularUndirected(t *testing.T) {
	for _, n := range []int{2, 3, 10, 50} {
		s, err := topology.Spectrum(pathGraph{n: n})
		require.NoError(t, err)
		// The simple random walk on a path of n nodes has eigenvalues
		// cos(πj/(n-1)), j = 0 … n-1, so E[C] = ½I + ½P has
		// ½ + ½cos(πj/(n-1)); the largest modulus after 1 is j = 1 (all
		// are ≥ 0). Accuracy as for closedTol.
		assert.InDelta(t, 0.5+0.5*math.Cos(math.Pi/float64(n-1)), s.Lambda2, closedTol, "path %d", n)
	}
	s, err := topology.Spectrum(starGraph{leaves: 12})
	require.NoError(t, err)
	// The walk on a star has eigenvalues 1, 0 (×(leaves-1)), -1; E[C] has
	// 1, ½ …, 0, so λ2 = ½.
	assert.InDelta(t, 0.5, s.Lambda2, closedTol)
}

// liar claims to be undirected but has the single edge 0 → 1.
type liar struct{}

func (liar) Len() int { return 3 }
func (liar) Degree(v gossip.NodeID) int {
	if v == 0 {
		return 1
	}
	return 0
}
func (liar) Neighbor(gossip.NodeID, int) gossip.NodeID { return 1 }
func (liar) Name() string                              { return "liar" }
func (liar) Directed() bool                            { return false }

func TestAsymmetricUndirectedIsAnError(t *testing.T) {
	_, err := topology.Spectrum(liar{})
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "liar says it is undirected")
}

// twoRings is two disjoint rings of n nodes each.
type twoRings struct{ n int }

func (r twoRings) Len() int                 { return 2 * r.n }
func (r twoRings) Degree(gossip.NodeID) int { return 2 }
func (r twoRings) Neighbor(v gossip.NodeID, k int) gossip.NodeID {
	base, i := int(v)/r.n*r.n, int(v)%r.n
	if k == 0 {
		return gossip.NodeID(base + (i+1)%r.n)
	}
	return gossip.NodeID(base + (i+r.n-1)%r.n)
}
func (r twoRings) Name() string   { return "tworings" }
func (r twoRings) Directed() bool { return false }

func TestDisconnectedGraph(t *testing.T) {
	g := twoRings{n: 50}
	assert.False(t, topology.StronglyConnected(g))
	s, err := topology.Spectrum(g)
	require.NoError(t, err)
	assert.Equal(t, 1.0, s.Lambda2, "eigenvalue 1 twice: λ2 reported as exactly 1")
	assert.Equal(t, 0.0, s.Gap)
	_, err = topology.PredictedRounds(g, 1e-6)
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "does not converge")
}

func TestSingleNode(t *testing.T) {
	for _, spec := range topology.Names() {
		s, err := topology.Spectrum(mustParse(t, spec, 1))
		require.NoError(t, err, spec)
		assert.Equal(t, topology.Spectral{Lambda2: 0, Gap: 1, Method: topology.MethodNumeric}, s, spec)
	}
}

func TestPredictedRounds(t *testing.T) {
	h := mustParse(t, "hypercube", 1024)
	r, err := topology.PredictedRounds(h, 1e-14)
	require.NoError(t, err)
	// (ln 1024 + ln 1e14) / (1/10), written with log10 to not repeat the
	// code's expression; the two differ by rounding only.
	assert.InEpsilon(t, (math.Log10(1024)+14)*math.Ln10*10, r, 1e-14)

	c := mustParse(t, "complete", 100)
	r, err = topology.PredictedRounds(c, 0.5)
	require.NoError(t, err)
	assert.InEpsilon(t, math.Log(200)*198/100, r, 1e-14, "ln(100·2) · (2N-2)/N")

	// Without a closed form the numeric spectrum is used.
	b := mustParse(t, "bmg", 200)
	s, err := topology.Spectrum(b)
	require.NoError(t, err)
	r, err = topology.PredictedRounds(b, 1e-6)
	require.NoError(t, err)
	assert.InEpsilon(t, (math.Log(200)+6*math.Ln10)/s.Gap, r, 1e-14)

	// A smaller ε costs more rounds, a better-connected graph fewer.
	r1, _ := topology.PredictedRounds(h, 1e-6)
	r2, _ := topology.PredictedRounds(h, 1e-12)
	assert.Greater(t, r2, r1)
	rc, _ := topology.PredictedRounds(mustParse(t, "complete", 1024), 1e-6)
	rt, _ := topology.PredictedRounds(mustParse(t, "torus", 1024), 1e-6)
	assert.Less(t, rc, r1)
	assert.Greater(t, rt, r1)

	for _, eps := range []float64{0, -1, 1, 1.5, math.NaN(), math.Inf(1), math.Inf(-1)} {
		_, err := topology.PredictedRounds(h, eps)
		require.ErrorIs(t, err, gossip.ErrInvalidConfig, "eps %v", eps)
		assert.Contains(t, err.Error(), "must be in (0, 1)")
	}
	_, err = topology.PredictedRounds(mustParse(t, "bmg", topology.MaxDenseNodes+1), 1e-6)
	require.ErrorIs(t, err, gossip.ErrInvalidConfig, "no closed form and too big for the dense solver")
}

func TestAnalyzePrefersTheClosedForm(t *testing.T) {
	s, err := topology.Analyze(mustParse(t, "hypercube", 1<<16))
	require.NoError(t, err)
	assert.Equal(t, topology.MethodClosedForm, s.Method)
	s, err = topology.Analyze(mustParse(t, "bmg", 64))
	require.NoError(t, err)
	assert.Equal(t, topology.MethodNumeric, s.Method)
}

func benchmarkSpectrum(b *testing.B, g topology.Graph) {
	for b.Loop() {
		if _, err := topology.Spectrum(g); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSpectrumHypercube1024(b *testing.B) {
	benchmarkSpectrum(b, mustParse(b, "hypercube", 1024))
}

func BenchmarkSpectrumHypercube2048(b *testing.B) {
	benchmarkSpectrum(b, mustParse(b, "hypercube", 2048))
}

func BenchmarkSpectrumDirectedHypercube1024(b *testing.B) {
	benchmarkSpectrum(b, mustParse(b, "dhypercube", 1024))
}

func TestSpectralRounds(t *testing.T) {
	s := topology.Spectral{Lambda2: 0.75, Gap: 0.25}
	r, err := s.Rounds(100, 1e-3)
	require.NoError(t, err)
	// ln(100) + ln(1000) = ln(1e5) = 5·ln 10, over 1/4.
	assert.InEpsilon(t, 20*math.Ln10, r, 1e-14)
	_, err = s.Rounds(0, 1e-3)
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	_, err = s.Rounds(10, 0)
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	_, err = topology.Spectral{Lambda2: 1, Gap: 0}.Rounds(10, 0.1)
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	assert.Equal(t, "topology: 10 nodes: spectral gap 0: averaging does not converge: invalid configuration", err.Error())
}
