package transport_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/gossipreduce/gossipreduce/transport/internal/testnats"
	"github.com/gossipreduce/gossipreduce/transport/natsserver"
)

// claimRig opens two transports on one network, as two processes would:
// the first for the endpoint that holds a node, the second for the one that
// claims it later. In memory, and over one NATS connection, both are the
// same transport (it sees every endpoint it hosts); otherwise they are two
// connections to one embedded server. A claimWait above zero fixes how
// long the second of two connections waits in Open for an answer to its
// claim, so that a busy machine cannot make an answer come too late.
type claimRig struct {
	name string
	open func(t *testing.T, opts transport.Options, claimWait time.Duration) (holder, claimer transport.Transport)
}

func claimRigs() []claimRig {
	withWait := func(opts transport.Options, d time.Duration) transport.Options {
		if d > 0 {
			return transport.WithClaimWait(opts, d)
		}
		return opts
	}
	twoConns := func(inProcess bool) func(*testing.T, transport.Options, time.Duration) (transport.Transport, transport.Transport) {
		return func(t *testing.T, opts transport.Options, d time.Duration) (transport.Transport, transport.Transport) {
			srv := testnats.StartServer(t, natsserver.EmbeddedOptions{InProcess: inProcess})
			conn := func(opts transport.Options) transport.Transport {
				tr, err := srv.Connect(testCtx(t), transport.NATSOptions{Options: opts})
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, tr.Close()) })
				return tr
			}
			return conn(opts), conn(withWait(opts, d))
		}
	}
	return []claimRig{
		{"memory", func(t *testing.T, opts transport.Options, _ time.Duration) (transport.Transport, transport.Transport) {
			tr := newMemory(t, transport.MemoryOptions{Options: opts})
			return tr, tr
		}},
		{"nats-one-connection", func(t *testing.T, opts transport.Options, _ time.Duration) (transport.Transport, transport.Transport) {
			tr, _ := natsImpl(false)(t, opts)
			return tr, tr
		}},
		{"nats-tcp", twoConns(false)},
		{"nats-inprocess", twoConns(true)},
	}
}

// TestDuplicateIDRefused opens node 0 of a group while another endpoint
// holds it: Open fails with ErrDuplicateID, and the holder finds out too:
// its Err and Send report ErrDuplicateID, Stats counts the duplicate, and
// what it had queued is discarded. Its peer is unaffected. Another attempt
// is refused as well; once the holder is closed, the node opens again.
func TestDuplicateIDRefused(t *testing.T) {
	for _, rig := range claimRigs() {
		t.Run(rig.name, func(t *testing.T) {
			a, b := rig.open(t, transport.Options{Key: groupKey}, patience)
			g := transport.Group{Name: "dupid", ConfigHash: 12}
			ctx := testCtx(t)
			eps := openNodes(t, a, g, 2)
			holder := eps[0]
			pingPong(t, holder, eps[1], 1)
			require.NoError(t, holder.Err())
			// A message for a node that is not open waits in a queue.
			require.NoError(t, holder.Send(ctx, gossip.Message{From: 0, To: 7, Kind: gossip.KindPush}))

			_, err := b.Open(ctx, g, 0)
			require.ErrorIs(t, err, transport.ErrDuplicateID)
			eventually(t, func() bool { return holder.Err() != nil }, "the holder finds the duplicate")
			require.ErrorIs(t, holder.Err(), transport.ErrDuplicateID)
			err = holder.Send(ctx, gossip.Message{From: 0, To: 1, Kind: gossip.KindPush, Tag: 2})
			require.ErrorIs(t, err, transport.ErrDuplicateID)
			st := holder.Stats()
			assert.Equal(t, uint64(1), st.Duplicates)
			assert.Equal(t, uint64(1), st.Unsent, "the queued message is discarded")
			if a != b {
				assert.Equal(t, uint64(1), b.Stats().Duplicates, "the claimer counted the holder")
			}

			// The peer still sends, and the holder still receives.
			require.NoError(t, eps[1].Err())
			require.NoError(t, eps[1].Send(ctx, gossip.Message{From: 1, To: 0, Kind: gossip.KindPush, Tag: 3}))
			assert.Equal(t, uint64(3), recv(t, holder).Tag)

			_, err = b.Open(ctx, g, 0)
			require.ErrorIs(t, err, transport.ErrDuplicateID, "refused again")
			eventually(t, func() bool { return holder.Stats().Duplicates == 2 }, "the second duplicate counted")

			require.NoError(t, holder.Close())
			require.ErrorIs(t, holder.Send(ctx, gossip.Message{From: 0, To: 1, Kind: gossip.KindPush}), transport.ErrClosed)
			again, err := a.Open(ctx, g, 0)
			require.NoError(t, err, "a closed endpoint answers no claim")
			require.NoError(t, again.Err())
			deliverEventually(t, eps[1], again, 10)
			deliverEventually(t, again, eps[1], 11)
			assert.NoError(t, again.Err())
			assert.Zero(t, again.Stats().Duplicates)
		})
	}
}

