// Package testnats holds the fixtures that the tests of package transport
// (the client) and package natsserver (the server) share: embedded servers
// and clusters that stop with the test, a test's context, and throwaway
// certificate authorities and certificates written as PEM files.
package testnats

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/transport/natsserver"
)

// Patience bounds every wait in the tests for something that must happen.
// It is a guard against hanging, not a performance expectation: on a
// loaded machine things take longer, and a correct run never comes near it.
const Patience = 20 * time.Second

// Ctx returns a context that ends with the test.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*Patience)
	t.Cleanup(cancel)
	return ctx
}

// StartServer starts an embedded server that shuts down when the test
// ends.
func StartServer(t testing.TB, opts natsserver.EmbeddedOptions) *natsserver.Server {
	t.Helper()
	srv, err := natsserver.StartEmbedded(Ctx(t), opts)
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	return srv
}

// StartCluster starts a cluster that shuts down when the test ends.
func StartCluster(t testing.TB, n int, opts natsserver.ClusterOptions) *natsserver.Cluster {
	t.Helper()
	c, err := natsserver.StartCluster(Ctx(t), n, opts)
	require.NoError(t, err)
	t.Cleanup(c.Shutdown)
	return c
}
