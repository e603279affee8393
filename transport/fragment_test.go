package transport_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/gossipreduce/gossipreduce/transport/internal/testnats"
	"github.com/gossipreduce/gossipreduce/transport/natsserver"
)

// bigMessage returns a message whose payload and attachment hold
// distinct, reproducible bits (every float64 pattern, NaNs included, must
// arrive unchanged after reassembly).
func bigMessage(from, to gossip.NodeID, words, attach int, tag uint64) gossip.Message {
	r := rand.New(rand.NewPCG(tag, uint64(words)))
	m := gossip.Message{From: from, To: to, Kind: gossip.KindPush, Tag: tag, Payload: make([]float64, words)}
	for i := range m.Payload {
		m.Payload[i] = math.Float64frombits(r.Uint64())
	}
	if attach > 0 {
		m.Attach = make([]byte, attach)
		for i := range m.Attach {
			m.Attach[i] = byte(r.Uint32())
		}
	}
	return m
}

// requireSameBits compares two messages bit for bit.
func requireSameBits(t *testing.T, want, got gossip.Message) {
	t.Helper()
	require.Equal(t, want.Tag, got.Tag)
	require.Len(t, got.Payload, len(want.Payload))
	for i := range want.Payload {
		if math.Float64bits(want.Payload[i]) != math.Float64bits(got.Payload[i]) {
			require.FailNowf(t, "payload differs", "word %d of %d", i, len(want.Payload))
		}
	}
	require.Equal(t, want.Attach, got.Attach)
}

// TestFragmentsOverMemory sends messages around the frame limit and far
// above it through a Memory network that carries at most 300 bytes at a
// time: every message arrives bit for bit, and only those longer than the
// limit travel in fragments.
func TestFragmentsOverMemory(t *testing.T) {
	for _, signed := range []bool{false, true} {
		opts := transport.MemoryOptions{MaxFrame: 300}
		if signed {
			opts.Key = []byte("0123456789abcdef")
		}
		tr := newMemory(t, opts)
		eps := openNodes(t, tr, transport.Group{Name: "frag"}, 2)
		pingPong(t, eps[0], eps[1], 100)
		before := eps[0].Stats().Fragments
		ctx := testCtx(t)
		for i, words := range []int{1, 25, 40, 1000, 20000} {
			m := bigMessage(0, 1, words, 3*words, uint64(i))
			require.NoError(t, eps[0].Send(ctx, m))
			requireSameBits(t, m, recv(t, eps[1]))
		}
		requireEmpty(t, eps[1])
		s := eps[0].Stats()
		// A 1-word message (about 60 bytes) and a 25-word one fit; 40
		// words with 120 attached bytes take 2; the last two many more.
		assert.Greater(t, s.Fragments-before, uint64(2+(8000+3000)/300), "signed=%v", signed)
		assert.Zero(t, eps[1].Stats().Dropped(), "signed=%v", signed)
	}
}

// TestFragmentsOverNATS sends a 2 MiB vector through an embedded server
// whose max_payload is 64 KiB: nats.go refuses the message whole, and the
// transport reads the limit from the connection and fragments it.
func TestFragmentsOverNATS(t *testing.T) {
	srv := testnats.StartServer(t, natsserver.EmbeddedOptions{MaxPayload: 64 << 10})
	tr := connect(t, []string{srv.ClientURL()}, transport.NATSOptions{})
	require.Equal(t, int64(64<<10), tr.Conn().MaxPayload())
	eps := openNodes(t, tr, transport.Group{Name: "frag"}, 2)
	pingPong(t, eps[0], eps[1], 100)
	m := bigMessage(0, 1, 1<<18, 0, 7)
	require.NoError(t, eps[0].Send(testCtx(t), m))
	requireSameBits(t, m, recv(t, eps[1]))
	assert.GreaterOrEqual(t, eps[0].Stats().Fragments, uint64((8<<18)/(64<<10)))
}

// TestFragmentLimits: the largest vector the runtime sends fits the wire
// format, and a frame limit no fragment fits in is refused.
func TestFragmentLimits(t *testing.T) {
	_, err := transport.NewMemory(transport.MemoryOptions{MaxFrame: 100})
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	_, err = transport.NewMemory(transport.MemoryOptions{Options: transport.Options{Reassembly: -1}})
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	// A million components (values and extremes together, as
	// aggregate.MaxComponents counts them) plus the runtime's extras, and
	// the certificate's estimate of the values, at the end of the same
	// payload; the certificate's sets of a million members (a bit each,
	// twice).
	assert.GreaterOrEqual(t, transport.MaxPayload, 2*(1<<20)+1_000)
	assert.GreaterOrEqual(t, transport.MaxAttach, 2*1_000_000/8+1_000)
}
