package transport_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/gossipreduce/gossipreduce/transport/internal/testnats"
	"github.com/gossipreduce/gossipreduce/transport/natsserver"
)

// impl is one Transport implementation under the shared tests. open returns
// a fresh transport, closed when the test ends, and a function that hands
// raw bytes to a subject as another process would, ordered before anything
// the transport sends afterwards.
type impl struct {
	name string
	open func(t testing.TB, opts transport.Options) (transport.Transport, func(subject string, raw []byte))
}

// claims returns how many claims opening n endpoints sends: one each over
// NATS, none in memory, where the transport sees every endpoint of the
// group (see the package documentation, "Claims").
func (im impl) claims(n uint64) uint64 {
	if im.name == "memory" {
		return 0
	}
	return n
}

func impls() []impl {
	return []impl{
		{"memory", func(t testing.TB, opts transport.Options) (transport.Transport, func(string, []byte)) {
			tr, err := transport.NewMemory(transport.MemoryOptions{Options: opts})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, tr.Close()) })
			return tr, func(subject string, raw []byte) { tr.Inject(subject, raw) }
		}},
		{"nats-tcp", natsImpl(false)},
		{"nats-inprocess", natsImpl(true)},
	}
}

func natsImpl(inProcess bool) func(testing.TB, transport.Options) (transport.Transport, func(string, []byte)) {
	return func(t testing.TB, opts transport.Options) (transport.Transport, func(string, []byte)) {
		srv := testnats.StartServer(t, natsserver.EmbeddedOptions{InProcess: inProcess})
		tr, err := srv.Connect(testCtx(t), transport.NATSOptions{Options: opts})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, tr.Close()) })
		return tr, func(subject string, raw []byte) { require.NoError(t, tr.Conn().Publish(subject, raw)) }
	}
}

// forEach runs test once per implementation.
func forEach(t *testing.T, test func(t *testing.T, im impl)) {
	for _, im := range impls() {
		t.Run(im.name, func(t *testing.T) { test(t, im) })
	}
}

func openNodes(t testing.TB, tr transport.Transport, g transport.Group, n int) []transport.Endpoint {
	t.Helper()
	eps := make([]transport.Endpoint, n)
	for i := range eps {
		ep, err := tr.Open(testCtx(t), g, gossip.NodeID(i))
		require.NoError(t, err)
		require.Equal(t, gossip.NodeID(i), ep.ID())
		eps[i] = ep
	}
	return eps
}

func TestExchange(t *testing.T) {
	forEach(t, func(t *testing.T, im impl) {
		tr, _ := im.open(t, transport.Options{})
		const n = 4
		g := transport.Group{Name: "exchange", ConfigHash: 77}
		eps := openNodes(t, tr, g, n)
		ctx := testCtx(t)
		// A NaN with payload bits and a negative zero must arrive bit for bit.
		nan := math.Float64frombits(0x7FF8_0000_DEAD_BEEF)
		sent := map[[2]gossip.NodeID]gossip.Message{}
		for i := range n {
			for j := range n {
				if i == j {
					continue
				}
				m := gossip.Message{
					From: gossip.NodeID(i), To: gossip.NodeID(j), Kind: gossip.KindFlow,
					Epoch: 3, Tag: uint64(10*i + j), Payload: []float64{nan, float64(i), math.Copysign(0, -1)},
				}
				sent[[2]gossip.NodeID{m.From, m.To}] = m.Clone()
				require.NoError(t, eps[i].Send(ctx, m))
			}
		}
		for j, ep := range eps {
			for range n - 1 {
				got := recv(t, ep)
				want, ok := sent[[2]gossip.NodeID{got.From, got.To}]
				require.True(t, ok, "unexpected message %v at node %d", got, j)
				requireSameMessage(t, want, got)
			}
			requireEmpty(t, ep)
			assert.Equal(t, transport.Stats{Sent: n - 1, Received: n - 1}, appStats(ep.Stats()), "node %d", j)
		}
		st := tr.Stats()
		assert.Equal(t, transport.Stats{Sent: n * (n - 1), Received: n * (n - 1)}, appStats(st))
		// Each node learned each other node's incarnation once. In memory the
		// first of every pair to send probed the other, which learned from
		// its message. Over NATS the second may probe too, if the first's
		// message had not arrived yet (and a sender probes again on a later
		// Send when no answer came within 20 ms); still, of every pair at
		// least one side learned the other from an answer.
		assert.Equal(t, uint64(n*(n-1)), st.Sessions)
		if im.name == "memory" {
			assert.Equal(t, uint64(n*(n-1)/2), st.Probes)
			assert.Equal(t, st.Probes, st.Answers)
		} else {
			assert.GreaterOrEqual(t, st.Answers, uint64(n*(n-1)/2))
			assert.LessOrEqual(t, st.Answers, st.Probes)
		}
	})
}

