package topology

import (
	"fmt"
	"math"
	"math/cmplx"
	"sort"

	"gonum.org/v1/gonum/mat"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// MaxDenseNodes is the largest graph PushMatrix and Spectrum accept. Both
// work on a dense N×N matrix: at 8192 nodes that is 512 MiB, and the
// eigenvalue decomposition (O(N³)) takes tens of minutes (see Spectrum).
// Larger graphs need ClosedForm.
const MaxDenseNodes = 8192

// How a Spectral was obtained.
const (
	MethodClosedForm = "closed-form" // from a formula (ClosedForm)
	MethodNumeric    = "numeric"     // from an eigenvalue decomposition (Spectrum)
)

// Spectral describes how fast mass mixes under the push-distribution E[C] of
// a graph (thesis 5.2).
type Spectral struct {
	// Lambda2 is the second largest eigenvalue modulus of E[C] (the largest
	// is 1). A single node has no second eigenvalue; Lambda2 is then 0.
	Lambda2 float64
	// Gap is the spectral gap 1 - Lambda2: the larger, the faster Push-Sum
	// converges (equation 5.1). It is 0 for a disconnected graph.
	Gap float64
	// Method is MethodClosedForm or MethodNumeric.
	Method string
}

// PushMatrix returns the push-distribution E[C] = ½·𝒩·A + ½·I of thesis
// 5.2.1, where A is the adjacency matrix (A[i][j] = number of times j is a
// neighbour of i) and 𝒩 the diagonal of reciprocal degrees. Row i says
// where node i's mass goes in one Push-Sum round in expectation: ½ stays, ½
// is spread uniformly over its (out-)neighbours. A node without neighbours
// keeps everything: its row is e_i. Every row sums to 1.
//
// The matrix is dense: graphs above MaxDenseNodes nodes are refused with an
// error wrapping gossip.ErrInvalidConfig.
func PushMatrix(g Graph) (*mat.Dense, error) {
	n, err := denseSize(g)
	if err != nil {
		return nil, err
	}
	data := make([]float64, n*n)
	for i := range n {
		row := data[i*n : (i+1)*n]
		d := g.Degree(gossip.NodeID(i))
		if d == 0 {
			row[i] = 1
			continue
		}
		row[i] = 0.5
		share := 0.5 / float64(d)
		for k := range d {
			row[g.Neighbor(gossip.NodeID(i), k)] += share
		}
	}
	return mat.NewDense(n, n, data), nil
}

func denseSize(g Graph) (int, error) {
	n := g.Len()
	if n > MaxDenseNodes {
		return 0, fmt.Errorf("topology: %s on %d nodes: dense spectral analysis is limited to %d nodes (use ClosedForm): %w",
			g.Name(), n, MaxDenseNodes, gossip.ErrInvalidConfig)
	}
	if n < 1 {
		return 0, fmt.Errorf("topology: %s has %d nodes: %w", g.Name(), n, gossip.ErrInvalidConfig)
	}
	return n, nil
}

// Spectrum computes λ2 and the spectral gap of g's push-distribution
// numerically, for graphs up to MaxDenseNodes nodes.
//
// For an undirected graph it diagonalises the symmetric matrix
// ½·I + ½·D^{-1/2}·A·D^{-1/2} (D the degrees; an isolated node contributes
// the eigenvalue 1), which is similar to E[C] = ½·I + ½·D^{-1}·A, so it has
// the same eigenvalues, whether or not the graph is regular, and the
// symmetric solver (mat.EigenSym) is faster and more accurate than the
// general one. A graph that claims to be undirected but has an edge without
// its reverse is an error. For a directed graph it uses the general solver
// (mat.Eigen, with balancing) on E[C] and takes eigenvalue moduli. A λ2
// within 64·N·ε (ε = 2^-52) of 1, the solvers' accuracy, is reported as 1:
// the graph is disconnected and the gap is 0.
//
// The cost is that of a dense O(N³) decomposition in pure Go, dominated by
// the memory-bound tridiagonal reduction. Measured once on the 2-core shared
// machine this package was written on (under load from other work), an
// undirected graph took 1.1 s at 1024 nodes, 15-30 s at 2048 and 2.5 minutes
// at 4096; expect tens of minutes near MaxDenseNodes. Directed graphs with
// the triangular structure of the directed hypercube are fast (0.1 s at
// 1024), since balancing isolates every eigenvalue. See BenchmarkSpectrum*.
func Spectrum(g Graph) (Spectral, error) {
	n, err := denseSize(g)
	if err != nil {
		return Spectral{}, err
	}
	if n == 1 {
		return Spectral{Lambda2: 0, Gap: 1, Method: MethodNumeric}, nil
	}
	var moduli []float64
	if g.Directed() {
		moduli, err = directedModuli(g)
	} else {
		moduli, err = undirectedModuli(g, n)
	}
	if err != nil {
		return Spectral{}, err
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(moduli)))
	l2 := moduli[1]
	// The solvers are backward stable, so an eigenvalue of a matrix of norm
	// 1 comes out within a small multiple of N·ε. A λ2 within 64·N·ε of 1 is
	// a repeated eigenvalue 1 (a disconnected graph): report gap 0 exactly.
	if 1-l2 < float64(n)*64*epsilon {
		l2 = 1
	}
	return Spectral{Lambda2: l2, Gap: 1 - l2, Method: MethodNumeric}, nil
}

