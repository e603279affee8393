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
	ctx, srv := embedded(t, natsserver.EmbeddedOptions{})
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

// embedded starts an embedded server for the test, and a context that
// bounds the test's waits.
func embedded(t *testing.T, opts natsserver.EmbeddedOptions) (context.Context, *natsserver.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	srv, err := natsserver.StartEmbedded(ctx, opts)
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	return ctx, srv
}

// TestLargeVectorsInFragments runs operations whose messages are many
// times the server's max_payload (8 KiB here, so that a vector of 6,000
// components, 48 KiB of values and as much of certificate, travels in
// about a dozen fragments per message): every algorithm family the
// runtime offers ends with the same bits at every member, within eps of
// the exact average, and nothing is lost in reassembly.
func TestLargeVectorsInFragments(t *testing.T) {
	ctx, srv := embedded(t, natsserver.EmbeddedOptions{MaxPayload: 8 << 10})
	for _, algo := range []string{"pfcc", "rdb", "exchange"} {
		t.Run(algo, func(t *testing.T) {
			tr, err := srv.Connect(ctx, transport.NATSOptions{})
			require.NoError(t, err)
			defer tr.Close()
			nodes := group(t, tr, 4, aggregate.Config{Group: "large-" + algo, Algorithm: algo, Epsilon: 1e-9})
			o := averageAll(ctx, nodes, gossiptest.Inputs(4, 6000, 3))
			requireOK(t, o, 1e-9)
			s := tr.Stats()
			assert.Positive(t, s.Fragments, "the messages exceed max_payload")
			assert.Zero(t, s.Incomplete+s.Malformed, "%+v", s)
		})
	}
}
