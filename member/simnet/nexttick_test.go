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
	seed := uint64(400)
	t.Logf("seeds %d to %d (replay: ChaosCase(seed, Scenarios, 3, algo))", seed, seed+39)
	for i := range 40 {
		algo := []string{"pfcc", "exchange"}[i%2]
		c, err := ChaosCase(seed+uint64(i), Scenarios, 3, algo)
		require.NoError(t, err)
		require.Empty(t, broke, "chaos case %d (%s): %s", seed+uint64(i), algo, c.Schedule)
	}
	for _, f := range []MeasureConfig{
		{Net: Config{Nodes: 256, Topology: "hypercube", Algorithm: "pfcc", Seed: 3}, Crash: 0.02},
		{Net: Config{Nodes: 256, Topology: "hypercube", Algorithm: "pfcc", Seed: 4, Loss: 0.05}},
		{Net: Config{Nodes: 128, Topology: "hypercube", Algorithm: "exchange", Seed: 5}, Crash: 0.02},
		{Net: Config{Nodes: 128, Topology: "hypercube", Algorithm: "pfcc", Seed: 6}, Slow: 0.05},
	} {
		_, err := Measure(context.Background(), f)
		require.NoError(t, err)
		require.Empty(t, broke, "%+v", f)
	}
}
