package transport_test

import (
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/gossipreduce/gossipreduce/transport/internal/testnats"
	"github.com/gossipreduce/gossipreduce/transport/natsserver"
)

// deliverEventually sends a message from a to b, again every few
// milliseconds, until b receives it, and discards anything else b
// receives meanwhile. Right after a (re)connection the servers of a cluster
// need a moment to learn where a subscriber now is, and a message
// published before that is lost, as gossip tolerates.
func deliverEventually(t testing.TB, a, b transport.Endpoint, tag uint64) {
	t.Helper()
	m := gossip.Message{From: a.ID(), To: b.ID(), Kind: gossip.KindPush, Tag: tag}
	deadline := time.Now().Add(patience)
	for time.Now().Before(deadline) {
		if sendUntilArrival(t, a, b, m).Tag == tag {
			return
		}
	}
	require.FailNow(t, "message never arrived", "from %d to %d, tag %d", a.ID(), b.ID(), tag)
}

// exchange delivers a message each way between a and b.
func exchange(t testing.TB, a, b transport.Endpoint, tag uint64) {
	t.Helper()
	deliverEventually(t, a, b, tag)
	deliverEventually(t, b, a, tag+1)
}

// serverIndex returns which of urls the connection is on, or -1.
func serverIndex(tr *transport.NATS, urls []string) int {
	return slices.Index(urls, tr.Conn().ConnectedUrl())
}

// TestClusterFailover connects a client, given every URL, to server 0 of a
// 3-server cluster and another to server 2; they exchange messages. Then,
// round after round, the server the first client is on is killed: the
// client reconnects to another server, the exchange works again, and the
// killed server is restarted on the same port before the next round (a
// server restart between operations), so later rounds fail over onto
// restarted servers. The times from the kill to the reconnection and to
// the completed exchange are logged; they are not asserted (the machine is
// shared), only bounded by the test's patience.
func TestClusterFailover(t *testing.T) {
	const token = "cluster-token"
	c := testnats.StartCluster(t, 3, natsserver.ClusterOptions{Server: natsserver.EmbeddedOptions{Token: token}})
	urls := c.URLs()
	require.Len(t, urls, 3)
	for _, u := range urls {
		assert.Regexp(t, `^nats://127\.0\.0\.1:\d+$`, u)
	}
	fast := transport.NATSOptions{Token: token, ReconnectWait: 50 * time.Millisecond, Extra: []nats.Option{nats.DontRandomize()}}
	a := connect(t, urls, fast)
	require.Equal(t, 0, serverIndex(a, urls), "the first URL is tried first")
	fromTwo := fast
	b := connect(t, []string{urls[2], urls[0], urls[1]}, fromTwo)
	require.Equal(t, 2, serverIndex(b, urls))

	g := transport.Group{Name: "failover", ConfigHash: 7}
	epA, err := a.Open(testCtx(t), g, 0)
	require.NoError(t, err)
	epB, err := b.Open(testCtx(t), g, 1)
	require.NoError(t, err)
	exchange(t, epA, epB, 1)

	rounds := 6
	if testing.Short() {
		rounds = 3 // the least for a failover onto a restarted server
	}
	restarted := map[int]bool{}
	landedOnRestarted := false
	var reconnect, exchanged []time.Duration
	for r := range rounds {
		killed := serverIndex(a, urls)
		require.GreaterOrEqual(t, killed, 0)
		start := time.Now()
		c.Server(killed).Shutdown()
		eventually(t, func() bool {
			i := serverIndex(a, urls)
			return a.Conn().IsConnected() && i >= 0 && i != killed
		}, "round %d: reconnect away from server %d", r, killed)
		reconnect = append(reconnect, time.Since(start))
		exchange(t, epA, epB, uint64(10*(r+1)))
		exchanged = append(exchanged, time.Since(start))
		now := serverIndex(a, urls)
		landedOnRestarted = landedOnRestarted || restarted[now]
		t.Logf("round %d: killed server %d; reconnected to server %d after %v; exchange done after %v",
			r, killed, now, reconnect[r].Round(time.Microsecond), exchanged[r].Round(time.Microsecond))

		_, err := c.Restart(testCtx(t), killed)
		require.NoError(t, err)
		restarted[killed] = true
		assert.Equal(t, urls, c.URLs(), "a restarted server keeps its port")
	}
	assert.True(t, landedOnRestarted, "some round failed over onto a restarted server")
	t.Logf("failover over %d rounds: kill → reconnected min %v median %v max %v; kill → exchanged min %v median %v max %v",
		rounds, slices.Min(reconnect), medianDuration(reconnect), slices.Max(reconnect),
		slices.Min(exchanged), medianDuration(exchanged), slices.Max(exchanged))
	// After all that, both clients are still there, with all their
	// subscriptions, and nothing arrived that should not have.
	exchange(t, epA, epB, 1000)
	assert.Zero(t, epA.Stats().Dropped()+epB.Stats().Dropped())
}

func medianDuration(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
