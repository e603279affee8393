package simnet

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRestartedMemberRejoins: a member killed and started again with the
// same id while its group gossips (PFCC, 16 members of a hypercube) is
// back in the operation at once: every member returns the average of all
// 16 inputs, and the group sends about what a fault-free operation does.
// Its flow machine numbers its pushes from 1 again while its neighbours
// take numbers no higher than its earlier self's for stale; until it
// numbered on from their acknowledgements (pushflow's Restarted), the two
// sides ignored each other until its numbers caught up: at 2 and 5 ms
// into an operation of 6.7 ms, the restart took the operation to 1.26 s
// and 3.47 s and 339 and 707 messages a member, against 140.
func TestRestartedMemberRejoins(t *testing.T) {
	const n = 16
	run := func(at time.Duration, gap time.Duration) float64 {
		net, err := New(Config{Nodes: n, Topology: "hypercube", Algorithm: "pfcc", Seed: 3})
		require.NoError(t, err)
		if at > 0 {
			if gap > 0 {
				net.Crash(5, at)
			}
			net.Restart(5, at+gap)
		}
		runAgreed(t, net, n, 1, inputs(n), 30*time.Second)
		return float64(net.Messages) / n
	}
	free := run(0, 0)
	for _, c := range []struct{ at, gap time.Duration }{
		{2 * time.Millisecond, 0},
		{5 * time.Millisecond, 0},
		{2 * time.Millisecond, 400 * time.Microsecond},
		{5 * time.Millisecond, 400 * time.Microsecond},
	} {
		// 1.7: 232 messages a member at 5 ms with the fix, 707 without.
		assert.Less(t, run(c.at, c.gap), 1.7*free, "restart at %v after %v down (fault-free: %.1f a member)", c.at, c.gap, free)
	}
}
