package broadcast

// CorrectionState is one process's progress through opportunistic,
// optimized or checked correction: how far it has sent on each side of the
// ring and how near the processes it has heard from are. A Machine keeps
// one; a simulator that applies the rules without machines (bsim's fast
// engine) keeps one per process and so corrects exactly as the machines
// do. The zero value has sent nothing and heard nothing.
type CorrectionState struct {
	lOff, rOff int32 // messages sent (or skipped) to the left and right
	lMin, rMin int32 // distance of the nearest process heard from, each side; 0 for none
}

// Heard takes in a correction message from the process at distance dist
// ≥ 1 on the ring: on the right (a leftward message) if fromRight, else on
// the left.
func (c *CorrectionState) Heard(p *Plan, fromRight bool, dist int) {
	d := int32(dist)
	switch p.spec.Correction.Kind {
	case CorrectionChecked:
		if fromRight {
			if c.rMin == 0 || d < c.rMin {
				c.rMin = d
			}
		} else if c.lMin == 0 || d < c.lMin {
			c.lMin = d
		}
	case CorrectionOptimized:
		// j at distance δ ≤ D to the right sent us its δ-th leftward
		// message, so it has dealt with the processes between us and it,
		// and it covers the first D-δ processes to our left (D the
		// leftward messages per process, ⌊D/2⌋ when split); our right is
		// covered by j and what lies right of it. Applied to messages from
		// the left too, as the paper has it, two neighbours that receive
		// each other's messages first each skip what they believe the
		// other covers and can leave a process between them uncovered; one
		// direction keeps every reliance pointing right, so coverage holds.
		if fromRight {
			c.rOff = p.dr
			c.lOff = max(c.lOff, min(p.reachL-d, p.dl))
		}
	}
}

// Next decides the next correction message: to the left or right at
// distance dist. ok is false when the process is done correcting: checked
// correction has sent past the nearest process heard from on each side (or
// around the ring), opportunistic correction has sent D each way. The less
// advanced active direction goes first, left on ties.
func (c *CorrectionState) Next(p *Plan) (left bool, dist int, ok bool) {
	var lAct, rAct bool
	if p.spec.Correction.Kind == CorrectionChecked {
		if int64(c.lOff)+int64(c.rOff) >= int64(p.n)-1 {
			return false, 0, false
		}
		lAct, rAct = c.lMin == 0 || c.lOff < c.lMin, c.rMin == 0 || c.rOff < c.rMin
	} else {
		lAct, rAct = c.lOff < p.dl, c.rOff < p.dr
	}
	switch {
	case !lAct && !rAct:
		return false, 0, false
	case lAct && (!rAct || c.lOff <= c.rOff):
		c.lOff++
		return true, int(c.lOff), true
	}
	c.rOff++
	return false, int(c.rOff), true
}
