package pushflow_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
	"github.com/gossipreduce/gossipreduce/pushflow"
	"github.com/gossipreduce/gossipreduce/sim"
)

// pair builds Push-Cancel-Flow on two nodes, whose only neighbour is each
// other, so every send goes where the replay needs it.
func pair(t *testing.T, fixed bool) (i, j *pushflow.CancelMachine) {
	t.Helper()
	build := pushflow.NewPCFPublished
	if fixed {
		build = pushflow.NewPCF
	}
	i, err := build(gossip.Config{ID: 0, Overlay: gossiptest.Complete(2), Value: []float64{1}})
	require.NoError(t, err)
	j, err = build(gossip.Config{ID: 1, Overlay: gossiptest.Complete(2), Value: []float64{3}})
	require.NoError(t, err)
	return i, j
}

func step(t *testing.T, m *pushflow.CancelMachine, msg gossip.Message) []gossip.Message {
	t.Helper()
	out, err := m.Step(msg, nil)
	require.NoError(t, err)
	return out
}

func handshake(t *testing.T, m *pushflow.CancelMachine, peer gossip.NodeID) [2]uint64 {
	c, r, ok := m.Handshake(peer)
	require.True(t, ok)
	return [2]uint64{uint64(c), r}
}

// exchange delivers messages back and forth, each answer in turn, for n
// deliveries.
func exchange(t *testing.T, i, j *pushflow.CancelMachine, queue []gossip.Message, n int) {
	for range n {
		if len(queue) == 0 {
			queue = append(queue, i.Tick(nil)...)
			continue
		}
		msg := queue[0]
		queue = queue[1:]
		to := i
		if msg.To == 1 {
			to = j
		}
		queue = append(queue, step(t, to, msg)...)
	}
}

// figure25 is a schedule of figure 2.5's kind, found by search over
// two-node schedules with FIFO links: both nodes send twice before hearing
// back, and the published algorithm ends with i at (c, r) = (1, 1) and j at
// (0, 2), the states of the thesis's example, where neither case 0 nor case
// 1 ever applies again.
var figure25 = []string{"j.Tick", "i.Step", "j.Tick", "j.Step", "i.Tick", "i.Tick", "j.Step", "j.Tick", "j.Step", "i.Step", "i.Step"}

// replay runs a schedule: X.Tick ticks node X, X.Step delivers the oldest
// message in flight to X (if any). It returns what is still in flight.
func replay(t *testing.T, i, j *pushflow.CancelMachine, schedule []string) []gossip.Message {
	t.Helper()
	var toI, toJ []gossip.Message
	for _, op := range schedule {
		switch op {
		case "i.Tick":
			toJ = append(toJ, i.Tick(nil)...)
		case "j.Tick":
			toI = append(toI, j.Tick(nil)...)
		case "i.Step":
			if len(toI) > 0 {
				toJ = append(toJ, step(t, i, toI[0])...)
				toI = toI[1:]
			}
		case "j.Step":
			if len(toJ) > 0 {
				toI = append(toI, step(t, j, toJ[0])...)
				toJ = toJ[1:]
			}
		}
	}
	return append(toI, toJ...)
}

func TestFigure25PublishedPCFStalls(t *testing.T) {
	i, j := pair(t, false)
	replay(t, i, j, figure25)
	assert.Equal(t, [2]uint64{1, 1}, handshake(t, i, 1))
	assert.Equal(t, [2]uint64{0, 2}, handshake(t, j, 0))

	// "Whenever one of the two nodes sends now a message to the other
	// node, case 0 does not apply as r_ij ≠ r_ji and case 1 does also not
	// apply as c_ij ≠ c_ji, thus the message gets discarded."
	wi, wj := i.Estimate(nil)[0], j.Estimate(nil)[0]
	for range 50 {
		step(t, j, i.Tick(nil)[0])
		step(t, i, j.Tick(nil)[0])
	}
	// Each Step also answers; those answers are what the next Ticks would
	// be, so 100 discarded deliveries is the whole exchange.
	assert.Equal(t, 100, i.Discarded()+j.Discarded()-countDiscardedDuringReplay(t))
	assert.Equal(t, [2]uint64{1, 1}, handshake(t, i, 1), "for good")
	assert.Equal(t, [2]uint64{0, 2}, handshake(t, j, 0), "for good")
	// The pushes go into an edge nobody reads: mass leaks, and the
	// estimates move away from where they were instead of towards 2.
	assert.NotEqual(t, wi, i.Estimate(nil)[0])
	ei, ej := i.Estimate(nil)[0], j.Estimate(nil)[0]
	assert.False(t, math.Abs(ei-2) < 1e-3 && math.Abs(ej-2) < 1e-3, "estimates %v %v (were %v %v)", ei, ej, wi, wj)
}

// countDiscardedDuringReplay replays figure25 on a fresh pair and returns
// how many messages the replay itself discarded.
func countDiscardedDuringReplay(t *testing.T) int {
	i, j := pair(t, false)
	replay(t, i, j, figure25)
	return i.Discarded() + j.Discarded()
}

func TestPublishedPCFFailsInTheSimulator(t *testing.T) {
	for _, a := range []string{"pcf", "pcf-published"} {
		r, err := sim.Run(context.Background(), sim.Config{Algorithm: a, Overlay: hypercube(4), Epsilon: 1e-12, Seed: 1, MaxMsgs: 1000})
		require.NoError(t, err)
		assert.Equal(t, a == "pcf", r.Converged, "%s: %s, error %g", a, r.Reason, r.MaxRelError)
	}
}

func TestFigure25FixedPCFConverges(t *testing.T) {
	i, j := pair(t, true)
	rest := replay(t, i, j, figure25)
	assert.Positive(t, i.Counters().HeldBack+j.Counters().HeldBack, "the consecutive sends were held back")
	exchange(t, i, j, rest, 200)
	assert.Zero(t, i.Discarded()+j.Discarded())
	// Two nodes averaging 1 and 3: 200 exchanges halve the error 200 times;
	// what is left is rounding, a few ulps of 2.
	assert.InDelta(t, 2, i.Estimate(nil)[0], 1e-14)
	assert.InDelta(t, 2, j.Estimate(nil)[0], 1e-14)
}

func TestFixedPCFConvergesInRandomOrder(t *testing.T) {
	for seed := range uint64(5) {
		inputs := gossiptest.Inputs(16, 2, seed)
		ms, err := gossiptest.Build(gossiptest.Hypercube(4), inputs, gossip.Average, seed,
			func(c gossip.Config) (gossip.Machine, error) { return pushflow.NewPCF(c) })
		require.NoError(t, err)
		exact := average(t, inputs)
		net := gossiptest.NewNet(ms, seed+10)
		net.Start()
		// 1e-12: well above PCF's rounding floor at 16 nodes (PCF keeps
		// flows small, so a few hundred ulps), far below the initial ~0.3.
		require.NoError(t, net.RunUntil(400000, func() bool { return net.MaxError(exact) <= 1e-12 }), "seed %d", seed)
	}
}

func TestPCFExcludeGivesSurvivorsAggregate(t *testing.T) {
	runExcludingNode5(t, func(c gossip.Config) (gossip.Machine, error) { return pushflow.NewPCF(c) }, 400000)
}
