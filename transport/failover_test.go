package transport_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/gossipreduce/gossipreduce/transport/internal/testnats"
	"github.com/gossipreduce/gossipreduce/transport/natsserver"
)

// TestOperationSurvivesFailover runs a live operation of four members of a
// keyed group over a 3-server cluster: members 0 and 1 share a connection
// to server 0, members 2 and 3 one to server 2. Member 3 starts its
// operation late, so the operation cannot end before it does; meanwhile
// server 0 is killed, in the middle of the operation. The first connection
// moves to another server, member 3 starts, and the operation completes on
// every member with the same result, within ε of the exact average of all
// four (nobody was declared dead: Suspect is far longer than the failover).
// Then server 0 is restarted and a second operation runs (a restart between
// operations).
func TestOperationSurvivesFailover(t *testing.T) {
	c := testnats.StartCluster(t, 3, natsserver.ClusterOptions{})
	urls := c.URLs()
	opts := transport.NATSOptions{Options: transport.Options{Key: groupKey}, ReconnectWait: 50 * time.Millisecond,
		Extra: []nats.Option{nats.DontRandomize()}}
	a := connect(t, urls, opts)
	require.Equal(t, 0, serverIndex(a, urls))
	b := connect(t, []string{urls[2], urls[0], urls[1]}, opts)

	const n = 4
	const eps = 1e-9
	ctx := testCtx(t)
	members := make([]*aggregate.Node, n)
	for i := range members {
		tr := a
		if i >= 2 {
			tr = b
		}
		nd, err := aggregate.Join(ctx, tr, aggregate.Config{Group: "failover", ID: gossip.NodeID(i), Nodes: n,
			Epsilon: eps, Suspect: patience})
		require.NoError(t, err)
		t.Cleanup(func() { _ = nd.Close() })
		members[i] = nd
	}
	inputs := [][]float64{{1, 10}, {2, 20}, {3, 30}, {4, 40}}
	exact := []float64{2.5, 25}

	run := func(late func()) []aggregate.Result {
		results := make([]aggregate.Result, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := func(i int) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = members[i].Average(ctx, inputs[i])
			}()
		}
		for i := range n - 1 {
			start(i)
		}
		late()
		start(n - 1)
		wg.Wait()
		for i := range n {
			require.NoError(t, errs[i], "member %d", i)
			assert.Equal(t, n, results[i].Live, "member %d: nobody was declared dead", i)
			assert.Equal(t, results[0].Value, results[i].Value, "member %d: the same result everywhere", i)
		}
		// ε is the relative accuracy the operation promises (Config.Epsilon).
		assert.LessOrEqual(t, gossip.RelError(results[0].Value, exact), eps)
		return results
	}

	var killedAt, lateAt time.Time
	first := run(func() {
		defer func() { lateAt = time.Now() }()
		// Mid-operation: members 0-2 are gossiping, member 3 has not
		// started, so the operation cannot have ended.
		sent := a.Stats().Sent
		eventually(t, func() bool { return a.Stats().Sent >= sent+20 }, "members 0 and 1 gossip")
		killedAt = time.Now()
		c.Server(0).Shutdown()
		eventually(t, func() bool { return a.Conn().IsConnected() && serverIndex(a, urls) > 0 }, "reconnect")
		t.Logf("killed server 0 mid-operation; reconnected to server %d after %v", serverIndex(a, urls), time.Since(killedAt).Round(time.Microsecond))
	})
	t.Logf("operation 1 completed %v after the kill, %v after member 3 started: %v (epoch %d)",
		time.Since(killedAt).Round(time.Microsecond), time.Since(lateAt).Round(time.Microsecond), first[0].Value, first[0].Epoch)

	_, err := c.Restart(ctx, 0)
	require.NoError(t, err)
	restartedAt := time.Now()
	second := run(func() {})
	t.Logf("operation 2, after the restart, took %v", time.Since(restartedAt).Round(time.Microsecond))
	assert.Equal(t, first[0].Epoch+1, second[0].Epoch)

	for _, tr := range []*transport.NATS{a, b} {
		st := tr.Stats()
		assert.Zero(t, st.Forged+st.Malformed+st.Foreign, "%+v", st)
	}
}

