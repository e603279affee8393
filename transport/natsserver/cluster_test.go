package natsserver_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/gossipreduce/gossipreduce/transport/internal/testnats"
	"github.com/gossipreduce/gossipreduce/transport/natsserver"
)

func TestClusterErrors(t *testing.T) {
	ctx := testCtx(t)
	for name, opts := range map[string]natsserver.ClusterOptions{
		"port":       {Server: natsserver.EmbeddedOptions{Port: 4222}},
		"in process": {Server: natsserver.EmbeddedOptions{InProcess: true}},
		"bad auth":   {Server: natsserver.EmbeddedOptions{Password: "no user"}},
	} {
		_, err := natsserver.StartCluster(ctx, 2, opts)
		require.ErrorIs(t, err, gossip.ErrInvalidConfig, name)
		assert.Regexp(t, `^natsserver: `, err.Error(), name)
	}
	_, err := natsserver.StartCluster(ctx, 0, natsserver.ClusterOptions{})
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)

	c := testnats.StartCluster(t, 2, natsserver.ClusterOptions{})
	assert.Equal(t, 2, c.Size())
	_, err = c.Restart(ctx, 0)
	require.ErrorIs(t, err, gossip.ErrInvalidConfig, "server 0 is running")
	_, err = c.Restart(ctx, 2)
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)

	// A cluster of one is a plain server with a route port.
	one := testnats.StartCluster(t, 1, natsserver.ClusterOptions{})
	tr, err := transport.Connect(ctx, one.URLs(), transport.NATSOptions{})
	require.NoError(t, err)
	requireTraffic(t, tr, "one")
}

// TestClusterRestart: a server shut down and restarted keeps its client
// port, routes to the others again, and serves clients.
func TestClusterRestart(t *testing.T) {
	ctx := testCtx(t)
	c := testnats.StartCluster(t, 3, natsserver.ClusterOptions{Name: "restart"})
	urls := c.URLs()
	c.Server(1).Shutdown()
	assert.Equal(t, 0, c.Server(1).NumClients())
	s, err := c.Restart(ctx, 1)
	require.NoError(t, err)
	assert.Same(t, s, c.Server(1))
	assert.Equal(t, urls, c.URLs(), "a restarted server keeps its port")
	assert.Equal(t, urls[1], s.ClientURL())

	tr, err := transport.Connect(ctx, []string{urls[1]}, transport.NATSOptions{})
	require.NoError(t, err)
	requireTraffic(t, tr, "restarted")
}
