package pushflow

import (
	"math"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// verify is Algorithms 5 and 6, lines 2-7: if the estimate fails its
// checksum, every flow is tested, and corrupted ones are zeroed (PFLC) or
// sent to their neighbour for repair (PFCC). The input is tested exactly at
// every step and repaired from the last verified estimate (thesis 3.3) when
// every flow is sound.
func (m *Machine) verify(out []gossip.Message) []gossip.Message {
	if m.corr == 0 {
		return out
	}
	r := m.ref()
	flowsOK := true
	if e, scale := m.sumScale(); !within(residual(e, m.k), scale, m.tau) {
		for n := range m.nbr {
			if m.gone[n] || m.consistent(m.flow(n), r) {
				continue
			}
			flowsOK = false
			if m.corr == Local {
				m.zero(n)
				continue
			}
			m.suspect[n] = true
			m.cnt.Requests++
			out = m.send(n, out)
		}
	}
	if residual(m.input, m.k) != 0 {
		if m.lastOK && flowsOK {
			m.repairInput()
		} else {
			m.cnt.InputLost++
		}
	}
	return out
}

// settle records the estimate at the end of a step if it is verified; it is
// the reference magnitude of the checks and the source of input repairs.
func (m *Machine) settle() {
	if m.corr == 0 {
		return
	}
	e, scale := m.sumScale()
	m.lastOK = residual(m.input, m.k) == 0 && within(residual(e, m.k), scale, m.tau)
	if m.lastOK {
		copy(m.last, e)
	}
}

// repairInput recomputes (x, w, c) as e - Σ flows (thesis 3.3), replacing
// only the component that deviates most, then restores the checksum so the
// exact input test holds again.
func (m *Machine) repairInput() {
	cand := append(m.e[:0], m.last...)
	for n := range m.nbr {
		if m.gone[n] {
			continue
		}
		for c, v := range m.flow(n) {
			cand[c] -= v
		}
	}
	worst, at := -1.0, 0
	for c, v := range m.input {
		if d := math.Abs(v - cand[c]); !(d <= worst) {
			worst, at = d, c
		}
	}
	if at <= m.k {
		m.input[at] = cand[at]
	}
	m.input[m.k+1] = checksum(m.input[:m.k+1])
	m.cnt.InputRepairs++
}

// sumScale returns e = input + Σ flows and Σ of the magnitudes of its terms,
// the scale of the rounding error in e.
func (m *Machine) sumScale() ([]float64, float64) {
	e := m.sum(m.e, false)
	scale := norm1(m.input)
	for n := range m.nbr {
		if !m.gone[n] {
			scale += norm1(m.flow(n))
		}
	}
	return e, scale
}

// ref is the reference magnitude R of the flow checks: the size of the last
// verified estimate, or of the input if that is not finite.
func (m *Machine) ref() float64 {
	if r := norm1(m.last); r <= math.MaxFloat64 {
		return r
	}
	if r := norm1(m.input); r <= math.MaxFloat64 {
		return r
	}
	return 0
}

// consistent reports whether the triple v passes its checksum test against
// reference magnitude r. NaN and infinities fail.
func (m *Machine) consistent(v []float64, r float64) bool {
	return within(residual(v, m.k), norm1(v)+r, m.tau)
}

// within reports res ≤ tau·scale, written so that NaN and ∞ fail: an exact
// zero residual passes (also for an all-zero triple), anything else must
// have a finite ratio no larger than tau.
func within(res, scale, tau float64) bool {
	return res == 0 || res/scale <= tau
}

// residual is |Σ_c v_x[c] + v_w - v_c| for a triple of k value components,
// summed in the order checksum uses.
func residual(v []float64, k int) float64 {
	return math.Abs(checksum(v[:k+1]) - v[k+1])
}

func norm1(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += math.Abs(x)
	}
	return s
}
