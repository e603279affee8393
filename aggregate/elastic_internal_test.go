package aggregate

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gossipreduce/gossipreduce/member/view"
)

// Two groups formed apart reach the same view numbers: their views' fixed
// groups must not share subjects, or a member of one takes the other's
// messages for its own view's.
func TestViewGroupNamesTheGenesis(t *testing.T) {
	a := view.View{Num: 2, Genesis: view.Genesis{Founder: view.Entry{Name: "i-1", Inc: 7}}}
	b := view.View{Num: 2, Genesis: view.Genesis{Founder: view.Entry{Name: "i-5", Inc: 7}}}
	c := view.View{Num: 2, Genesis: view.Genesis{Founder: view.Entry{Name: "i-1", Inc: 7}, Seq: 1}}
	d := view.View{Num: 2, Genesis: view.Genesis{Founder: view.Entry{Name: "i-1", Inc: 8}}}
	names := map[string]bool{}
	for _, v := range []view.View{a, b, c, d} {
		names[viewGroup("fleet", v)] = true
	}
	assert.Len(t, names, 4, "one name per genesis")
	assert.Equal(t, viewGroup("fleet", a), viewGroup("fleet", a))
	a3 := a
	a3.Num = 3
	assert.NotEqual(t, viewGroup("fleet", a), viewGroup("fleet", a3))
	assert.Regexp(t, `^fleet_v2_[0-9a-f]{16}$`, viewGroup("fleet", a))
}

// A member whose aggregation overran the next boundary runs that epoch at
// once instead of skipping it; otherwise it waits for the next boundary.
func TestNextEpochDoesNotSkipABoundary(t *testing.T) {
	const iv = 1000
	for _, c := range []struct {
		now, last, want int64
		why             string
	}{
		{now: 5_300, last: 0, want: 6_000, why: "first aggregation: the next boundary"},
		{now: 5_300, last: 5_000, want: 6_000, why: "ran the boundary just passed"},
		{now: 6_004, last: 5_000, want: 6_000, why: "timed out just past 6,000: run it now, with the others"},
		{now: 6_700, last: 5_000, want: 7_000, why: "too late for 6,000: wait for 7,000"},
		{now: 9_100, last: 5_000, want: 9_000, why: "after a long pause, the boundary just passed"},
		{now: 5_300, last: 5_234, want: 6_000, why: "after a Refresh between boundaries"},
	} {
		assert.Equal(t, c.want, nextEpoch(c.now, c.last, iv), c.why)
	}
}
