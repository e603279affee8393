package aggregate_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/gossipreduce/gossipreduce/transport/natsserver"
)

// TestOverEmbeddedNATS runs a group over a real NATS server (embedded, on
// loopback), several operations in a row.
func TestOverEmbeddedNATS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv, err := natsserver.StartEmbedded(ctx, natsserver.EmbeddedOptions{})
	require.NoError(t, err)
	defer srv.Shutdown()
	tr, err := srv.Connect(ctx, transport.NATSOptions{})
	require.NoError(t, err)
	defer tr.Close()

	nodes := group(t, tr, 16, aggregate.Config{Group: "nats", Topology: "hypercube", Epsilon: 1e-9})
	for op := range 3 {
		inputs := gossiptest.Inputs(16, 2, uint64(op))
		o := averageAll(ctx, nodes, inputs)
		requireOK(t, o, 1e-9)
		assert.Equal(t, uint64(op+1), o.Results[0].Epoch)
	}
	assert.Zero(t, tr.Stats().Foreign)
	assert.Zero(t, tr.Stats().Malformed)
}