// TestOperationFailsWithoutReconnect is the control of the failover test:
// the same kill with reconnection disabled ends member 0's operation
// without a result, so the failover test's success is the reconnection's.
func TestOperationFailsWithoutReconnect(t *testing.T) {
	c := testnats.StartCluster(t, 3, natsserver.ClusterOptions{})
	urls := c.URLs()
	a := connect(t, urls, transport.NATSOptions{MaxReconnects: -1, Extra: []nats.Option{nats.DontRandomize()}})
	b := connect(t, []string{urls[2]}, transport.NATSOptions{})
	ctx := testCtx(t)
	var members [2]*aggregate.Node
	for i, tr := range []*transport.NATS{a, b} {
		nd, err := aggregate.Join(ctx, tr, aggregate.Config{Group: "noreconnect", ID: gossip.NodeID(i), Nodes: 2, Suspect: patience})
		require.NoError(t, err)
		t.Cleanup(func() { _ = nd.Close() })
		members[i] = nd
	}
	c.Server(0).Shutdown()
	eventually(t, a.Conn().IsClosed, "connection closed for good")
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	_, err := members[0].Average(short, []float64{1})
	require.Error(t, err, "member 0 cannot reach anyone")
}

// TestOperationAfterServerRestart: the only server of a group goes down
// between two operations and comes back on the same port; the members'
// connections reconnect and the next operation (the next epoch) completes.
func TestOperationAfterServerRestart(t *testing.T) {
	first, err := natsserver.StartEmbedded(testCtx(t), natsserver.EmbeddedOptions{})
	require.NoError(t, err)
	port := portOf(t, first)
	opts := transport.NATSOptions{Options: transport.Options{Key: groupKey}, ReconnectWait: 20 * time.Millisecond}
	conns := []*transport.NATS{connect(t, []string{first.ClientURL()}, opts), connect(t, []string{first.ClientURL()}, opts)}
	ctx := testCtx(t)
	members := make([]*aggregate.Node, 2)
	for i := range members {
		nd, err := aggregate.Join(ctx, conns[i], aggregate.Config{Group: "restart", ID: gossip.NodeID(i), Nodes: 2, Suspect: patience})
		require.NoError(t, err)
		t.Cleanup(func() { _ = nd.Close() })
		members[i] = nd
	}
	average := func() []aggregate.Result {
		res := make([]aggregate.Result, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, nd := range members {
			wg.Go(func() { res[i], errs[i] = nd.Average(ctx, []float64{float64(i)}) })
		}
		wg.Wait()
		for i := range res {
			require.NoError(t, errs[i], "member %d", i)
			// (0 + 1)/2 within ε = 1e-9, the default Config.Epsilon.
			assert.InDelta(t, 0.5, res[i].Value[0], 0.5e-9)
		}
		return res
	}
	r1 := average()

	first.Shutdown()
	for _, c := range conns {
		eventually(t, func() bool { return !c.Conn().IsConnected() }, "disconnect")
	}
	testnats.StartServer(t, natsserver.EmbeddedOptions{Port: port})
	for _, c := range conns {
		eventually(t, c.Conn().IsConnected, "reconnect")
	}
	r2 := average()
	assert.Equal(t, r1[0].Epoch+1, r2[0].Epoch, "the next epoch")
	// Close while the restarted server is up: the cleanups would shut it
	// down first (last registered, first run), and a transport closing
	// against a server that is going away has nothing to report.
	for i, nd := range members {
		require.NoError(t, nd.Close(), "member %d", i)
	}
	for _, c := range conns {
		require.NoError(t, c.Close())
	}
}
