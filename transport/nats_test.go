package transport_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/gossipreduce/gossipreduce/transport/internal/testnats"
	"github.com/gossipreduce/gossipreduce/transport/natsserver"
)

// connect connects to urls and closes the transport when the test ends.
func connect(t *testing.T, urls []string, opts transport.NATSOptions) *transport.NATS {
	t.Helper()
	tr, err := transport.Connect(testCtx(t), urls, opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tr.Close()) })
	return tr
}

// pingPong sends a message each way between a and b and checks it arrives.
func pingPong(t *testing.T, a, b transport.Endpoint, tag uint64) {
	t.Helper()
	ctx := testCtx(t)
	require.NoError(t, a.Send(ctx, gossip.Message{From: a.ID(), To: b.ID(), Kind: gossip.KindPush, Tag: tag}))
	require.Equal(t, tag, recv(t, b).Tag)
	require.NoError(t, b.Send(ctx, gossip.Message{From: b.ID(), To: a.ID(), Kind: gossip.KindPush, Tag: tag + 1}))
	require.Equal(t, tag+1, recv(t, a).Tag)
}

// TestAcrossConnections puts two nodes on two connections, as two processes
// would be: Open's confirmed subscription makes the first message arrive.
func TestAcrossConnections(t *testing.T) {
	srv := testnats.StartServer(t, natsserver.EmbeddedOptions{})
	urls := []string{srv.ClientURL()}
	g := transport.Group{Name: "two", ConfigHash: 1}
	a, err := connect(t, urls, transport.NATSOptions{}).Open(testCtx(t), g, 0)
	require.NoError(t, err)
	b, err := connect(t, urls, transport.NATSOptions{}).Open(testCtx(t), g, 1)
	require.NoError(t, err)
	assert.Equal(t, 2, srv.NumClients())
	pingPong(t, a, b, 10)
}

// TestSubjects checks the subject contract: any NATS client subscribed to
// "gossipreduce.>" sees the traffic, one subject per receiving node.
func TestSubjects(t *testing.T) {
	srv := testnats.StartServer(t, natsserver.EmbeddedOptions{})
	watcher, err := nats.Connect(srv.ClientURL())
	require.NoError(t, err)
	t.Cleanup(watcher.Close)
	all, err := watcher.SubscribeSync("gossipreduce.>")
	require.NoError(t, err)
	custom, err := watcher.SubscribeSync("acme.gr.>")
	require.NoError(t, err)
	require.NoError(t, watcher.Flush())

	tr := connect(t, []string{srv.ClientURL()}, transport.NATSOptions{})
	for _, g := range []transport.Group{{Name: "demo", ConfigHash: 3}, {Prefix: "acme.gr", Name: "demo", ConfigHash: 3}} {
		eps := openNodes(t, tr, g, 2)
		m := gossip.Message{From: 0, To: 1, Kind: gossip.KindPush, Epoch: 2, Payload: []float64{4, 1}}
		require.NoError(t, eps[0].Send(testCtx(t), m))
		sub := all
		if g.Prefix != "" {
			sub = custom
		}
		// First each node's claim of its id, on its own subject; then the
		// handshake (node 0 probes node 1, which answers), each message on
		// the subject of its addressee; then the message.
		for id := range gossip.NodeID(2) {
			msg, err := sub.NextMsg(patience)
			require.NoError(t, err)
			h, got, err := transport.Decode(msg.Data)
			require.NoError(t, err)
			assert.True(t, h.Handshake)
			assert.Equal(t, transport.IncarnationOf(eps[id]), h.Incarnation)
			assert.Zero(t, h.PeerIncarnation)
			assert.Zero(t, h.Seq)
			assert.Equal(t, g.Subject(id), msg.Subject)
			assert.Equal(t, gossip.Message{From: id, To: id}, got)
		}
		for _, hs := range []struct{ from, to gossip.NodeID }{{0, 1}, {1, 0}} {
			msg, err := sub.NextMsg(patience)
			require.NoError(t, err)
			h, got, err := transport.Decode(msg.Data)
			require.NoError(t, err)
			assert.True(t, h.Handshake)
			assert.Equal(t, g.Subject(hs.to), msg.Subject)
			assert.Equal(t, gossip.Message{From: hs.from, To: hs.to}, got)
		}
		msg, err := sub.NextMsg(patience)
		require.NoError(t, err)
		assert.Equal(t, g.Subject(1), msg.Subject)
		h, got, err := transport.Decode(msg.Data)
		require.NoError(t, err)
		assert.Equal(t, uint64(3), h.ConfigHash)
		assert.False(t, h.Handshake)
		requireSameMessage(t, m, got)
	}
	assert.Equal(t, "gossipreduce.demo.1", transport.Group{Name: "demo"}.Subject(1))
}

