package transport_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
)

// TestConfigurationNotice checks that two endpoints of one group under
// different configuration hashes never exchange a message, and that each
// learns of the other's configuration through Foreign: the receiver of the
// dropped message sends a notice, the sender answers it with its own.
func TestConfigurationNotice(t *testing.T) {
	forEach(t, func(t *testing.T, im impl) {
		tr, inject := im.open(t, transport.Options{})
		good := transport.Group{Name: "cfg", ConfigHash: 5, Describe: "nodes=8"}
		odd := transport.Group{Name: "cfg", ConfigHash: 6, Describe: "nodes=9"}
		ctx := testCtx(t)
		e1, err := tr.Open(ctx, good, 1)
		require.NoError(t, err)
		e0, err := tr.Open(ctx, odd, 0)
		require.NoError(t, err)

		var seen0, seen1 []transport.ForeignConfig
		eventually(t, func() bool {
			require.NoError(t, e0.Send(ctx, gossip.Message{From: 0, To: 1, Kind: gossip.KindPush, Payload: []float64{1}}))
			seen0 = append(seen0, e0.Foreign()...)
			seen1 = append(seen1, e1.Foreign()...)
			return len(seen0) > 0 && len(seen1) > 0
		}, "both ends learn of the other configuration")
		assert.Equal(t, []transport.ForeignConfig{{From: 1, Hash: 5, Describe: "nodes=8"}}, seen0)
		assert.Equal(t, []transport.ForeignConfig{{From: 0, Hash: 6, Describe: "nodes=9"}}, seen1)
		requireEmpty(t, e1)
		requireEmpty(t, e0)
		assert.Zero(t, e1.Stats().Received)
		assert.Positive(t, e1.Stats().Notices)
		assert.Equal(t, uint64(1), e0.Stats().Notices, "a notice is answered once")
		assert.Positive(t, e1.Stats().Foreign)

		// What is known is not reported again.
		require.NoError(t, e0.Send(ctx, gossip.Message{From: 0, To: 1, Kind: gossip.KindPush}))
		assert.Empty(t, e1.Foreign())

		// A notice bound to another incarnation of node 0 (recorded
		// earlier, or forged) is dropped as a replay and reports nothing.
		before := e0.Stats()
		raw, err := transport.Encode(nil, transport.Header{ConfigHash: 7, Incarnation: 9, PeerIncarnation: 12345, Notice: true},
			gossip.Message{From: 2, To: 0, Attach: []byte("nodes=3")})
		require.NoError(t, err)
		inject(odd.Subject(0), raw)
		eventually(t, func() bool { return e0.Stats().Replayed == before.Replayed+1 }, "the stale notice is dropped")
		assert.Empty(t, e0.Foreign())
	})
}

// TestNoNoticeWithoutDescriptor checks that an endpoint without a
// descriptor drops messages of another configuration without a notice, so
// that neither side learns anything.
func TestNoNoticeWithoutDescriptor(t *testing.T) {
	tr, err := transport.NewMemory(transport.MemoryOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tr.Close()) })
	ctx := testCtx(t)
	e1, err := tr.Open(ctx, transport.Group{Name: "cfg", ConfigHash: 5}, 1)
	require.NoError(t, err)
	e0, err := tr.Open(ctx, transport.Group{Name: "cfg", ConfigHash: 6, Describe: "nodes=9"}, 0)
	require.NoError(t, err)
	require.NoError(t, e0.Send(ctx, gossip.Message{From: 0, To: 1, Kind: gossip.KindPush}))
	// Memory delivers synchronously: the probe has been judged.
	assert.Empty(t, e1.Foreign())
	assert.Equal(t, uint64(1), e1.Stats().Foreign)
	assert.Zero(t, e1.Stats().Notices)
	assert.Empty(t, e0.Foreign())
}
