package broadcast

import "math"

// corrState is a process's opportunistic or checked correction state. The
// machines and the fast engine share it, so both apply the same rules.
type corrState struct {
	lOff, rOff int32 // messages sent (or skipped) to the left and right
	lMin, rMin int32 // distance of the nearest process heard from, each side
}

func newCorrState() corrState {
	return corrState{lMin: math.MaxInt32, rMin: math.MaxInt32}
}

// heard takes in a correction message from the process at distance dist on
// the right (a leftward message) or on the left.
func (c *corrState) heard(p *Plan, fromRight bool, dist int32) {
	switch p.spec.Correction.Kind {
	case CorrectionChecked:
		if fromRight {
			c.rMin = min(c.rMin, dist)
		} else {
			c.lMin = min(c.lMin, dist)
		}
	case CorrectionOptimized:
		// j at distance δ ≤ D to the right sent us its δ-th leftward
		// message, so it has dealt with the processes between us and it,
		// and it covers the first D-δ processes to our left; our right is
		// covered by j and what lies right of it. Applied to messages from
		// the left too, as the paper has it, two neighbours that receive
		// each other's messages first each skip what they believe the
		// other covers and can leave a process between them uncovered; one
		// direction keeps every reliance pointing right, so coverage holds.
		if fromRight {
			c.rOff = p.dr
			c.lOff = max(c.lOff, min(int32(p.spec.Correction.D)-dist, p.dl))
		}
	}
}

// next decides the next correction message: to the left or right at
// distance off. ok is false when the process is done correcting: checked
// correction has sent past the nearest process heard from on each side (or
// around the ring), opportunistic correction has sent D each way. The less
// advanced active direction goes first, left on ties.
func (c *corrState) next(p *Plan) (left bool, off int32, ok bool) {
	var lAct, rAct bool
	if p.spec.Correction.Kind == CorrectionChecked {
		if int64(c.lOff)+int64(c.rOff) >= int64(p.n)-1 {
			return false, 0, false
		}
		lAct, rAct = c.lOff < c.lMin, c.rOff < c.rMin
	} else {
		lAct, rAct = c.lOff < p.dl, c.rOff < p.dr
	}
	switch {
	case !lAct && !rAct:
		return false, 0, false
	case lAct && (!rAct || c.lOff <= c.rOff):
		c.lOff++
		return true, c.lOff, true
	}
	c.rOff++
	return false, c.rOff, true
}
