package aggregate_test

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
	"github.com/gossipreduce/gossipreduce/transport"
)

// group joins n members over t with cfg (ID filled in per member).
func group(t *testing.T, tr transport.Transport, n int, cfg aggregate.Config) []*aggregate.Node {
	t.Helper()
	nodes := make([]*aggregate.Node, n)
	for i := range nodes {
		c := cfg
		c.ID = gossip.NodeID(i)
		c.Nodes = n
		nd, err := aggregate.Join(context.Background(), tr, c)
		require.NoError(t, err)
		nodes[i] = nd
		t.Cleanup(func() { nd.Close() })
	}
	return nodes
}

// averageAll runs Average on every member at once.
func averageAll(ctx context.Context, nodes []*aggregate.Node, inputs [][]float64) ([]aggregate.Result, []error) {
	res := make([]aggregate.Result, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, nd := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i], errs[i] = nd.Average(ctx, inputs[i])
		}()
	}
	wg.Wait()
	return res, errs
}

func exactAverage(t *testing.T, inputs [][]float64) []float64 {
	w := make([]float64, len(inputs))
	for i := range w {
		w[i] = 1
	}
	exact, err := gossip.Aggregate(inputs, w)
	require.NoError(t, err)
	return exact
}

// requireAgreement checks that every member returned the bitwise same
// result within eps of exact.
func requireAgreement(t *testing.T, res []aggregate.Result, errs []error, exact []float64, eps float64) {
	t.Helper()
	for i, err := range errs {
		require.NoError(t, err, "node %d", i)
	}
	for i, r := range res {
		require.Len(t, r.Value, len(exact))
		for c := range exact {
			require.Equal(t, math.Float64bits(res[0].Value[c]), math.Float64bits(r.Value[c]), "node %d component %d differs from node 0", i, c)
		}
		require.Equal(t, res[0].Epoch, r.Epoch)
		require.Equal(t, res[0].Live, r.Live)
	}
	assert.LessOrEqual(t, gossip.RelError(res[0].Value, exact), eps)
}

func TestAverageInMemory(t *testing.T) {
	tr, err := transport.NewMemory(transport.MemoryOptions{})
	require.NoError(t, err)
	defer tr.Close()
	nodes := group(t, tr, 16, aggregate.Config{Group: "t1", Algorithm: "pfcc", Epsilon: 1e-9})
	inputs := gossiptest.Inputs(16, 2, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, errs := averageAll(ctx, nodes, inputs)
	requireAgreement(t, res, errs, exactAverage(t, inputs), 1e-9)
	assert.Equal(t, 16, res[0].Live)
	assert.Equal(t, uint64(1), res[0].Epoch)
	t.Logf("elapsed %v, messages of node 0: %d", res[0].Elapsed, res[0].Messages)
}
