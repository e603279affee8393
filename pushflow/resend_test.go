package pushflow

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
)

// TestResendRecoversALostPush loses one push and checks that, with Resend
// set, the sender notices within Resend steps (Settled turns false), sends
// the flow again with a request to answer, and settles once the answer has
// acknowledged it, with the pair's mass whole again.
func TestResendRecoversALostPush(t *testing.T) {
	const resend = 6
	overlay := gossiptest.Complete(2)
	a, err := NewChecked(gossip.Config{ID: 0, Overlay: overlay, Value: []float64{1}, Resend: resend}, Cooperative, 1e-11)
	require.NoError(t, err)
	b, err := NewChecked(gossip.Config{ID: 1, Overlay: overlay, Value: []float64{3}, Resend: resend}, Cooperative, 1e-11)
	require.NoError(t, err)

	// a pushes to b; the push is lost.
	out := a.Tick(nil)
	require.Len(t, out, 1)
	assert.True(t, a.Settled(0), "a fresh push carries the current ratio")
	// a keeps ticking; its later pushes are lost too, until the resend.
	var asked *gossip.Message
	for range resend {
		out := a.Tick(nil)
		for _, m := range out {
			if m.Tag&tagAsk != 0 {
				asked = &m
			}
		}
	}
	require.NotNil(t, asked, "the flow to b is sent again")
	assert.Equal(t, gossip.NodeID(1), asked.To)
	// The lost pushes carry a's ratio, which has not changed (a received
	// nothing): still settled, whatever the tolerance.
	assert.True(t, a.Settled(0))
	assert.Equal(t, 1, a.Counters().Resends)

	// b takes the resent flow in and answers without pushing on.
	answer, err := b.Step(*asked, nil)
	require.NoError(t, err)
	require.Len(t, answer, 1)
	assert.NotZero(t, answer[0].Tag&tagRepair, "the answer is marked: a does not push in return")
	assert.Zero(t, answer[0].Tag&tagAsk)
	out, err = a.Step(answer[0], nil)
	require.NoError(t, err)
	assert.Empty(t, out, "an answer makes no push")
	assert.True(t, a.Settled(0))
	// b now holds exactly the flow a resent, which includes every lost push:
	// f_ba = -f_ab, component by component.
	fb := b.Flow(0)
	for c := range asked.Payload {
		assert.Equal(t, -asked.Payload[c], fb[c], "component %d", c)
	}
}

func TestWithoutResendNothingIsResent(t *testing.T) {
	a, err := New(gossip.Config{ID: 0, Overlay: gossiptest.Complete(2), Value: []float64{1}})
	require.NoError(t, err)
	for range 50 {
		for _, m := range a.Tick(nil) {
			assert.Zero(t, m.Tag&tagAsk)
		}
	}
	assert.True(t, a.Settled(0), "its estimate never changed: every push carries it")
}

// TestSettledSeesAStaleRatio: a push lost early carries the sender's old
// estimate; once the sender's estimate has moved, it is no longer settled,
// until the push is acknowledged.
func TestSettledSeesAStaleRatio(t *testing.T) {
	overlay := gossiptest.Complete(3)
	a, err := New(gossip.Config{ID: 0, Overlay: overlay, Value: []float64{1}})
	require.NoError(t, err)
	c, err := New(gossip.Config{ID: 2, Overlay: overlay, Value: []float64{9}})
	require.NoError(t, err)
	// a pushes until a push goes to node 1, which is lost.
	for {
		out := a.Tick(nil)
		if out[0].To == 1 {
			break
		}
		// pushes to c are delivered, and c answers a directly
		back, err := c.Step(out[0], nil)
		require.NoError(t, err)
		_ = back
	}
	require.True(t, a.Settled(1e-12), "nothing has changed a's estimate since")
	// c's mass reaches a: a's estimate moves away from the lost push's ratio.
	m := c.Tick(nil)
	for m[0].To != 0 {
		m = c.Tick(nil)
	}
	_, err = a.Step(m[0], nil)
	require.NoError(t, err)
	assert.False(t, a.Settled(1e-12), "the lost push to 1 carries a stale ratio")
	assert.True(t, a.Settled(1e3), "within a huge tolerance it is fine")
}

// TestIdleAsksWhileAPushIsInFlight checks the runtime's idle step: while
// a push of its is unacknowledged a node does not push again (that would
// add a message to those circulating) but asks that neighbour for an
// answer; once every push is acknowledged it pushes as Tick does.
func TestIdleAsksWhileAPushIsInFlight(t *testing.T) {
	overlay := gossiptest.Complete(2)
	a, err := NewChecked(gossip.Config{ID: 0, Overlay: overlay, Value: []float64{1}, Resend: 100}, Cooperative, 1e-11)
	require.NoError(t, err)
	b, err := NewChecked(gossip.Config{ID: 1, Overlay: overlay, Value: []float64{3}, Resend: 100}, Cooperative, 1e-11)
	require.NoError(t, err)

	push := a.Tick(nil)
	require.Len(t, push, 1)
	for range 3 {
		out := a.Idle(nil)
		require.Len(t, out, 1)
		assert.Equal(t, gossip.NodeID(1), out[0].To)
		assert.NotZero(t, out[0].Tag&tagAsk, "the push is in flight: ask, do not push")
		assert.NotZero(t, out[0].Tag&tagRepair)
	}
	assert.Equal(t, 3, a.Counters().Resends)

	// The push was lost; the last ask arrives and is answered.
	ask := a.Idle(nil)[0]
	answer, err := b.Step(ask, nil)
	require.NoError(t, err)
	require.Len(t, answer, 1)
	out, err := a.Step(answer[0], nil)
	require.NoError(t, err)
	assert.Empty(t, out)
	fa, fb := a.Flow(1), b.Flow(0)
	for c := range fa {
		assert.Equal(t, -fa[c], fb[c], "component %d: the lost push's mass arrived with the ask", c)
	}

	// Everything is acknowledged: the idle step pushes.
	out = a.Idle(nil)
	require.Len(t, out, 1)
	assert.Zero(t, out[0].Tag&(tagAsk|tagRepair), "a plain push")
}
