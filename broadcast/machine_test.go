package broadcast_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/broadcast"
	"github.com/gossipreduce/gossipreduce/broadcast/internal/plantest"
	"github.com/gossipreduce/gossipreduce/gossip"
)

// A message that does not belong to the broadcast leaves the machine
// untouched and says why.
func TestMachineRejectsForeignMessages(t *testing.T) {
	p := plantest.MustPlan(t, "tree:binomial", "checked", 8, broadcast.LogP{L: 2, O: 1})
	m, err := broadcast.NewMachine(p, broadcast.MachineConfig{ID: 3, Epoch: 7})
	require.NoError(t, err)
	good := gossip.Message{From: 1, To: 3, Kind: gossip.KindBroadcast, Epoch: 7, Tag: broadcast.EncodeTag(broadcast.MsgTree, 0, 0, 4), Payload: []float64{2.5}}
	bad := []struct {
		name string
		edit func(*gossip.Message)
		want error
	}{
		{"kind", func(m *gossip.Message) { m.Kind = gossip.KindPush }, gossip.ErrForeignMessage},
		{"epoch", func(m *gossip.Message) { m.Epoch = 6 }, gossip.ErrForeignMessage},
		{"recipient", func(m *gossip.Message) { m.To = 4 }, gossip.ErrForeignMessage},
		{"root", func(m *gossip.Message) { m.Tag = broadcast.EncodeTag(broadcast.MsgTree, 0, 2, 4) }, gossip.ErrForeignMessage},
		{"sender", func(m *gossip.Message) { m.From = 9 }, gossip.ErrForeignMessage},
		{"self", func(m *gossip.Message) { m.From = 3 }, gossip.ErrForeignMessage},
		{"type", func(m *gossip.Message) { m.Tag = broadcast.EncodeTag(broadcast.MsgGossip, 0, 0, 4) }, gossip.ErrForeignMessage},
		{"bad type", func(m *gossip.Message) { m.Tag = broadcast.EncodeTag(15, 0, 0, 4) }, gossip.ErrForeignMessage},
		{"ids on a tree message", func(m *gossip.Message) { m.Tag = broadcast.EncodeTag(broadcast.MsgTree, 1, 0, 4) }, gossip.ErrLength},
		{"empty payload", func(m *gossip.Message) { m.Payload = nil }, gossip.ErrLength},
		{"NaN", func(m *gossip.Message) { m.Payload = []float64{math.NaN()} }, gossip.ErrNotFinite},
	}
	for _, b := range bad {
		msg := good
		b.edit(&msg)
		err := m.Step(5, msg)
		assert.ErrorIs(t, err, b.want, b.name)
		assert.False(t, m.Colored(), b.name)
	}
	require.NoError(t, m.Step(5, good))
	assert.Equal(t, []float64{2.5}, m.Value(nil))
	// Once colored, a payload of another length is refused.
	msg := good
	msg.Payload = []float64{1, 2}
	msg.Tag = broadcast.EncodeTag(broadcast.MsgCorrLeft, 0, 0, 9)
	msg.From = 4
	assert.ErrorIs(t, m.Step(10, msg), gossip.ErrLength)
	// Only the root starts, once, with a finite non-empty value.
	assert.ErrorIs(t, m.Start(0, []float64{1}), gossip.ErrInvalidConfig)
	root, err := broadcast.NewMachine(p, broadcast.MachineConfig{ID: 0, Epoch: 7})
	require.NoError(t, err)
	assert.ErrorIs(t, root.Step(1, good), gossip.ErrForeignMessage, "a root that has not started takes no message")
	assert.ErrorIs(t, root.Start(0, nil), gossip.ErrLength)
	assert.ErrorIs(t, root.Start(0, []float64{math.Inf(1)}), gossip.ErrNotFinite)
	require.NoError(t, root.Start(0, []float64{1}))
	assert.ErrorIs(t, root.Start(0, []float64{1}), gossip.ErrInvalidConfig)
}

func TestTagRoundTrip(t *testing.T) {
	for _, c := range []struct {
		typ  broadcast.MsgType
		ids  int
		root gossip.NodeID
		sent int64
	}{{broadcast.MsgTree, 0, 0, 0}, {broadcast.MsgFailLeft, 15, broadcast.MaxNodes - 1, broadcast.MaxTime}, {broadcast.MsgAck, 3, 12345, 678}} {
		typ, ids, root, sent := broadcast.DecodeTag(broadcast.EncodeTag(c.typ, c.ids, c.root, c.sent))
		assert.Equal(t, c.typ, typ)
		assert.Equal(t, c.ids, ids)
		assert.Equal(t, c.root, root)
		assert.Equal(t, c.sent, sent)
	}
	assert.True(t, broadcast.MsgSOS.Correction())
	assert.False(t, broadcast.MsgTree.Correction())
	assert.Equal(t, "corr-left", broadcast.MsgCorrLeft.String())
}