// TestSameIDOtherGroup opens node 0 of two groups (and, over NATS, with
// two connections): different subjects, no duplicate.
func TestSameIDOtherGroup(t *testing.T) {
	for _, rig := range claimRigs() {
		t.Run(rig.name, func(t *testing.T) {
			a, b := rig.open(t, transport.Options{}, 200*time.Millisecond)
			g1 := transport.Group{Name: "one", ConfigHash: 13}
			g2 := transport.Group{Name: "two", ConfigHash: 13}
			e1 := openNodes(t, a, g1, 2)
			e2 := openNodes(t, b, g2, 2)
			pingPong(t, e1[0], e1[1], 1)
			pingPong(t, e2[0], e2[1], 2)
			for _, ep := range append(e1, e2...) {
				assert.NoError(t, ep.Err())
				assert.Zero(t, ep.Stats().Duplicates)
			}
		})
	}
}

// TestReopenAfterClose closes node 0 and opens it again, in the same
// transport or (over NATS) another connection, as a restarted process
// would: the closed endpoint answers no claim, so the new one is not
// refused, and its peer learns it as after any restart.
func TestReopenAfterClose(t *testing.T) {
	for _, rig := range claimRigs() {
		t.Run(rig.name, func(t *testing.T) {
			a, b := rig.open(t, transport.Options{Key: groupKey}, 200*time.Millisecond)
			g := transport.Group{Name: "reopen", ConfigHash: 14}
			eps := openNodes(t, a, g, 2)
			pingPong(t, eps[0], eps[1], 1)
			require.NoError(t, eps[0].Close())
			again, err := b.Open(testCtx(t), g, 0)
			require.NoError(t, err)
			deliverEventually(t, eps[1], again, 10)
			deliverEventually(t, again, eps[1], 11)
			for _, ep := range []transport.Endpoint{eps[1], again} {
				assert.NoError(t, ep.Err())
				assert.Zero(t, ep.Stats().Duplicates)
			}
			assert.Zero(t, a.Stats().Duplicates)
			assert.Zero(t, b.Stats().Duplicates)
		})
	}
}

// claimMsg returns a signed claim message of node id of g from
// incarnation inc, bound to incarnation to (0: a claim).
func claimMsg(t testing.TB, g transport.Group, id gossip.NodeID, inc, to uint64) []byte {
	t.Helper()
	h := transport.Header{ConfigHash: g.ConfigHash, Incarnation: inc, PeerIncarnation: to, Handshake: true}
	raw, err := transport.EncodeSigned(nil, h, gossip.Message{From: id, To: id}, groupKey)
	require.NoError(t, err)
	return raw
}

