package transport_test

import (
	"context"
	"net/url"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/gossipreduce/gossipreduce/transport/internal/testnats"
	"github.com/gossipreduce/gossipreduce/transport/natsserver"
)

// patience bounds every wait in these tests for something that must
// happen (see testnats.Patience).
const patience = testnats.Patience

// recv returns the next message of ep, failing the test if none comes.
func recv(t testing.TB, ep transport.Endpoint) gossip.Message {
	t.Helper()
	select {
	case m, ok := <-ep.Messages():
		require.True(t, ok, "messages channel of node %d closed", ep.ID())
		return m
	case <-time.After(patience):
		require.FailNow(t, "no message arrived", "node %d", ep.ID())
		return gossip.Message{}
	}
}

// recvSkipping returns the first message at ep whose tag is not below tag,
// dropping the ones below it: late copies of what an earlier
// deliverEventually resent.
func recvSkipping(t testing.TB, ep transport.Endpoint, tag uint64) gossip.Message {
	t.Helper()
	for {
		if m := recv(t, ep); m.Tag >= tag {
			return m
		}
	}
}

// requireEmpty checks that no message is waiting at ep.
func requireEmpty(t testing.TB, ep transport.Endpoint) {
	t.Helper()
	select {
	case m := <-ep.Messages():
		require.FailNow(t, "unexpected message", "node %d got %v", ep.ID(), m)
	default:
	}
}

// eventually polls cond until it holds, failing the test after patience.
func eventually(t testing.TB, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			require.FailNowf(t, "condition never held", format, args...)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitGoroutines waits until no more goroutines run than base, and fails
// with every goroutine's stack if that does not happen: whatever the test
// started must have stopped.
func waitGoroutines(t testing.TB, base int) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			require.FailNowf(t, "goroutines leaked", "%d running, %d at the start:\n%s", runtime.NumGoroutine(), base, buf)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sendUntilArrival sends m from a, again every few milliseconds, until
// anything arrives at b, and returns what arrived first. A sender whose
// peer is not known yet probes it again only on a later Send, at most every
// 20 ms, so a test waiting for a session keeps sending.
func sendUntilArrival(t testing.TB, a, b transport.Endpoint, m gossip.Message) gossip.Message {
	t.Helper()
	ctx := testCtx(t)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(patience)
	for {
		require.NoError(t, a.Send(ctx, m))
		select {
		case got, ok := <-b.Messages():
			require.True(t, ok, "messages channel of node %d closed", b.ID())
			return got
		case <-tick.C:
		case <-deadline:
			require.FailNow(t, "nothing arrived", "from %d to %d", a.ID(), b.ID())
		}
	}
}

// appStats returns s without the session layer's handshake counts
// (Probes, Answers, Sessions) and claims (Claims), for comparisons of what
// happened to application messages: over NATS the handshakes race with
// the messages, so their numbers depend on timing, and only NATS endpoints
// claim their node when they open.
func appStats(s transport.Stats) transport.Stats {
	s.Probes, s.Answers, s.Sessions, s.Claims = 0, 0, 0, 0
	return s
}

// testCtx returns a context that ends with the test.
func testCtx(t testing.TB) context.Context { return testnats.Ctx(t) }

// portOf returns the TCP port srv listens on for clients.
func portOf(t testing.TB, srv *natsserver.Server) int {
	t.Helper()
	u, err := url.Parse(srv.ClientURL())
	require.NoError(t, err)
	port, err := strconv.Atoi(u.Port())
	require.NoError(t, err)
	return port
}
