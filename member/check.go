package member

import (
	"fmt"
	"math"
	"slices"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// The safety invariant of the runtime, checked by Check:
//
//  1. Agreement: every member that ends an epoch with a nil error holds the
//     bitwise same Value, Extremes, Live, Absent and Epoch.
//  2. Coverage: such a member is covered by the result (it is not in
//     Absent), and the result covers a strict majority of the group.
//  3. Validity: Value equals, within ε relative (per component; absolute
//     where the exact value is zero), the average of the inputs of exactly
//     the members the result covers, Live of them.
//
// A member whose input is not covered never gets a nil error (2), so
// "excluded" always reaches the caller as ErrExcluded.

// Violation is one breach of the safety invariant in one epoch.
type Violation struct {
	Epoch  uint64
	Member gossip.NodeID
	What   string
}

func (v Violation) String() string {
	return fmt.Sprintf("epoch %d, member %d: %s", v.Epoch, v.Member, v.What)
}

// Check verifies the safety invariant for one epoch of a group of n
// members running Average: inputs are the members' input vectors (every
// member's, also of those that crashed), outcomes what each member that
// ended the epoch got (members that never ended it are absent from the
// map), eps the target relative accuracy. It returns every violation found;
// none means the epoch was safe.
func Check(n int, epoch uint64, inputs [][]float64, outcomes map[gossip.NodeID]Outcome, eps float64) []Violation {
	var vs []Violation
	ids := make([]gossip.NodeID, 0, len(outcomes))
	for id := range outcomes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var ref *Result
	var refID gossip.NodeID
	for _, id := range ids {
		out := outcomes[id]
		if out.Err != nil {
			continue
		}
		res := out.Result
		bad := func(format string, a ...any) {
			vs = append(vs, Violation{Epoch: epoch, Member: id, What: fmt.Sprintf(format, a...)})
		}
		if res.Epoch != epoch {
			bad("result of epoch %d", res.Epoch)
		}
		if !res.Covers(id) {
			bad("nil error with a result that does not cover this member (absent %v)", res.Absent)
		}
		if n > 1 && res.Live < Quorum(n) {
			bad("result covers %d of %d members, no majority", res.Live, n)
		}
		if res.Live != n-len(res.Absent) {
			bad("live %d but %d absent of %d", res.Live, len(res.Absent), n)
		}
		if ref == nil {
			ref, refID = &res, id
			if err := validity(n, res, inputs, eps); err != "" {
				bad("%s", err)
			}
			continue
		}
		if !gossip.SameBits(ref.Value, res.Value) || !gossip.SameBits(ref.Extremes, res.Extremes) || ref.Live != res.Live || !slices.Equal(ref.Absent, res.Absent) {
			bad("result %v (live %d, absent %v) differs from member %d's %v (live %d, absent %v)",
				res.Value, res.Live, res.Absent, refID, ref.Value, ref.Live, ref.Absent)
		}
	}
	return vs
}

// CheckExtremes checks the extremes of every nil-error result of an epoch
// whose members' extremes were extremes[j]: each is one of the members'
// (maxima are exact) and no lower than the maximum over the members the
// result covers. It may be higher: a gossip member merges the maxima of
// every certificate it hears, a member's that died afterwards included.
// Check compares the results with one another.
func CheckExtremes(n int, epoch uint64, extremes [][]float64, outcomes map[gossip.NodeID]Outcome) []Violation {
	var vs []Violation
	for id, out := range outcomes {
		if out.Err != nil || len(extremes) != n {
			continue
		}
		res := out.Result
		for c, v := range res.Extremes {
			floor, seen := math.Inf(-1), false
			for j := range n {
				if c >= len(extremes[j]) {
					continue
				}
				x := extremes[j][c]
				seen = seen || math.Float64bits(x) == math.Float64bits(v)
				if res.Covers(gossip.NodeID(j)) {
					floor = math.Max(floor, x)
				}
			}
			if !seen || v < floor {
				vs = append(vs, Violation{Epoch: epoch, Member: id, What: fmt.Sprintf(
					"extreme %d is %v: not a member's, or below %v, the maximum over the members covered", c, v, floor)})
			}
		}
		if len(res.Extremes) != len(extremes[id]) {
			vs = append(vs, Violation{Epoch: epoch, Member: id, What: fmt.Sprintf("%d extremes, its own were %d", len(res.Extremes), len(extremes[id]))})
		}
	}
	slices.SortFunc(vs, func(a, b Violation) int { return int(a.Member) - int(b.Member) })
	return vs
}

// validity compares a result with the exact average of the inputs it
// covers; it returns "" when they agree within eps.
func validity(n int, res Result, inputs [][]float64, eps float64) string {
	if len(inputs) != n {
		return fmt.Sprintf("checker given %d inputs for %d members", len(inputs), n)
	}
	var exact []float64
	count := 0
	for j := range n {
		if !res.Covers(gossip.NodeID(j)) {
			continue
		}
		if exact == nil {
			exact = make([]float64, len(inputs[j]))
		}
		if len(inputs[j]) != len(exact) {
			return fmt.Sprintf("member %d's input has %d components, others %d", j, len(inputs[j]), len(exact))
		}
		for i, v := range inputs[j] {
			exact[i] += v
		}
		count++
	}
	if len(res.Value) != len(exact) {
		return fmt.Sprintf("result has %d components, inputs %d", len(res.Value), len(exact))
	}
	for i := range exact {
		exact[i] /= float64(count)
		d := math.Abs(res.Value[i] - exact[i])
		if exact[i] != 0 {
			d /= math.Abs(exact[i])
		}
		if !(d <= eps) {
			return fmt.Sprintf("component %d is %v, the exact average of the %d covered inputs is %v (relative error %.3g > ε %g)", i, res.Value[i], count, exact[i], d, eps)
		}
	}
	return ""
}
