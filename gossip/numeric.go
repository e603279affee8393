package gossip

import (
	"fmt"
	"math"
)

// Aggregate returns the exact aggregate Σ_i values[i] / Σ_i weights[i],
// element-wise, computed with Neumaier's compensated summation so that the
// reference is accurate to a few units in the last place however many nodes
// contribute (the plain sum of N terms may lose log2 N bits). It is the α of
// equation 4.1 against which estimates are measured.
func Aggregate(values [][]float64, weights []float64) ([]float64, error) {
	if len(values) == 0 {
		return nil, fmt.Errorf("gossip: %w: no values", ErrLength)
	}
	if len(weights) != len(values) {
		return nil, fmt.Errorf("gossip: %w: %d weights for %d values", ErrLength, len(weights), len(values))
	}
	k := len(values[0])
	if k == 0 {
		return nil, fmt.Errorf("gossip: %w: empty value vector", ErrLength)
	}
	sums := make([]neumaier, k)
	var w neumaier
	for i, v := range values {
		if len(v) != k {
			return nil, fmt.Errorf("gossip: %w: node %d has %d components, node 0 has %d", ErrLength, i, len(v), k)
		}
		if err := CheckFinite(v); err != nil {
			return nil, fmt.Errorf("node %d: %w", i, err)
		}
		for c, x := range v {
			sums[c].add(x)
		}
		w.add(weights[i])
	}
	tw := w.total()
	if tw == 0 || math.IsNaN(tw) || math.IsInf(tw, 0) {
		return nil, fmt.Errorf("gossip: %w: total weight %v", ErrInvalidConfig, tw)
	}
	out := make([]float64, k)
	for c := range sums {
		out[c] = sums[c].total() / tw
	}
	return out, nil
}

// neumaier is a compensated running sum (Neumaier's variant of Kahan).
type neumaier struct{ sum, comp float64 }

func (n *neumaier) add(x float64) {
	t := n.sum + x
	if math.Abs(n.sum) >= math.Abs(x) {
		n.comp += (n.sum - t) + x
	} else {
		n.comp += (x - t) + n.sum
	}
	n.sum = t
}

func (n *neumaier) total() float64 { return n.sum + n.comp }

// RelError is the relative error of equation 4.1 for one node: the largest,
// over components, of |est - exact| / |exact|. A component whose exact value
// is zero contributes its absolute error instead, since no relative error is
// defined there. NaN estimates give +Inf, so that a corrupted node never looks
// converged.
func RelError(est, exact []float64) float64 {
	worst := 0.0
	for c, a := range exact {
		var e float64
		if c >= len(est) {
			return math.Inf(1)
		}
		y := est[c]
		if math.IsNaN(y) {
			return math.Inf(1)
		}
		if a == 0 {
			e = math.Abs(y)
		} else {
			e = math.Abs(y-a) / math.Abs(a)
		}
		if e > worst || math.IsNaN(e) {
			worst = e
		}
	}
	if math.IsNaN(worst) {
		return math.Inf(1)
	}
	return worst
}

// SameBits reports whether two vectors hold the same float64 bits, word
// for word: what "identical at every member" means (0 and -0 differ, and
// a NaN equals only the same NaN).
func SameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}
