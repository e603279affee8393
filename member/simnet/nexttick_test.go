package simnet

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// TestNextTickIsKept checks member.Machine.NextTick, on which the
// simulator leaves out ticks, against what every tick does: chaos cases
// (crashes, the root's included, partitions, loss, slow and paused
// members, misconfigured ones) and the measurement's faults, every member
// ticked every Tick, and a tick that came before the time its member
// named after its previous event must have done nothing (see checkTicks).
// It fails if NextTick leaves out a timer of the runtime's protocol: a
// probe, a declaration, an idle step, a commit's resend, a take-over's
// wait.
func TestNextTickIsKept(t *testing.T) {
	var broke []string
	checkTicks = func(id gossip.NodeID, now time.Duration, what string) {
		if len(broke) < 5 {
			broke = append(broke, fmt.Sprintf("member %d at %v: %s", id, now, what))
		}
	}
	t.Cleanup(func() { checkTicks = nil })
	// Under the race detector (ten times slower) a quarter of it: CI runs
	// this package with -race, and the full check runs without.
	cases, scale := 40, 1
	if raceEnabled {
		cases, scale = 10, 4
	}
	seed := uint64(400)
	t.Logf("seeds %d to %d (replay: ChaosCase(seed, ChaosConfig{Scenarios: Scenarios, Algorithm: algo}))", seed, seed+uint64(cases)-1)
	for i := range cases {
		algo := []string{"pfcc", "exchange"}[i%2]
		c, err := ChaosCase(seed+uint64(i), ChaosConfig{Scenarios: Scenarios, Algorithm: algo})
		require.NoError(t, err)
		require.Empty(t, broke, "chaos case %d (%s): %s", seed+uint64(i), algo, c.Schedule)
	}
	for _, f := range []MeasureConfig{
		{Net: Config{Nodes: 256 / scale, Topology: "hypercube", Algorithm: "pfcc", Seed: 3}, Crash: 0.02},
		{Net: Config{Nodes: 256 / scale, Topology: "hypercube", Algorithm: "pfcc", Seed: 4, Loss: 0.05}},
		{Net: Config{Nodes: 128 / scale, Topology: "hypercube", Algorithm: "exchange", Seed: 5}, Crash: 0.02},
		{Net: Config{Nodes: 128 / scale, Topology: "hypercube", Algorithm: "pfcc", Seed: 6}, Slow: 0.05},
	} {
		_, err := Measure(context.Background(), f)
		require.NoError(t, err)
		require.Empty(t, broke, "%+v", f)
	}
}

// TestSlowingAMemberRearmsItsTicks: a member that elided its ticks and is
// then slowed, made late or paused between operations (as trace scripts
// do) gets a tick every Tick again from then on, not at whatever time its
// last queued tick was due (found in review: such a member went without
// a single tick through the next operation).
func TestSlowingAMemberRearmsItsTicks(t *testing.T) {
	net, err := New(Config{Nodes: 16, Topology: "hypercube", Algorithm: "pfcc", Seed: 9})
	require.NoError(t, err)
	net.Crash(5, 0)
	inputs := make([][]float64, 16)
	for i := range inputs {
		inputs[i] = []float64{float64(i)}
	}
	net.Run(1, inputs, nil, 10*time.Second)
	far := 0
	for i := range net.nodes {
		nd := &net.nodes[i]
		if i == 5 {
			continue
		}
		if nd.tickAt > net.Now()+net.cfg.Tick {
			far++
		}
		switch i % 3 {
		case 0:
			net.Slow(gossip.NodeID(i), 3)
		case 1:
			net.Late(gossip.NodeID(i), time.Millisecond)
		default:
			net.Pause(gossip.NodeID(i), net.Now()+time.Hour, time.Millisecond)
		}
		require.LessOrEqual(t, nd.tickAt, net.Now()+net.cfg.Tick, "member %d's next tick", i)
	}
	require.Positive(t, far, "no member had its next tick far off: the test shows nothing")
}
