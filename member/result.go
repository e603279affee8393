package member

import (
	"errors"
	"math"
	"time"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// Errors of the runtime protocol. Package aggregate returns them (it
// re-exports each under the same name); returned errors wrap them, so test
// with errors.Is.
var (
	// ErrNotConverged reports an operation that ended (its context, or the
	// caller's give-up) before the group agreed on a result. The Result then
	// holds this member's own estimate, which the other members do not share,
	// or no Value when that estimate is not finite (never NaN or Inf).
	ErrNotConverged = errors.New("member: not converged")
	// ErrExcluded reports that the group's result leaves this member out
	// (it was silent for too long, or cut off), or that a member declared
	// it dead and no result that covers it came within Suspect after (or
	// longer, see Config.Suspect). The
	// member never gets a result that does not cover it, and one told it
	// was declared dead still takes a result that does: the root may have
	// decided with it before the declaration.
	ErrExcluded = errors.New("member: excluded by the group")
	// ErrInputLost reports an operation of an algorithm that cannot leave
	// out what a member held (algo.Spec.Lossy: Push-Sum) in which a
	// member was declared dead: the value the others converge to is the
	// average of no set of inputs, and they fail rather than return it.
	ErrInputLost = errors.New("member: an input was lost with a member")
	// ErrRestarted is returned for an operation earlier than the one a
	// restarted member's earlier incarnation voted in, or for the one it
	// began with an algorithm that would count its input twice (see
	// HardState).
	ErrRestarted = errors.New("member: restarted")
	// ErrClosed reports an operation on a closed member.
	ErrClosed = errors.New("member: closed")
	// ErrGroupMismatch reports that members of the group disagree on the
	// operation: a vector of another length, or another configuration.
	ErrGroupMismatch = errors.New("member: group members disagree")
)

// Result is the outcome of one operation. Every member that gets one with a
// nil error gets the bitwise same Value, Extremes, Live, Absent and Epoch.
type Result struct {
	// Value is the aggregate, one entry per input component.
	Value []float64
	// Extremes are the element-wise maxima of the members' Extremes.
	Extremes []float64
	// Absent are the members the result does not cover: declared dead
	// during the operation, or known to be away when it started.
	Absent []gossip.NodeID
	// Epoch numbers the group's operations: the first is 1.
	Epoch uint64
	// View and Names describe an operation of an elastic group (package
	// aggregate, Config.Name): the number of the view it ran over and the
	// names of that view's members, Names[i] being member i (Absent holds
	// such ids). Zero for a fixed group.
	View  uint64
	Names []string
	// Live is the number of members whose inputs the result covers: the
	// group size minus len(Absent). A result always covers a majority of
	// the group and the member that returns it. A covered input is not
	// always of a member alive at the end: with dimension exchange (package
	// exchange) a member that dies after its input left it stays covered,
	// its input taken from the members that hold it; a gossip algorithm
	// leaves out every member declared dead during the operation.
	// Whatever the algorithm, Value is the aggregate of exactly the inputs
	// covered.
	Live int
	// Root is the member that decided the result: it proposed it and a
	// majority accepted it (after a take-over, the value may be the
	// estimate of an earlier root that died deciding; see commit.go).
	// It is the one field members may disagree on: a root that stalled
	// after its proposal was accepted and a successor that proposed the
	// same value again can both decide it, and each member names the
	// one whose broadcast reached it first (with real processes, a root
	// stopped for 2 s at its first proposal: members named 0 or 1).
	Root gossip.NodeID
	// Messages is the number of messages this member sent in the
	// operation (gossip, broadcast and answers to late members).
	Messages int
	// Elapsed is the time from the start of the operation to the result.
	Elapsed time.Duration
	// At is when this member got the result, so that a stale one shows.
	// The member machine has no clock; its driver sets At.
	At time.Time
}

// Covers reports whether the result covers member id's input.
func (r Result) Covers(id gossip.NodeID) bool {
	for _, a := range r.Absent {
		if a == id {
			return false
		}
	}
	return true
}

// resultPayload lays a result out for the broadcast and for late members:
// values (k), extremes (m), the number of live members, then the dead set
// as 64-bit words.
func resultPayload(values, ext []float64, live int, dead bitset) []float64 {
	p := make([]float64, 0, len(values)+len(ext)+1+len(dead))
	p = append(p, values...)
	p = append(p, ext...)
	p = append(p, float64(live))
	for _, w := range dead {
		p = append(p, math.Float64frombits(w))
	}
	return p
}

// parseResult splits a result payload; ok is false for one of another
// shape, or whose live count does not match its dead set.
func parseResult(p []float64, k, m, n int) (values, ext []float64, live int, dead bitset, ok bool) {
	words := (n + 63) / 64
	if len(p) != k+m+1+words {
		return nil, nil, 0, nil, false
	}
	l := p[k+m]
	if !(l >= 1 && l <= float64(n)) || l != math.Trunc(l) {
		return nil, nil, 0, nil, false
	}
	dead = make(bitset, words)
	for i := range dead {
		dead[i] = math.Float64bits(p[k+m+1+i])
	}
	if rest := n % 64; rest != 0 && dead[words-1]>>rest != 0 {
		return nil, nil, 0, nil, false
	}
	if int(l) != n-dead.count() {
		return nil, nil, 0, nil, false
	}
	for _, v := range p[:k+m] {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, nil, 0, nil, false
		}
	}
	return p[:k], p[k : k+m], int(l), dead, true
}
