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