func TestDropsMalformedAndForeign(t *testing.T) {
	forEach(t, func(t *testing.T, im impl) {
		tr, inject := im.open(t, transport.Options{})
		g := transport.Group{Name: "drops", ConfigHash: 5}
		eps := openNodes(t, tr, g, 2)
		enc := func(h transport.Header, m gossip.Message) []byte {
			b, err := transport.Encode(nil, h, m)
			require.NoError(t, err)
			return b
		}
		msg := gossip.Message{From: 0, To: 1, Kind: gossip.KindPush, Payload: []float64{1, 1}}
		good := enc(transport.Header{ConfigHash: 5}, msg)
		otherVersion := append([]byte(nil), good...)
		otherVersion[1] = transport.WireVersion + 1
		misrouted := msg
		misrouted.To = 7

		to1 := g.Subject(1)
		inject(to1, []byte("hello"))                                 // malformed
		inject(to1, good[:len(good)-1])                              // malformed: truncated
		inject(to1, enc(transport.Header{ConfigHash: 6}, msg))       // foreign: another configuration
		inject(to1, otherVersion)                                    // foreign: another wire version
		inject(to1, enc(transport.Header{ConfigHash: 5}, misrouted)) // foreign: addressed to node 7
		require.NoError(t, eps[0].Send(testCtx(t), gossip.Message{From: 0, To: 1, Kind: gossip.KindPush, Tag: 99}))

		// The good message comes after the bad ones on the same path, so once
		// it has arrived every bad one has been judged.
		got := recv(t, eps[1])
		require.Equal(t, uint64(99), got.Tag)
		requireEmpty(t, eps[1])
		st := eps[1].Stats()
		assert.Equal(t, transport.Stats{Received: 1, Malformed: 2, Foreign: 3, Answers: 1, Sessions: 1, Claims: im.claims(1)}, st)
		assert.Equal(t, uint64(5), st.Dropped())
		assert.Equal(t, transport.Stats{Sent: 1, Received: 1, Malformed: 2, Foreign: 3, Probes: 1, Answers: 1, Sessions: 2, Claims: im.claims(2)}, tr.Stats())
	})
}

// sendLossy sends count messages from node 0 to node 1 through a transport
// with 50 % injected loss and returns the tags that arrived.
func sendLossy(t *testing.T, im impl, seed uint64, count int) []uint64 {
	tr, _ := im.open(t, transport.Options{Loss: 0.5, Seed: seed, Buffer: count})
	eps := openNodes(t, tr, transport.Group{Name: "lossy"}, 2)
	for i := range count {
		require.NoError(t, eps[0].Send(testCtx(t), gossip.Message{From: 0, To: 1, Kind: gossip.KindPush, Tag: uint64(i)}))
		if i == 0 {
			// The first message probed node 1 (lost or not: injected loss
			// spares handshakes). Over NATS the answer takes a round trip;
			// until it comes, messages wait in a queue of SessionQueue, which
			// this burst would overflow.
			eventually(t, func() bool { return eps[0].Stats().Sessions == 1 }, "session with node 1")
		}
	}
	st := eps[0].Stats()
	require.Equal(t, uint64(count), st.Sent+st.Lost)
	require.Zero(t, st.Unsent)
	tags := make([]uint64, st.Sent)
	for i := range tags {
		tags[i] = recv(t, eps[1]).Tag
	}
	require.Equal(t, st.Sent, eps[1].Stats().Received)
	return tags
}