// TestConnectAuth: a server that requires a token refuses clients without
// it, or with another, with errors wrapping ErrAuth that do not echo the
// credentials, and accepts the token. (natsserver's tests check that its
// Server.Connect gives the server's token, in process too.)
func TestConnectAuth(t *testing.T) {
	const token = "s3cret"
	srv := testnats.StartServer(t, natsserver.EmbeddedOptions{Token: token})
	ctx := testCtx(t)
	urls := []string{srv.ClientURL()}
	for _, opts := range []transport.NATSOptions{{}, {Token: "wrong"}, {User: "u", Password: "wrong"}} {
		_, err := transport.Connect(ctx, urls, opts)
		require.ErrorIs(t, err, transport.ErrAuth, "%+v", opts)
		assert.NotContains(t, err.Error(), "wrong", "the error must not echo the credentials")
	}
	tr := connect(t, urls, transport.NATSOptions{Token: token})
	eps := openNodes(t, tr, transport.Group{Name: "auth"}, 2)
	pingPong(t, eps[0], eps[1], 1)
}

// closedPort returns a loopback URL nobody listens on.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return "nats://" + addr
}

func TestConnectErrors(t *testing.T) {
	ctx := testCtx(t)
	_, err := transport.Connect(ctx, nil, transport.NATSOptions{})
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	_, err = transport.Connect(ctx, []string{" "}, transport.NATSOptions{})
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	_, err = transport.Connect(ctx, []string{"nats://127.0.0.1:1"}, transport.NATSOptions{Options: transport.Options{Loss: 2}})
	require.ErrorIs(t, err, gossip.ErrInvalidConfig, "options are checked before connecting")

	down := closedPort(t)
	u, err := url.Parse(down)
	require.NoError(t, err)
	u.User = url.UserPassword("alice", "hunter2")
	_, err = transport.Connect(ctx, []string{u.String()}, transport.NATSOptions{})
	require.Error(t, err)
	require.NotErrorIs(t, err, transport.ErrAuth)
	assert.Contains(t, err.Error(), "transport: connect to nats://REDACTED@"+u.Host)
	assert.NotContains(t, err.Error(), "hunter2")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = transport.Connect(cancelled, []string{down}, transport.NATSOptions{})
	require.ErrorIs(t, err, context.Canceled)

	_, err = transport.NewNATS(nil, transport.Options{})
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
}

// TestConnectCluster gives Connect two URLs, the first of them dead: the
// connection finds the live one.
func TestConnectCluster(t *testing.T) {
	srv := testnats.StartServer(t, natsserver.EmbeddedOptions{})
	tr := connect(t, []string{closedPort(t), srv.ClientURL()}, transport.NATSOptions{})
	assert.Equal(t, srv.ClientURL(), tr.Conn().ConnectedUrl())
}

