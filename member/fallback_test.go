package member

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/algo"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/topology"
)

// exchangePair builds a group of two running exchange and runs its first
// pass: both members accept the result; the vouches of the second pass are
// held back, so neither is done.
func exchangePair(t *testing.T) (a, b *Machine) {
	t.Helper()
	g, err := topology.Parse("complete", 2)
	require.NoError(t, err)
	spec, err := algo.Lookup("exchange")
	require.NoError(t, err)
	ms := make([]*Machine, 2)
	for i := range ms {
		ms[i], err = New(Config{ID: gossip.NodeID(i), Graph: g, Algorithm: spec, Diameter: 1,
			Epsilon: 1e-9, Idle: time.Millisecond, Suspect: 100 * time.Millisecond, Tick: time.Millisecond})
		require.NoError(t, err)
		require.NoError(t, ms[i].Begin(0, Op{Values: []float64{float64(10 * (i + 1))}}))
	}
	steps := [][]gossip.Message{ms[0].Outbox(), ms[1].Outbox()}
	for i, out := range steps {
		require.Len(t, out, 1, "member %d's first step", i)
		ms[1-i].Step(time.Millisecond, out[0])
	}
	for i, m := range ms {
		require.True(t, m.cur.px.hasAcc, "member %d accepted the first pass", i)
		require.False(t, m.cur.x.Done())
		m.Outbox() // the vouches, held back
	}
	return ms[0], ms[1]
}

// A member that accepted the exchange's result and is asked to promise
// falls back first, and its promise reports the result at ballot 0: a
// proposer after the fallback proposes it.
func TestPromiseReportsTheExchangeResult(t *testing.T) {
	_, b := exchangePair(t)
	want := b.cur.px.accepted
	b.Step(2*time.Millisecond, gossip.Message{From: 0, To: 1, Kind: gossip.KindControl, Epoch: 1, Tag: tagPrepare,
		Payload: []float64{u2f(1 << 32)}}) // round 1, proposer 0
	assert.Equal(t, 1, b.Stats().Fallbacks)
	var promise *gossip.Message
	for _, msg := range b.Outbox() {
		if msg.Kind == gossip.KindControl && msg.Tag == tagPromise {
			promise = &msg
		}
	}
	require.NotNil(t, promise)
	require.Greater(t, len(promise.Payload), 2)
	assert.Equal(t, uint64(1), f2u(promise.Payload[1]), "accepted at ballot 0 (+1)")
	assert.Equal(t, want, promise.Payload[2:])
	assert.Equal(t, []float64{0, 15, 2}, want[:3], "root 0, the average, both inputs")
}

// Ballot 0 holds one value: a member that accepted the exchange's result
// refuses a proposal of another value at ballot 0, and keeps its own.
func TestBallotZeroHoldsOneValue(t *testing.T) {
	_, b := exchangePair(t)
	want := append([]float64(nil), b.cur.px.accepted...)
	other := append([]float64{u2f(0)}, want...)
	other[2] = 20 // member 1's own input: what its fresh fallback estimates, so plausible
	b.Step(2*time.Millisecond, gossip.Message{From: 0, To: 1, Kind: gossip.KindControl, Epoch: 1, Tag: tagPropose, Payload: other})
	assert.Equal(t, want, b.cur.px.accepted)
	for _, msg := range b.Outbox() {
		assert.NotEqual(t, tagAccepted, msg.Tag, "accepted another value at ballot 0")
	}
}

// A member whose exchange makes no step for Suspect falls back to PFCC,
// starts the certificate, and gossips.
func TestStallFallsBack(t *testing.T) {
	a, _ := exchangePair(t)
	now := time.Millisecond
	for a.Stats().Fallbacks == 0 && now < time.Second {
		now += time.Millisecond
		a.Tick(now)
	}
	require.Equal(t, 1, a.Stats().Fallbacks)
	assert.Greater(t, now, 100*time.Millisecond, "not before Suspect")
	assert.NotNil(t, a.cur.cert)
	gossiped := false
	for _, msg := range a.Outbox() {
		gossiped = gossiped || msg.Kind != gossip.KindExchange && msg.Kind != gossip.KindControl
	}
	assert.True(t, gossiped, "the fallback gossips")
}