func TestLossInjection(t *testing.T) {
	forEach(t, func(t *testing.T, im impl) {
		const seed, count = 7, 2000
		tags := sendLossy(t, im, seed, count)
		// Binomial(2000, 0.5): mean 1000, standard deviation √(2000·¼) ≈ 22.4;
		// ±5 standard deviations (±112) fails a correct draw with
		// probability below 1e-6 (and the seed is fixed anyway).
		assert.InDelta(t, count/2, len(tags), 112)
		// The same seed loses the same messages.
		assert.Equal(t, tags, sendLossy(t, im, seed, count))
		assert.NotEqual(t, tags, sendLossy(t, im, seed+1, count))
	})
}

func TestOverflowDrops(t *testing.T) {
	forEach(t, func(t *testing.T, im impl) {
		tr, _ := im.open(t, transport.Options{Buffer: 4})
		eps := openNodes(t, tr, transport.Group{Name: "full"}, 2)
		for i := range 10 {
			require.NoError(t, eps[0].Send(testCtx(t), gossip.Message{From: 0, To: 1, Kind: gossip.KindPush, Tag: uint64(i)}))
		}
		eventually(t, func() bool { st := eps[1].Stats(); return st.Received+st.Overflow == 10 }, "10 arrivals at node 1")
		assert.Equal(t, transport.Stats{Received: 4, Overflow: 6}, appStats(eps[1].Stats()))
		assert.Positive(t, eps[1].Stats().Answers, "a handshake, which the full buffer does not affect")
		// The buffer kept the oldest messages; the newest were dropped.
		for i := range 4 {
			assert.Equal(t, uint64(i), recv(t, eps[1]).Tag)
		}
		requireEmpty(t, eps[1])
	})
}

// TestOverflowBytes bounds the receive buffer in bytes: three 800-byte
// payloads fit in 3,000 bytes, the fourth and fifth are dropped; once the
// receiver has taken two, two more fit again; and a message larger than
// the whole bound is taken when the buffer is empty.
func TestOverflowBytes(t *testing.T) {
	forEach(t, func(t *testing.T, im impl) {
		tr, _ := im.open(t, transport.Options{BufferBytes: 3000})
		eps := openNodes(t, tr, transport.Group{Name: "bytes"}, 2)
		send := func(tag, words int) {
			require.NoError(t, eps[0].Send(testCtx(t), gossip.Message{From: 0, To: 1, Kind: gossip.KindPush, Tag: uint64(tag), Payload: make([]float64, words)}))
		}
		arrived := func(n uint64) {
			eventually(t, func() bool { st := eps[1].Stats(); return st.Received+st.Overflow == n }, "arrivals at node 1")
		}
		for i := range 5 {
			send(i, 100)
		}
		arrived(5)
		assert.Equal(t, transport.Stats{Received: 3, Overflow: 2}, appStats(eps[1].Stats()))
		assert.Equal(t, uint64(0), recv(t, eps[1]).Tag)
		assert.Equal(t, uint64(1), recv(t, eps[1]).Tag)
		send(5, 100)
		send(6, 100)
		arrived(7)
		assert.Equal(t, transport.Stats{Received: 5, Overflow: 2}, appStats(eps[1].Stats()))
		for _, want := range []uint64{2, 5, 6} {
			assert.Equal(t, want, recv(t, eps[1]).Tag)
		}
		send(7, 1000) // 8,000 bytes: more than the bound, into an empty buffer
		arrived(8)
		assert.Equal(t, uint64(7), recv(t, eps[1]).Tag)
		requireEmpty(t, eps[1])
	})
}

