package aggregate_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
	"github.com/gossipreduce/gossipreduce/internal/livegroup"
	"github.com/gossipreduce/gossipreduce/transport"
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

// TestTicksByNextTickAtMostEveryTick: a member ticked by NextTick is
// ticked no more often than every Tick, however long its due work stays
// due. The exchange's idle step is due again as soon as it is taken while
// a partner is silent, and a driver that ticked at once whenever the due
// time had passed spun: 16 exchange processes with one stopped sent
// 1,600 messages a second instead of 450 (a helper's adversarial runs,
// 2026-11-29). Here member 5 crashes before its first message, so that
// its partners wait on it until the fallback. The bound holds on any
// machine: a slow one ticks less often, never more.
func TestTicksByNextTickAtMostEveryTick(t *testing.T) {
	t.Cleanup(aggregate.SparseTicks())
	const n, tick = 16, time.Millisecond // the default Tick
	tr := memory(t, 0, 1)
	cfg := aggregate.Config{Group: "pace", Epsilon: 1e-9, Suspect: 150 * time.Millisecond}
	var g *livegroup.Group
	f := livegroup.Faults{Crash: []gossip.NodeID{5}, CrashAfter: 0, FlipBit: -1,
		Silence: func(id gossip.NodeID) {
			tr.Crash(transport.Group{Name: cfg.Group, ConfigHash: g.Nodes[id].ConfigHash()}, id)
		}}
	start := time.Now()
	g, err := livegroup.Join(context.Background(), tr, cfg, n, f)
	require.NoError(t, err)
	t.Cleanup(g.Close)
	o := g.Average(timeout(t, 30*time.Second), gossiptest.Inputs(n, 1, 4))
	requireOK(t, o, 1e-9)
	bound := int64(time.Since(start)/tick) + 1
	for i, nd := range g.Nodes {
		if o.Alive[i] {
			assert.LessOrEqual(t, nd.Ticks(), bound, "member %d ticked more often than every Tick", i)
		}
	}
}
