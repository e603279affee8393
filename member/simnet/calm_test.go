package simnet

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// TestSettledMembersIdleSlowly: a group whose estimates have settled and
// which waits Suspect for a crashed member to be declared dead has nothing
// to tell, and its idle steps slow down (member's idleWait). 64 members of
// a hypercube (degree 6), one crashed at the start: with an idle step
// every Idle (4 ms) throughout, each member sent 766 to 819 messages in
// the operation (seeds 10 to 15: its idle pushes, their answers and the
// pushes they set wandering until a neighbour of the dead member holds
// them); paced up to Suspect/24, 370 to 390. The bound lies between; the
// result must still leave out the crashed member alone.
func TestSettledMembersIdleSlowly(t *testing.T) {
	const n = 64
	net, err := New(Config{Nodes: n, Topology: "hypercube", Algorithm: "pfcc", Seed: 12})
	require.NoError(t, err)
	net.Crash(5, 100*time.Microsecond)
	inputs := make([][]float64, n)
	for i := range inputs {
		inputs[i] = []float64{float64(i)}
	}
	outs := net.Run(1, inputs, nil, 10*time.Second)
	total := 0
	for i := range n {
		if i == 5 {
			continue
		}
		o := outs[gossip.NodeID(i)]
		require.NoError(t, o.Err, "member %d", i)
		assert.Equal(t, []gossip.NodeID{5}, o.Result.Absent, "member %d", i)
		total += net.Sent(gossip.NodeID(i))
	}
	t.Logf("%.0f messages a member, %v simulated", float64(total)/(n-1), net.Now())
	assert.Less(t, float64(total)/(n-1), 550.0, "messages a member while the group waits for a crash to be declared")
}
