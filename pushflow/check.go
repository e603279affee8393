package pushflow

import (
	"math"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// verify is Algorithms 5 and 6, lines 2-7, with exact checksums: every
// flow this node computes is sealed (its checksum recomputed), so an intact
// flow's residual is exactly zero and a nonzero one is corruption. A flow
// whose corruption is within τ is tolerated (resealed: Push-Flow's own
// exchange heals an error that small); a larger one is zeroed (PFLC) or sent
// to its neighbour for repair (PFCC). The thesis tests the flows only when
// the estimate fails its checksum; testing each one costs no more than
// computing the estimate and catches what the sum would hide. The input is
// tested exactly and repaired from the last verified estimate (thesis 3.3)
// when every flow is sound.
func (m *Machine) verify(out []gossip.Message) []gossip.Message {
	if m.corr == 0 {
		return out
	}
	r := m.ref()
	flowsOK := true
	for n := range m.nbr {
		if m.nb[n].gone {
			continue
		}
		f := m.flow(n)
		res := residual(f, m.k)
		if res == 0 {
			continue
		}
		if within(res, norm1(f)+r, m.tau) {
			m.seal(f)
			continue
		}
		flowsOK = false
		if m.corr == Local {
			m.zero(n)
			continue
		}
		// Ask the neighbour for its flow, once, and again only if no answer
		// came within repairResend steps.
		if !m.nb[n].suspect || m.steps-m.nb[n].asked >= repairResend {
			m.nb[n].suspect = true
			m.nb[n].asked = m.steps
			m.cnt.Requests++
			out = m.sendRepair(n, out)
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

// settle records the estimate at the end of a step when nothing is known to
// be corrupted; it is the reference magnitude of the checks and the source
// of input repairs.
func (m *Machine) settle() {
	if m.corr == 0 {
		return
	}
	m.lastOK = residual(m.input, m.k) == 0 && !m.waitingRepair()
	if m.lastOK {
		copy(m.last, m.total())
	}
}

// repairInput recomputes (x, w, c) as e - Σ flows (thesis 3.3), replacing
// only the component that deviates most, then restores the checksum so the
// exact input test holds again.
func (m *Machine) repairInput() {
	cand := append(m.e[:0], m.last...)
	for n := range m.nbr {
		if m.nb[n].gone {
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
	m.totOK = false
	if at <= m.k {
		m.input[at] = cand[at]
	}
	m.input[m.k+1] = checksum(m.input[:m.k+1])
	m.cnt.InputRepairs++
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