func TestBorrowedConn(t *testing.T) {
	srv := testnats.StartServer(t, natsserver.EmbeddedOptions{})
	nc, err := nats.Connect(srv.ClientURL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	tr, err := transport.NewNATS(nc, transport.Options{})
	require.NoError(t, err)
	eps := openNodes(t, tr, transport.Group{Name: "borrowed"}, 2)
	pingPong(t, eps[0], eps[1], 1)
	require.NoError(t, tr.Close())
	assert.True(t, nc.IsConnected(), "Close leaves a borrowed connection open")
	assert.Equal(t, 0, nc.NumSubscriptions(), "Close removes its subscriptions")
}

// TestReconnect restarts the server on the same port: the transport
// reconnects, restores its subscriptions, and messages flow again.
func TestReconnect(t *testing.T) {
	first, err := natsserver.StartEmbedded(testCtx(t), natsserver.EmbeddedOptions{})
	require.NoError(t, err)
	port := portOf(t, first)

	tr := connect(t, []string{first.ClientURL()}, transport.NATSOptions{ReconnectWait: 20 * time.Millisecond})
	eps := openNodes(t, tr, transport.Group{Name: "reconnect"}, 2)
	pingPong(t, eps[0], eps[1], 1)
	assert.True(t, eps[0].Online())

	first.Shutdown()
	eventually(t, func() bool { return !eps[0].Online() }, "endpoint offline while the server is gone")
	testnats.StartServer(t, natsserver.EmbeddedOptions{Port: port})
	eventually(t, eps[0].Online, "endpoint online again")
	assert.True(t, tr.Conn().IsConnected())
	require.NoError(t, tr.Conn().Flush())
	pingPong(t, eps[0], eps[1], 3)
}

// TestOpenWhileReconnecting: a node opened while the server is away (the
// connection reconnecting) is opened once the server is back, within the
// context, rather than failing at once.
func TestOpenWhileReconnecting(t *testing.T) {
	first, err := natsserver.StartEmbedded(testCtx(t), natsserver.EmbeddedOptions{})
	require.NoError(t, err)
	port := portOf(t, first)
	tr := connect(t, []string{first.ClientURL()}, transport.NATSOptions{ReconnectWait: 20 * time.Millisecond})
	g := transport.Group{Name: "rejoin"}
	eps := openNodes(t, tr, g, 1)

	first.Shutdown()
	eventually(t, func() bool { return !eps[0].Online() }, "offline")
	opened := make(chan error, 1)
	var ep transport.Endpoint
	go func() {
		var err error
		ep, err = tr.Open(testCtx(t), g, 1)
		opened <- err
	}()
	testnats.StartServer(t, natsserver.EmbeddedOptions{Port: port})
	require.NoError(t, <-opened)
	t.Cleanup(func() { ep.Close() })
	pingPong(t, eps[0], ep, 5)
}

// TestRetryFlush: a flush the server's departure cut short (nats.go reports
// a closed connection then, although it is reconnecting) is tried again
// until it succeeds; one on a connection closed for good, or past the
// context, is not.
func TestRetryFlush(t *testing.T) {
	calls := 0
	flaky := func(context.Context) error {
		calls++
		if calls < 3 {
			return nats.ErrConnectionClosed
		}
		return nil
	}
	require.NoError(t, transport.RetryFlush(testCtx(t), flaky, func() bool { return false }))
	assert.Equal(t, 3, calls)

	calls = 0
	err := transport.RetryFlush(testCtx(t), flaky, func() bool { return true })
	assert.ErrorIs(t, err, nats.ErrConnectionClosed, "closed for good: no retry")
	assert.Equal(t, 1, calls)

	ctx, cancel := context.WithTimeout(testCtx(t), 50*time.Millisecond)
	defer cancel()
	err = transport.RetryFlush(ctx, func(context.Context) error { return nats.ErrConnectionClosed }, func() bool { return false })
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, nats.ErrConnectionClosed)
}

// TestCloseWhileDisconnected: with the server gone, Close neither waits for
// a confirmation that cannot come nor reports an error.
func TestCloseWhileDisconnected(t *testing.T) {
	srv, err := natsserver.StartEmbedded(testCtx(t), natsserver.EmbeddedOptions{})
	require.NoError(t, err)
	tr, err := transport.Connect(testCtx(t), []string{srv.ClientURL()}, transport.NATSOptions{CloseTimeout: patience})
	require.NoError(t, err)
	eps := openNodes(t, tr, transport.Group{Name: "orphan"}, 2)
	srv.Shutdown()
	eventually(t, func() bool { return !tr.Conn().IsConnected() }, "disconnect")
	require.NoError(t, eps[0].Send(testCtx(t), gossip.Message{From: 0, To: 1, Kind: gossip.KindPush}), "buffered for reconnection")
	done := make(chan error, 1)
	go func() { done <- tr.Close() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(patience / 2):
		require.FailNow(t, "Close waited for a server that is gone")
	}
}

