package broadcast

import (
	"fmt"
	"math"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// GossipAlgorithm selects which of corrected gossip's latency
// approximations picks the gossip time T.
type GossipAlgorithm uint8

// The approximations of corrected gossip.
const (
	// GossipOpportunistic minimises T + 2L + (2+K̂)O (equation 3).
	GossipOpportunistic GossipAlgorithm = iota
	// GossipChecked minimises T + 2L + (2+2K̂)O (equation 4).
	GossipChecked
	// GossipFailProof minimises T + 4Ĝ·O + L - 13O (equation 5), derived
	// in the paper for f = 1 with chains of V = 5 g-nodes; for larger f
	// this package uses V = 2f+3 with the same constants.
	GossipFailProof
)

// GossipModel is what the approximations depend on.
type GossipModel struct {
	Nodes int     // N, the ring
	Live  int     // n, the live processes (0 means N)
	Model LogP    // L and O
	Delta float64 // δ, the accepted chance of a longer gap
	F     int     // f, for GossipFailProof
}

// GossipChoice is the result of OptimalGossipTime.
type GossipChoice struct {
	// T is the gossip time to use: ArgMin plus a margin of one O, as the
	// paper adds in all its experiments ("we recommend adding a small
	// margin to the selected T").
	T int
	// ArgMin is the smallest T minimising the approximation.
	ArgMin  int
	K       int     // K̂ (Ĝ for fail-proof) at ArgMin
	Latency float64 // the minimised objective
	Tail    float64 // probability mass beyond K̂ at ArgMin (below δ)
}

// ExpectedColored returns c(j·O) for j = 0 … steps, the expected number of
// processes colored by gossip at time j·O (corrected gossip, Lemma 1):
//
//	c(t+O) = c(t) + (n - c(t)) · (1 - (1 - 1/(N-1))^c(t-L-O)),
//
// with c(0) = 1 and c(t) = 0 for t < 0. When O does not divide L the
// sender count is taken at the last multiple of O before t-L-O.
func ExpectedColored(m GossipModel, steps int) ([]float64, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	return m.colored(steps), nil
}

func (m GossipModel) validate() error {
	if m.Nodes < 2 {
		return fmt.Errorf("broadcast: %w: gossip needs N ≥ 2, got %d", gossip.ErrInvalidConfig, m.Nodes)
	}
	if m.Live < 0 || m.Live > m.Nodes {
		return fmt.Errorf("broadcast: %w: %d live of %d", gossip.ErrInvalidConfig, m.Live, m.Nodes)
	}
	if !(m.Delta > 0 && m.Delta < 1) {
		return fmt.Errorf("broadcast: %w: delta %v outside (0, 1)", gossip.ErrInvalidConfig, m.Delta)
	}
	return m.Model.Validate()
}

func (m GossipModel) colored(steps int) []float64 {
	n := float64(m.Live)
	if m.Live == 0 {
		n = float64(m.Nodes)
	}
	o, l := m.Model.O, m.Model.L
	miss := math.Log1p(-1 / float64(m.Nodes-1)) // log(1 - 1/(N-1))
	c := make([]float64, steps+1)
	c[0] = 1
	for j := 0; j < steps; j++ {
		senders := 0.0
		if back := j*o - l - o; back >= 0 {
			senders = c[back/o]
		}
		c[j+1] = c[j] + (n-c[j])*(-math.Expm1(senders*miss))
	}
	return c
}

// MaxGapQuantile returns K̂, the smallest K such that the probability that
// the longest chain of consecutive uncolored processes after gossip is
// longer than K is below δ, given c colored processes out of N (corrected
// gossip, equation 2), and that probability.
func MaxGapQuantile(nodes int, c, delta float64) (k int, tail float64) {
	x := math.Min(math.Max(c/float64(nodes), 0), 1)
	// a_K = 1 - (1 - p(K))^N with p(K) = x²(1-x)^K.
	a := chainProbabilities(nodes, func(k int) float64 {
		return 2*math.Log(x) + float64(k)*math.Log1p(-x)
	}, 1)
	return quantile(a, 1, delta)
}

// chainProbabilities returns a[i] = 1 - (1 - exp(logp(first+i)))^N for
// i = 0, 1, … until the terms vanish (or the ring is exhausted).
func chainProbabilities(nodes int, logp func(int) float64, first int) []float64 {
	var a []float64
	peak := math.Inf(-1)
	for k := first; k <= nodes; k++ {
		lp := logp(k)
		if math.IsNaN(lp) {
			lp = math.Inf(-1)
		}
		p := math.Exp(lp)
		v := 1.0
		if p < 1 {
			v = -math.Expm1(float64(nodes) * math.Log1p(-p))
		}
		a = append(a, v)
		peak = math.Max(peak, lp)
		if lp < peak && v < 1e-300 {
			break
		}
	}
	return a
}

// quantile turns the existence probabilities a (a[i] for length first+i)
// into the distribution of the maximal length, p_K = a_K · Π_{i>K}(1-a_i),
// and returns the smallest K ≥ first-1 whose tail Σ_{i>K} p_i is below δ.
func quantile(a []float64, first int, delta float64) (int, float64) {
	m := len(a)
	// suffix[i] = Σ_{j>i} log(1 - a_j)
	suffix := make([]float64, m+1)
	for i := m - 1; i >= 0; i-- {
		suffix[i] = suffix[i+1]
		if i+1 < m {
			suffix[i] += log1m(a[i+1])
		}
	}
	p := make([]float64, m)
	for i := range a {
		p[i] = a[i] * math.Exp(suffix[i])
	}
	tail := 0.0
	k := first - 1 + m
	for i := m - 1; i >= 0; i-- {
		if tail+p[i] >= delta {
			return first + i, tail
		}
		tail += p[i]
		k = first - 1 + i
	}
	return k, tail
}

func log1m(a float64) float64 {
	if a >= 1 {
		return math.Inf(-1)
	}
	return math.Log1p(-a)
}

// ChainQuantile returns Ĝ_V for fail-proof correction (corrected gossip,
// appendix B): the smallest G such that the probability that some run of
// G consecutive processes holding exactly V g-nodes (the outer two at its
// ends) is longer than Ĝ is at most δ, given c colored of N, and that
// probability. q(G,V) = (c/N)^V (1-c/N)^(G-V) (G-2)!/((V-2)!(G-V)!).
func ChainQuantile(nodes int, c, delta float64, v int) (g int, tail float64) {
	x := math.Min(math.Max(c/float64(nodes), 0), 1)
	lv2, _ := math.Lgamma(float64(v - 1))
	a := chainProbabilities(nodes, func(g int) float64 {
		lg2, _ := math.Lgamma(float64(g - 1))
		lgv, _ := math.Lgamma(float64(g - v + 1))
		return float64(v)*math.Log(x) + float64(g-v)*math.Log1p(-x) + lg2 - lv2 - lgv
	}, v)
	return quantile(a, v, delta)
}

// OptimalGossipTime picks the gossip time T that minimises the latency
// approximation of alg (corrected gossip, equations 3, 4 and 5): the
// smallest minimiser, plus one O of margin. For N = n = 1024, L = O = 1 and
// δ = 6.93·10⁻⁷ this gives the paper's T = 24 for OCG (minimisers 23 and
// 24) and T = 25 for CCG (minimisers 24 and 26).
func OptimalGossipTime(m GossipModel, alg GossipAlgorithm) (GossipChoice, error) {
	if err := m.validate(); err != nil {
		return GossipChoice{}, err
	}
	if alg == GossipFailProof && (m.F < 1 || m.F > MaxFailProof) {
		return GossipChoice{}, fmt.Errorf("broadcast: %w: fail-proof approximation needs 1 ≤ f ≤ %d", gossip.ErrInvalidConfig, MaxFailProof)
	}
	o, l := m.Model.O, m.Model.L
	logN := int(math.Ceil(math.Log2(float64(m.Nodes))))
	maxT := (logN*8 + 16) * (2*o + l)
	c := m.colored((maxT+l+o)/o + 1)
	best := GossipChoice{T: -1}
	live := float64(m.Live)
	if m.Live == 0 {
		live = float64(m.Nodes)
	}
	for t := 1; t <= maxT; t++ {
		ct := c[(t+l+o)/o]
		if ct < live/4 {
			// With most processes uncolored the gap quantile is tens of
			// processes; such T are never optimal, and skipping them keeps
			// the search cheap for large N.
			continue
		}
		var k int
		var tail, obj float64
		switch alg {
		case GossipOpportunistic:
			k, tail = MaxGapQuantile(m.Nodes, ct, m.Delta)
			obj = float64(t + 2*l + (2+k)*o)
		case GossipChecked:
			k, tail = MaxGapQuantile(m.Nodes, ct, m.Delta)
			obj = float64(t + 2*l + (2+2*k)*o)
		case GossipFailProof:
			k, tail = ChainQuantile(m.Nodes, ct, m.Delta, 2*m.F+3)
			obj = float64(t + 4*k*o + l - 13*o)
		default:
			return GossipChoice{}, fmt.Errorf("broadcast: %w: unknown gossip algorithm %d", gossip.ErrInvalidConfig, alg)
		}
		if best.T < 0 || obj < best.Latency {
			best = GossipChoice{T: t + o, ArgMin: t, K: k, Latency: obj, Tail: tail}
		}
	}
	if best.T < 0 {
		return GossipChoice{}, fmt.Errorf("broadcast: %w: no gossip time up to %d colors a quarter of the processes", gossip.ErrInvalidConfig, maxT)
	}
	return best, nil
}
