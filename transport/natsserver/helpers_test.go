package natsserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/gossipreduce/gossipreduce/transport/internal/testnats"
)

// patience and testCtx are the shared fixtures' (see testnats).
const patience = testnats.Patience

func testCtx(t testing.TB) context.Context { return testnats.Ctx(t) }

// requireTraffic opens nodes 0 and 1 of a group on tr, has each send the
// other a message, and waits for both to arrive: the server carries the
// transport's traffic. It closes tr when the test ends.
func requireTraffic(t testing.TB, tr *transport.NATS, group string) {
	t.Helper()
	t.Cleanup(func() { require.NoError(t, tr.Close()) })
	ctx := testCtx(t)
	g := transport.Group{Name: group}
	var eps [2]transport.Endpoint
	for id := range eps {
		ep, err := tr.Open(ctx, g, gossip.NodeID(id))
		require.NoError(t, err)
		eps[id] = ep
	}
	for from, to := range []int{1, 0} {
		m := gossip.Message{From: gossip.NodeID(from), To: gossip.NodeID(to), Kind: gossip.KindPush, Tag: uint64(from + 1)}
		require.NoError(t, eps[from].Send(ctx, m))
		select {
		case got := <-eps[to].Messages():
			require.Equal(t, m.Tag, got.Tag)
		case <-time.After(patience):
			require.FailNow(t, "no message arrived", "from node %d to node %d", from, to)
		}
	}
}