// TestNoLeakedGoroutines runs a server, several connections and endpoints
// through their whole life, then checks every goroutine they started ends.
func TestNoLeakedGoroutines(t *testing.T) {
	base := runtime.NumGoroutine()
	for _, inProcess := range []bool{false, true} {
		srv, err := natsserver.StartEmbedded(testCtx(t), natsserver.EmbeddedOptions{InProcess: inProcess, Token: "t"})
		require.NoError(t, err)
		g := transport.Group{Name: "leak"}
		var trs []*transport.NATS
		var eps []transport.Endpoint
		for c := range 2 {
			tr, err := srv.Connect(testCtx(t), transport.NATSOptions{})
			require.NoError(t, err)
			trs = append(trs, tr)
			for i := range 4 {
				ep, err := tr.Open(testCtx(t), g, gossip.NodeID(4*c+i))
				require.NoError(t, err)
				eps = append(eps, ep)
			}
		}
		for i := range eps {
			pingPong(t, eps[i], eps[(i+3)%len(eps)], uint64(10*i))
		}
		require.NoError(t, eps[0].Close()) // one endpoint closed on its own
		for _, tr := range trs {
			require.NoError(t, tr.Close())
		}
		srv.Shutdown()
	}
	waitGoroutines(t, base)
}

// TestNoKeyWarning: Connect without a group key warns once it is connected,
// not for an attempt that failed; with a key it does not warn.
func TestNoKeyWarning(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	_, err := transport.Connect(testCtx(t), []string{"nats://127.0.0.1:1"}, transport.NATSOptions{Options: transport.Options{Logger: log}, ConnectTimeout: patience})
	require.Error(t, err)
	assert.NotContains(t, buf.String(), "no group key", "no warning for a connection that failed")

	srv := testnats.StartServer(t, natsserver.EmbeddedOptions{})
	tr := connect(t, []string{srv.ClientURL()}, transport.NATSOptions{Options: transport.Options{Logger: log}})
	require.NotNil(t, tr)
	assert.Equal(t, 1, strings.Count(buf.String(), "no group key"))

	buf.Reset()
	connect(t, []string{srv.ClientURL()}, transport.NATSOptions{Options: transport.Options{Logger: log, Key: bytes.Repeat([]byte{7}, 32)}})
	assert.NotContains(t, buf.String(), "no group key")

	connect(t, []string{srv.ClientURL()}, transport.NATSOptions{Options: transport.Options{Logger: log}, SkipNoKeyWarning: true})
	assert.NotContains(t, buf.String(), "no group key", "SkipNoKeyWarning")
}

// refusingServer is an in-process server that refuses every client's
// credentials.
type refusingServer struct{}

func (refusingServer) InProcessConn() (net.Conn, error) { return nil, nats.ErrAuthorization }

// TestConnectInProcess connects to a nats-server configured here, with no
// listener, through its in-process pipe: nodes exchange messages, and no
// missing-key warning is logged. A nil server, TLS, and refused
// credentials fail.
func TestConnectInProcess(t *testing.T) {
	ns, err := server.NewServer(&server.Options{DontListen: true, NoSigs: true, NoLog: true})
	require.NoError(t, err)
	ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	require.True(t, ns.ReadyForConnections(patience))

	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	ctx := testCtx(t)
	tr, err := transport.ConnectInProcess(ctx, ns, transport.NATSOptions{Options: transport.Options{Logger: log}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tr.Close()) })
	eps := openNodes(t, tr, transport.Group{Name: "inprocess"}, 2)
	pingPong(t, eps[0], eps[1], 1)
	assert.Equal(t, 1, ns.NumClients())
	assert.NotContains(t, buf.String(), "no group key")

	_, err = transport.ConnectInProcess(ctx, nil, transport.NATSOptions{})
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	_, err = transport.ConnectInProcess(ctx, ns, transport.NATSOptions{TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12}})
	require.ErrorIs(t, err, gossip.ErrInvalidConfig, "TLS needs a socket")

	_, err = transport.ConnectInProcess(ctx, refusingServer{}, transport.NATSOptions{Token: "t"})
	require.ErrorIs(t, err, transport.ErrAuth)
	require.ErrorIs(t, err, nats.ErrAuthorization)
	assert.Contains(t, err.Error(), "transport: connect to the in-process server: NATS authentication failed: the server refused a token: ")
}
