// Package approx is corrected gossip's analytic model (Hoefler et al.,
// IPDPS 2017): Lemma 1's expected number of processes colored by gossip
// over time, the quantiles of the longest run of uncolored processes
// (equation 2) and of chains of g-nodes (appendix B), and the gossip time T
// that minimises the latency approximations (equations 3, 4 and 5).
// Package broadcast uses it to choose T for a plan; package bsim publishes
// it. It trusts its input, which its callers validate, and its errors carry
// no package prefix: the callers add theirs.
package approx

import (
	"fmt"
	"math"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// Algorithm selects the latency approximation that picks T.
type Algorithm uint8

// The approximations.
const (
	Opportunistic Algorithm = iota // T + 2L + (2+K̂)O, equation 3
	Checked                        // T + 2L + (2+2K̂)O, equation 4
	FailProof                      // T + 4Ĝ·O + L - 13O, equation 5, with V = 2f+3
)

// Model is what the approximations depend on.
type Model struct {
	Nodes, Live int     // N and n (0 means N)
	L, O        int     // the LogP costs
	Delta       float64 // δ, in (0, 1)
	F           int     // f, for FailProof
}

// Choice is a gossip time and what went with it.
type Choice struct {
	T, ArgMin, K  int // T = ArgMin + O; K̂ (or Ĝ) at ArgMin
	Latency, Tail float64
	Ties          []int // every T reaching the minimum, increasing
}

// Colored returns c(j·O) for j = 0 … steps (Lemma 1).
func (m Model) Colored(steps int) []float64 {
	n := float64(m.Live)
	if m.Live == 0 {
		n = float64(m.Nodes)
	}
	o, l := m.O, m.L
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

// MaxGapQuantile returns K̂ and its tail (equation 2).
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

// ChainQuantile returns Ĝ_V and its tail (appendix B).
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

// Optimal returns the T minimising the approximation of alg, plus one O of
// margin. Among tied minimisers it keeps the one that withstands the
// largest reduction in δ (corrected gossip III.B and C): a minimiser's K̂,
// hence its latency, holds until δ falls to its tail, the probability of a
// longer gap, so the smallest tail wins (the smallest T on equal tails).
func Optimal(m Model, alg Algorithm) (Choice, error) {
	o, l := m.O, m.L
	logN := int(math.Ceil(math.Log2(float64(m.Nodes))))
	maxT := (logN*8 + 16) * (2*o + l)
	c := m.Colored((maxT+l+o)/o + 1)
	best := Choice{T: -1}
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
		case Opportunistic:
			k, tail = MaxGapQuantile(m.Nodes, ct, m.Delta)
			obj = float64(t + 2*l + (2+k)*o)
		case Checked:
			k, tail = MaxGapQuantile(m.Nodes, ct, m.Delta)
			obj = float64(t + 2*l + (2+2*k)*o)
		case FailProof:
			k, tail = ChainQuantile(m.Nodes, ct, m.Delta, 2*m.F+3)
			obj = float64(t + 4*k*o + l - 13*o)
		default:
			return Choice{}, fmt.Errorf("%w: unknown gossip algorithm %d", gossip.ErrInvalidConfig, alg)
		}
		switch {
		case best.T < 0 || obj < best.Latency:
			best = Choice{T: t + o, ArgMin: t, K: k, Latency: obj, Tail: tail, Ties: []int{t}}
		case obj == best.Latency:
			best.Ties = append(best.Ties, t)
			if tail < best.Tail {
				best.T, best.ArgMin, best.K, best.Tail = t+o, t, k, tail
			}
		}
	}
	if best.T < 0 {
		return Choice{}, fmt.Errorf("%w: no gossip time up to %d colors a quarter of the processes", gossip.ErrInvalidConfig, maxT)
	}
	return best, nil
}