func TestClose(t *testing.T) {
	forEach(t, func(t *testing.T, im impl) {
		tr, _ := im.open(t, transport.Options{})
		g := transport.Group{Name: "close"}
		ctx := testCtx(t)
		eps := openNodes(t, tr, g, 2)

		_, err := tr.Open(ctx, g, 1)
		require.ErrorIs(t, err, gossip.ErrInvalidConfig, "node 1 is open already")

		require.NoError(t, eps[1].Close())
		require.NoError(t, eps[1].Close(), "closing twice")
		_, ok := <-eps[1].Messages()
		require.False(t, ok, "Close closes the messages channel")
		err = eps[1].Send(ctx, gossip.Message{From: 1, To: 0, Kind: gossip.KindPush})
		require.ErrorIs(t, err, transport.ErrClosed)
		// Sending to a closed node is not an error: nobody answers the
		// probe, and the message waits for the node.
		require.NoError(t, eps[0].Send(ctx, gossip.Message{From: 0, To: 1, Kind: gossip.KindPush, Tag: 4}))

		again, err := tr.Open(ctx, g, 1)
		require.NoError(t, err, "a closed node can be opened again")
		// Once a later Send probes again and the new endpoint answers, the
		// queue reaches it, oldest message first.
		first := sendUntilArrival(t, eps[0], again, gossip.Message{From: 0, To: 1, Kind: gossip.KindPush, Tag: 5})
		require.Equal(t, uint64(4), first.Tag)
		require.Equal(t, uint64(5), recv(t, again).Tag)

		require.NoError(t, tr.Close())
		require.NoError(t, tr.Close(), "closing twice")
		// Closing the transport closes its endpoints: the channel ends after
		// the other copies of message 5 that sendUntilArrival sent.
		for m := range again.Messages() {
			require.Equal(t, uint64(5), m.Tag)
		}
		require.ErrorIs(t, eps[0].Send(ctx, gossip.Message{From: 0, To: 1, Kind: gossip.KindPush}), transport.ErrClosed)
		_, err = tr.Open(ctx, g, 2)
		require.ErrorIs(t, err, transport.ErrClosed)
	})
}

func TestSendRejects(t *testing.T) {
	forEach(t, func(t *testing.T, im impl) {
		tr, _ := im.open(t, transport.Options{})
		eps := openNodes(t, tr, transport.Group{Name: "rejects"}, 2)
		ctx := testCtx(t)
		err := eps[0].Send(ctx, gossip.Message{From: 1, To: 0, Kind: gossip.KindPush})
		require.ErrorIs(t, err, gossip.ErrForeignMessage, "node 0 cannot send as node 1")
		err = eps[0].Send(ctx, gossip.Message{From: 0, To: 1})
		require.ErrorIs(t, err, transport.ErrMalformed, "invalid kind")
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		err = eps[0].Send(cancelled, gossip.Message{From: 0, To: 1, Kind: gossip.KindPush})
		require.ErrorIs(t, err, context.Canceled)
		_, err = tr.Open(cancelled, transport.Group{Name: "rejects"}, 3)
		require.ErrorIs(t, err, context.Canceled)
		_, err = tr.Open(ctx, transport.Group{Name: "a.b"}, 3)
		require.ErrorIs(t, err, gossip.ErrInvalidConfig)
		assert.Equal(t, transport.Stats{Claims: im.claims(2)}, tr.Stats(), "nothing was sent but the claims")
	})
}

func TestGroup(t *testing.T) {
	assert.Equal(t, "gossipreduce.g.3", transport.Group{Name: "g"}.Subject(3))
	assert.Equal(t, "acme.gr.g.4294967295", transport.Group{Prefix: "acme.gr", Name: "g"}.Subject(math.MaxUint32))
	assert.Equal(t, "gossipreduce.g.*", transport.Group{Name: "g"}.Wildcard())
	require.NoError(t, transport.Group{Prefix: "acme.gr", Name: "job-7_x"}.Validate())
	for _, g := range []transport.Group{
		{Name: ""},
		{Name: "a.b"},
		{Name: "a b"},
		{Name: "*"},
		{Name: "a>"},
		{Name: "tab\t"},
		{Prefix: "acme..gr", Name: "g"},
		{Prefix: ".acme", Name: "g"},
		{Prefix: "acme.*", Name: "g"},
		{Prefix: "ac me", Name: "g"},
	} {
		assert.ErrorIs(t, g.Validate(), gossip.ErrInvalidConfig, "%+v", g)
	}
}

func TestOptionsRejected(t *testing.T) {
	for _, o := range []transport.Options{{Loss: -0.1}, {Loss: 1.5}, {Loss: math.NaN()}, {Buffer: -1}} {
		_, err := transport.NewMemory(transport.MemoryOptions{Options: o})
		assert.ErrorIs(t, err, gossip.ErrInvalidConfig, "%+v", o)
	}
}