// TestClaimReplay injects claim messages into an open endpoint. Claims of
// other incarnations (a replay of an old run's, say) are answered, each
// incarnation once, but mark nothing. A claim message bound to the
// endpoint's own incarnation (only an endpoint open at the same time can
// make one) marks it: Err and Send report ErrDuplicateID, the duplicate is
// counted once per other incarnation, and confirmed to it unless the
// endpoint answered its claim already. A claim message between two other
// incarnations is dropped as replayed.
func TestClaimReplay(t *testing.T) {
	forEach(t, func(t *testing.T, im impl) {
		tr, inject := im.open(t, transport.Options{Key: groupKey})
		g := transport.Group{Name: "claims", ConfigHash: 15}
		ctx := testCtx(t)
		eps := openNodes(t, tr, g, 2)
		ep := eps[0]
		inc := transport.IncarnationOf(ep)
		marker := uint64(0)
		// settle injects a message after the claim messages, on the same
		// path: once it has arrived, they have all been handled.
		settle := func() {
			marker++
			inject(g.Subject(0), crafted(t, g, 5, 0xFEED, ep, marker, marker))
			require.Equal(t, marker, recv(t, ep).Tag)
		}
		base := ep.Stats().Claims // its own claim, over NATS

		for range 3 {
			inject(g.Subject(0), claimMsg(t, g, 0, 0xC1A1, 0))
		}
		settle()
		require.NoError(t, ep.Err(), "a claim alone proves nothing")
		st := ep.Stats()
		assert.Equal(t, base+1, st.Claims, "answered once")
		assert.Zero(t, st.Duplicates)
		pingPong(t, ep, eps[1], 100)

		inject(g.Subject(0), claimMsg(t, g, 0, 0xAAAA, 0xBBBB))
		settle()
		require.NoError(t, ep.Err())
		assert.Equal(t, uint64(1), ep.Stats().Replayed, "between other incarnations")

		// The answered claimer answers back: it is there.
		inject(g.Subject(0), claimMsg(t, g, 0, 0xC1A1, inc))
		settle()
		require.ErrorIs(t, ep.Err(), transport.ErrDuplicateID)
		require.ErrorIs(t, ep.Send(ctx, gossip.Message{From: 0, To: 1, Kind: gossip.KindPush}), transport.ErrDuplicateID)
		st = ep.Stats()
		assert.Equal(t, uint64(1), st.Duplicates)
		assert.Equal(t, base+1, st.Claims, "no confirmation to an incarnation already answered")

		// Another incarnation answers an (unseen) claim: confirmed, and
		// counted; again: neither.
		for range 2 {
			inject(g.Subject(0), claimMsg(t, g, 0, 0xD00D, inc))
		}
		settle()
		st = ep.Stats()
		assert.Equal(t, uint64(2), st.Duplicates)
		assert.Equal(t, base+2, st.Claims)
		assert.Equal(t, uint64(1), st.Replayed)
		assert.Zero(t, st.Forged+st.Foreign+st.Malformed)
	})
}

// errorLog records the messages of the records at level Error or above.
type errorLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *errorLog) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelError }
func (l *errorLog) WithAttrs([]slog.Attr) slog.Handler            { return l }
func (l *errorLog) WithGroup(string) slog.Handler                 { return l }

func (l *errorLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}

func (l *errorLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.msgs...)
}

// TestClaimWire checks, with a wiretap, the messages of the claims in
// memory: an injected claim is answered on the node's own subject, bound to
// the claimer, and an answer bound to the endpoint is confirmed, bound to
// the answerer, and logged at error level.
func TestClaimWire(t *testing.T) {
	tap := &wiretap{}
	log := &errorLog{}
	tr := newMemory(t, transport.MemoryOptions{Options: transport.Options{Key: groupKey, Logger: slog.New(log)}, Tap: tap.add})
	g := transport.Group{Name: "wire", ConfigHash: 16}
	ep := openNodes(t, tr, g, 1)[0]
	inc := transport.IncarnationOf(ep)
	assert.Empty(t, tap.all(), "memory sends no claim")

	require.True(t, tr.Inject(g.Subject(0), claimMsg(t, g, 0, 0xC1A1, 0)))
	require.True(t, tr.Inject(g.Subject(0), claimMsg(t, g, 0, 0xD00D, inc)))
	sent := tap.all()
	require.Len(t, sent, 2)
	for i, to := range []uint64{0xC1A1, 0xD00D} {
		assert.Equal(t, g.Subject(0), sent[i].subject)
		h, m, err := transport.DecodeSigned(sent[i].raw, groupKey)
		require.NoError(t, err)
		assert.Equal(t, transport.Header{ConfigHash: g.ConfigHash, Incarnation: inc, PeerIncarnation: to, Handshake: true, Signed: true}, h)
		assert.Equal(t, gossip.Message{From: 0, To: 0}, m)
	}
	assert.Equal(t, transport.Stats{Claims: 2, Duplicates: 1}, ep.Stats())
	require.Len(t, log.all(), 1)
	assert.Contains(t, log.all()[0], "another endpoint holds this node id")

	// Closed, the endpoint answers nothing.
	require.NoError(t, ep.Close())
	assert.False(t, tr.Inject(g.Subject(0), claimMsg(t, g, 0, 0xE0E0, 0)), "nobody receives on the subject")
	assert.Len(t, tap.all(), 2)
}