// epsilon is the float64 machine epsilon, 2^-52.
const epsilon = 0x1p-52

func directedModuli(g Graph) ([]float64, error) {
	c, err := PushMatrix(g)
	if err != nil {
		return nil, err
	}
	var eig mat.Eigen
	if !eig.Factorize(c, mat.EigenNone) {
		return nil, fmt.Errorf("topology: %s on %d nodes: eigenvalue decomposition did not converge", g.Name(), g.Len())
	}
	vals := eig.Values(nil)
	moduli := make([]float64, len(vals))
	for i, v := range vals {
		moduli[i] = cmplx.Abs(v)
	}
	return moduli, nil
}

func undirectedModuli(g Graph, n int) ([]float64, error) {
	// Count edges into a dense adjacency matrix, check it is symmetric,
	// then turn it in place into ½·I + ½·D^{-1/2}·A·D^{-1/2}.
	data := make([]float64, n*n)
	deg := make([]float64, n)
	for i := range n {
		d := g.Degree(gossip.NodeID(i))
		deg[i] = float64(d)
		for k := range d {
			data[i*n+int(g.Neighbor(gossip.NodeID(i), k))]++
		}
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			if data[i*n+j] != data[j*n+i] {
				return nil, fmt.Errorf("topology: %s says it is undirected, but node %d lists node %d %v times and node %d lists node %d %v times: %w",
					g.Name(), i, j, data[i*n+j], j, i, data[j*n+i], gossip.ErrInvalidConfig)
			}
		}
	}
	scale := make([]float64, n) // D^{-1/2}, 0 for an isolated node
	for i, d := range deg {
		if d > 0 {
			scale[i] = 1 / math.Sqrt(d)
		}
	}
	for i := range n {
		row := data[i*n : (i+1)*n]
		for j := range row {
			row[j] *= 0.5 * scale[i] * scale[j]
		}
		if deg[i] == 0 {
			row[i] = 1
		} else {
			row[i] += 0.5
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(mat.NewSymDense(n, data), false) {
		return nil, fmt.Errorf("topology: %s on %d nodes: symmetric eigenvalue decomposition did not converge", g.Name(), n)
	}
	vals := eig.Values(nil)
	for i, v := range vals {
		vals[i] = math.Abs(v)
	}
	return vals, nil
}

// ClosedForm returns λ2 and the spectral gap of g's push-distribution from
// a formula, for any size (thesis 5.2.2):
//
//   - complete graph, N ≥ 2: gap = N / (2N-2);
//   - hypercube, d ≥ 1: gap = 1/d;
//   - torus (any number of dimensions, any sides) and ring, N ≥ 2:
//     gap = min_i gap_i / (2·deg), deg the degree, gap_i = 2 - 2cos(2π/n_i)
//     for a side n_i ≥ 3 and gap_i = 2 for a side of 2; sides of 1 do not
//     count.
//
// The torus formula: the adjacency matrix of a Cartesian product of cycles
// has the eigenvalues Σ_i 2cos(2πk_i/n_i) (a side of 2 contributes ±1, a
// side of 1 nothing); the largest is deg, and the second largest moves one
// coordinate to its next eigenvalue, losing gap_i. With E[C] = ½I + A/(2·deg)
// that gives λ2 = 1 - min_i gap_i/(2·deg). For d equal sides n ≥ 3 it is the
// thesis's (1 - cos(2π/n)) / (2d). ok is false for any other graph (and for a
// single node).
func ClosedForm(g Graph) (s Spectral, ok bool) {
	var gap float64
	switch t := g.(type) {
	case *CompleteGraph:
		if t.n < 2 {
			return Spectral{}, false
		}
		gap = float64(t.n) / float64(2*t.n-2)
	case *HypercubeGraph:
		if t.d < 1 {
			return Spectral{}, false
		}
		gap = 1 / float64(t.d)
	case *TorusGraph:
		gap = torusGap(t.sides)
	case *RingGraph:
		gap = torusGap([]int{t.n})
	default:
		return Spectral{}, false
	}
	if gap == 0 {
		return Spectral{}, false
	}
	return Spectral{Lambda2: 1 - gap, Gap: gap, Method: MethodClosedForm}, true
}

// torusGap returns the spectral gap of the torus with the given sides, 0
// for one without edges.
func torusGap(sides []int) float64 {
	deg, minGap := 0, math.Inf(1)
	for _, s := range sides {
		switch {
		case s == 2:
			deg++
			minGap = min(minGap, 2)
		case s >= 3:
			deg += 2
			// 2 - 2cos(x) = 4 sin²(x/2), without the cancellation.
			sn := math.Sin(math.Pi / float64(s))
			minGap = min(minGap, 4*sn*sn)
		}
	}
	if deg == 0 {
		return 0
	}
	return minGap / float64(2*deg)
}

// Analyze returns ClosedForm(g) when there is a closed form and
// Spectrum(g) otherwise.
func Analyze(g Graph) (Spectral, error) {
	if s, ok := ClosedForm(g); ok {
		return s, nil
	}
	return Spectrum(g)
}

// PredictedRounds evaluates equation 5.1 with constant 1:
//
//	(ln N + ln(1/eps)) / (1 - λ2)
//
// with natural logarithms and λ2 from Analyze (the closed form when there is
// one, the numeric spectrum otherwise). Equation 5.1 is an O(·) bound: the
// result is an order of magnitude of the number of synchronous Push-Sum
// rounds until every node is eps-accurate, not a prediction; Model gives the
// fitted one. eps must be in (0, 1).
//
// On a graph that is not strongly connected (see StronglyConnected) the
// number is how fast mass drains into the closed classes, not how fast every
// node converges, which it never does: on the directed hypercube λ2 = 1/2
// but the source never hears from anyone. A gap of 0 (a disconnected
// undirected graph) is an error.
func PredictedRounds(g Graph, eps float64) (float64, error) {
	if err := checkEps(eps); err != nil {
		return 0, err
	}
	s, err := Analyze(g)
	if err != nil {
		return 0, err
	}
	return s.rounds(g.Name()+" on ", g.Len(), eps)
}

// Rounds evaluates equation 5.1 with constant 1, (ln n + ln(1/eps)) / Gap,
// for a graph of n nodes whose spectrum is s; PredictedRounds documents
// what the number means. eps must be in (0, 1), n ≥ 1 and the gap positive.
func (s Spectral) Rounds(n int, eps float64) (float64, error) {
	return s.rounds("", n, eps)
}

// rounds is Rounds with a graph name (ending in " on ") for its errors.
func (s Spectral) rounds(what string, n int, eps float64) (float64, error) {
	if err := checkEps(eps); err != nil {
		return 0, err
	}
	if n < 1 {
		return 0, fmt.Errorf("topology: %s%d nodes: %w", what, n, gossip.ErrInvalidConfig)
	}
	if !(s.Gap > 0) {
		return 0, fmt.Errorf("topology: %s%d nodes: spectral gap %v: averaging does not converge: %w",
			what, n, s.Gap, gossip.ErrInvalidConfig)
	}
	return (math.Log(float64(n)) - math.Log(eps)) / s.Gap, nil
}

func checkEps(eps float64) error {
	if math.IsNaN(eps) || eps <= 0 || eps >= 1 {
		return fmt.Errorf("topology: eps %v must be in (0, 1): %w", eps, gossip.ErrInvalidConfig)
	}
	return nil
}
