package pushflow_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
	"github.com/gossipreduce/gossipreduce/pfcc"
	"github.com/gossipreduce/gossipreduce/pflc"
	"github.com/gossipreduce/gossipreduce/pushflow"
)

// engines maps each flow algorithm to whether it runs on the thesis's own
// flows (a received flow overwrites the local one) rather than acknowledged
// flows.
var engines = map[string]struct {
	build     builder
	published bool
}{
	"pf":             {flowAlgos["pf"], false},
	"pflc":           {flowAlgos["pflc"], false},
	"pfcc":           {flowAlgos["pfcc"], false},
	"pf-published":   {flowAlgos["pf-published"], true},
	"pflc-published": {func(c gossip.Config) (gossip.Machine, error) { return pflc.NewPublished(c) }, true},
	"pfcc-published": {func(c gossip.Config) (gossip.Machine, error) { return pfcc.NewPublished(c) }, true},
}

// lossThenReverse builds three nodes of a triangle with seed s: node 0
// ticks and its push is lost; node 1 ticks; node 0 receives node 1's push
// and answers. It reports ok only when node 0's lost push went to 1, node
// 1's push went to 0 and node 0's answer went to 2, so that the edge 0-1
// carries nothing in flight but the lost push; the machines of 0 and 1 and
// the lost push's weight are returned.
func lossThenReverse(t *testing.T, build builder, s uint64) (a, b *pushflow.Machine, lost float64, ok bool) {
	t.Helper()
	ms, err := gossiptest.Build(gossiptest.Complete(3), [][]float64{{1}, {3}, {8}}, gossip.Average, s, build)
	require.NoError(t, err)
	a, b = ms[0].(*pushflow.Machine), ms[1].(*pushflow.Machine)
	first := a.Tick(nil)
	require.Len(t, first, 1)
	if first[0].To != 1 {
		return nil, nil, 0, false
	}
	lost = -a.Flow(1)[1] // the weight a pushed: its flow went from 0 to -lost
	reverse := b.Tick(nil)
	require.Len(t, reverse, 1)
	if reverse[0].To != 0 {
		return nil, nil, 0, false
	}
	answer, err := a.Step(reverse[0], nil)
	require.NoError(t, err)
	require.Len(t, answer, 1)
	return a, b, lost, answer[0].To == 2
}

// TestPublishedFlowsRepairALossOnTheReverseMessage: on the thesis's flows
// the first message in the other direction after a lost push restores flow
// conservation on the edge (f_01 = -f_10 exactly), which is why their loss
// overhead stays near 1/(1-p) (thesis 4.2). Acknowledged flows keep the
// lost push in transit instead (f_01 + f_10 = minus the push) until node 0
// next sends to 1, since node 0 cannot tell a lost push from one still on
// its way.
func TestPublishedFlowsRepairALossOnTheReverseMessage(t *testing.T) {
	for name, e := range engines {
		t.Run(name, func(t *testing.T) {
			// Scan seeds for the three random choices the scenario needs
			// (one seed in 27 on average); the first such seed is fixed,
			// so the test is deterministic.
			for s := uint64(1); s < 500; s++ {
				a, b, lost, ok := lossThenReverse(t, e.build, s)
				if !ok {
					continue
				}
				require.Positive(t, lost)
				f01, f10 := a.Flow(1), b.Flow(0)
				gap := f01[1] + f10[1] // weight component
				if e.published {
					assert.Zero(t, gap, "seed %d: the reverse message repaired the edge", s)
					assert.Zero(t, f01[0]+f10[0], "seed %d: value component", s)
				} else {
					// Exact: node 0 set f_01 = -f_10 - lost, one subtraction.
					assert.Equal(t, -lost, gap, "seed %d: the lost push is still in transit", s)
				}
				// The lost push carries node 0's first ratio, 1, and its
				// estimate has moved since: the acknowledged engine knows
				// the push is unaccounted for, the published one cannot.
				assert.Equal(t, e.published, a.Settled(0), "seed %d", s)
				return
			}
			t.Fatal("no seed below 500 gives the scenario")
		})
	}
}

// TestPublishedFlowsLoseMassToConcurrentMessages: the price of the
// thesis's flows. Two pushes that cross on an edge overwrite each other, and
// until a later message on the edge repairs it f_01 + f_10 is the sum of
// both pushes, mass counted twice; acknowledged flows merge the crossing
// push and keep the edge conserved.
func TestPublishedFlowsLoseMassToConcurrentMessages(t *testing.T) {
	for name, e := range engines {
		t.Run(name, func(t *testing.T) {
			ms, err := gossiptest.Build(gossiptest.Complete(2), [][]float64{{1}, {3}}, gossip.Average, 1, e.build)
			require.NoError(t, err)
			a, b := ms[0].(*pushflow.Machine), ms[1].(*pushflow.Machine)
			ma, mb := a.Tick(nil), b.Tick(nil)
			require.Len(t, ma, 1)
			require.Len(t, mb, 1)
			// Each pushes half its weight 1: 0.5 each way.
			_, err = a.Step(mb[0], nil)
			require.NoError(t, err)
			_, err = b.Step(ma[0], nil)
			require.NoError(t, err)
			// Each then answered with a push of half its weight, now in
			// flight: a node's weight before its answer was twice what it
			// holds now, and the two add up to the mass the nodes believe
			// they hold (every number here is exact in binary).
			total := 2*(1+a.Flow(1)[1]) + 2*(1+b.Flow(0)[1])
			if e.published {
				// Each took the other's 0.5 and its own back: 1.5 + 1.5.
				assert.Equal(t, 3.0, total, "mass counted twice")
			} else {
				assert.Equal(t, 2.0, total, "conserved")
			}
		})
	}
}
