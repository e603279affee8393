package aggregate_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/gossip"
)

// TestTicksByNextTick runs the fault tests' groups with every member ticked
// as a member alone in its process is (see driver.pace): only when
// member.Machine.NextTick says a tick can act. A tick left out that had
// work to do (a declaration, an idle step, a take-over) leaves the
// operation short of its result, or keeps a crashed member in it.
func TestTicksByNextTick(t *testing.T) {
	t.Cleanup(aggregate.SparseTicks())
	t.Run("exchange", func(t *testing.T) {
		o := runWithCrashes(t, 16, "", 0, nil)
		requireOK(t, o, 1e-9)
		assert.Equal(t, 16, o.Results[0].Live)
	})
	t.Run("exchange crash", func(t *testing.T) {
		o := runWithCrashes(t, 16, "", 1, []gossip.NodeID{3, 12})
		requireOK(t, o, 1e-9)
		r := o.Results[0]
		assert.GreaterOrEqual(t, r.Live, 14)
		for _, a := range r.Absent {
			assert.Contains(t, []gossip.NodeID{3, 12}, a, "only crashed members are left out")
		}
	})
	t.Run("pfcc crash", func(t *testing.T) {
		o := runWithCrashes(t, 16, "pfcc", 10, []gossip.NodeID{5, 11})
		requireOK(t, o, 1e-9)
		assert.Equal(t, 14, o.Results[0].Live)
	})
	t.Run("pfcc root crash", func(t *testing.T) {
		o := runWithCrashes(t, 16, "pfcc", 10, []gossip.NodeID{0})
		requireOK(t, o, 1e-9)
		r := o.Results[slices.IndexFunc(o.Alive, func(a bool) bool { return a })]
		assert.Equal(t, 15, r.Live)
		assert.NotEqual(t, gossip.NodeID(0), r.Root, "another member took over")
	})
}
