package pushflow

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
)

// TestQuietAnswersTheSenderAndPushesNoMore: a quiet node answers a push
// with its flow to the sender, marked so that the sender does not push on;
// its idle step makes no new push; the pair's flows stay exact negatives;
// and once it is not quiet any more it pushes again, paying back the push
// it swallowed.
func TestQuietAnswersTheSenderAndPushesNoMore(t *testing.T) {
	a, b := quietNode(t, 0, 1), quietNode(t, 1, 5)

	push := pushTo(t, a, b.ID())
	b.Quiet(true)
	out, err := b.Step(push, nil)
	require.NoError(t, err)
	require.Len(t, out, 1, "one answer, no push on")
	assert.Equal(t, a.ID(), out[0].To, "the answer goes back to the sender")
	assert.NotZero(t, out[0].Tag&tagRepair, "marked: the sender takes it in without pushing")
	fb := b.Flow(0)
	for c := range push.Payload {
		assert.Equal(t, -push.Payload[c], fb[c], "component %d: b holds the negative of a's flow", c)
	}
	back, err := a.Step(out[0], nil)
	require.NoError(t, err)
	assert.Empty(t, back, "the push has stopped circulating")
	assert.True(t, a.Settled(0), "the answer acknowledged a's pushes to b")

	// Every push of b's is acknowledged: a quiet idle step sends nothing.
	assert.Empty(t, b.Idle(nil))

	// Not quiet any more: the next push pays back the one swallowed.
	b.Quiet(false)
	assert.Len(t, b.Idle(nil), 2, "one push, and the one owed")
}

// TestHushedOwesNothing: hushed, a node answers as a quiet one does, but
// the push it ends is not paid back when it pushes again, so that the
// circulation it ended stays ended.
func TestHushedOwesNothing(t *testing.T) {
	a, b := quietNode(t, 0, 1), quietNode(t, 1, 5)
	push := pushTo(t, a, b.ID())
	b.Hush(true)
	out, err := b.Step(push, nil)
	require.NoError(t, err)
	require.Len(t, out, 1, "one answer, no push on")
	assert.Equal(t, a.ID(), out[0].To)
	assert.NotZero(t, out[0].Tag&tagRepair)
	back, err := a.Step(out[0], nil)
	require.NoError(t, err)
	assert.Empty(t, back, "the push has stopped circulating")
	assert.Empty(t, b.Idle(nil), "hushed, an idle step with nothing in flight sends nothing")

	b.Hush(false)
	assert.Len(t, b.Idle(nil), 1, "one push, and none owed")

	// Quiet after Hush owes again what it ends.
	c := quietNode(t, 2, 3)
	push = pushTo(t, a, c.ID())
	c.Hush(true)
	c.Quiet(true)
	out, err = c.Step(push, nil)
	require.NoError(t, err)
	require.Len(t, out, 1)
	c.Quiet(false)
	assert.Len(t, c.Idle(nil), 2, "one push, and the one owed")
}

// quietNode is node id of PFCC on the complete overlay of three, with
// value v.
func quietNode(t *testing.T, id gossip.NodeID, v float64) *Machine {
	t.Helper()
	m, err := NewChecked(gossip.Config{ID: id, Overlay: gossiptest.Complete(3), Value: []float64{v}, Rand: rand.NewPCG(uint64(id), 1), Resend: 16}, Cooperative, 1e-11)
	require.NoError(t, err)
	return m
}

// pushTo ticks a until it pushes to node to, and returns that push.
func pushTo(t *testing.T, a *Machine, to gossip.NodeID) gossip.Message {
	t.Helper()
	for range 1000 {
		out := a.Tick(nil)
		require.Len(t, out, 1)
		if out[0].To == to {
			return out[0]
		}
	}
	require.FailNow(t, "no push to the node", "node %d", to)
	return gossip.Message{}
}
