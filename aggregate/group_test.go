package aggregate_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
	"github.com/gossipreduce/gossipreduce/internal/livegroup"
	"github.com/gossipreduce/gossipreduce/transport"
)

// group joins n members over t with cfg (ID filled in per member), with
// the live-run harness the commands use.
func group(t *testing.T, tr transport.Transport, n int, cfg aggregate.Config) []*aggregate.Node {
	t.Helper()
	g, err := livegroup.Join(context.Background(), tr, cfg, n, livegroup.None)
	require.NoError(t, err)
	t.Cleanup(g.Close)
	return g.Nodes
}

// averageAll runs Average on every member at once.
func averageAll(ctx context.Context, nodes []*aggregate.Node, inputs [][]float64) *livegroup.Outcome {
	return (&livegroup.Group{Nodes: nodes}).Average(ctx, inputs)
}

// requireOK checks an operation with the harness's checker: every member
// meant to survive returned a result, all the bitwise same, of one epoch,
// covering the same members, within eps of the exact average of the
// inputs of those members.
func requireOK(t *testing.T, o *livegroup.Outcome, eps float64) {
	t.Helper()
	v := o.Check()
	require.NoError(t, v.Err)
	alive := 0
	for _, a := range o.Alive {
		if a {
			alive++
		}
	}
	require.Equal(t, alive, v.Results)
	require.True(t, v.Identical, "every member the same bits")
	assert.LessOrEqual(t, v.Worst, eps)
}

func TestAverageInMemory(t *testing.T) {
	tr, err := transport.NewMemory(transport.MemoryOptions{})
	require.NoError(t, err)
	defer tr.Close()
	nodes := group(t, tr, 16, aggregate.Config{Group: "t1", Algorithm: "pfcc", Epsilon: 1e-9})
	inputs := gossiptest.Inputs(16, 2, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	o := averageAll(ctx, nodes, inputs)
	requireOK(t, o, 1e-9)
	assert.Equal(t, 16, o.Results[0].Live)
	assert.Equal(t, uint64(1), o.Results[0].Epoch)
	t.Logf("elapsed %v, messages of node 0: %d", o.Results[0].Elapsed, o.Results[0].Messages)
}
