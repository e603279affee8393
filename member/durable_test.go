package member_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/member"
)

// A member reports its votes once each time they change, and a member
// given them by Restore takes no part in an earlier operation and keeps
// them in that one: it does not accept another value at a lower ballot.
func TestHardStateIsKeptAcrossARestart(t *testing.T) {
	const n = 3
	m := newMember(t, 1, n, true)
	_, changed := m.HardState()
	assert.False(t, changed, "no votes before an operation")
	require.NoError(t, m.Begin(0, member.Op{Epoch: 2, Values: []float64{1}}))
	m.Outbox()
	_, changed = m.HardState()
	assert.False(t, changed, "no votes yet")

	// Member 2 prepares ballot 7<<32|2; member 1 promises.
	ballot := uint64(7<<32 | 2)
	m.Step(time.Millisecond, gossip.Message{From: 2, To: 1, Kind: gossip.KindControl, Epoch: 2, Tag: ^uint64(0) - 6, Payload: []float64{u2f(ballot)}})
	hs, changed := m.HardState()
	require.True(t, changed, "a promise is a vote")
	assert.Equal(t, member.HardState{Epoch: 2, Promised: ballot, Seen: ballot}, hs)
	_, changed = m.HardState()
	assert.False(t, changed, "reported once")

	// Restarted with that state: a prepare of a lower ballot is refused
	// (a nack, no promise), and an earlier operation is refused at once.
	r := newMember(t, 1, n, true)
	require.NoError(t, r.Restore(hs))
	require.NoError(t, r.Begin(0, member.Op{Epoch: 1, Values: []float64{1}}))
	out, ok := r.TakeOutcome()
	require.True(t, ok)
	require.ErrorIs(t, out.Err, member.ErrRestarted)

	r = newMember(t, 1, n, true)
	require.NoError(t, r.Restore(hs))
	require.NoError(t, r.Begin(0, member.Op{Epoch: 2, Values: []float64{1}}))
	r.Outbox()
	lower := uint64(3 << 32) // round 3, member 0
	r.Step(time.Millisecond, gossip.Message{From: 0, To: 1, Kind: gossip.KindControl, Epoch: 2, Tag: ^uint64(0) - 6, Payload: []float64{u2f(lower)}})
	var tags []uint64
	for _, msg := range r.Outbox() {
		if msg.To == 0 && msg.Kind == gossip.KindControl {
			tags = append(tags, msg.Tag)
		}
	}
	assert.Contains(t, tags, ^uint64(0)-10, "a nack")
	assert.NotContains(t, tags, ^uint64(0)-7, "no promise")
	require.Error(t, r.Restore(hs), "Restore after Begin")
}

func u2f(u uint64) float64 { return math.Float64frombits(u) }

// An algorithm that would count a member's input twice if it began an
// operation again (algo.Spec.Reinjects: Push-Sum, Push-Cancel-Flow)
// records that the member began it, before its first message leaves; a
// member restarted with that record sits out the first operation it
// begins, whichever it is (what was sent to it while it was down is lost
// too), and takes part again from the next. Push-Flow records nothing
// until it votes: its machines take their flows back from their
// neighbours'.
func TestReinjectingAlgorithmsSitOutAfterARestart(t *testing.T) {
	const n = 4
	for _, c := range []struct {
		name      string
		reinjects bool
	}{{"ps", true}, {"ps-iter", true}, {"pcf", true}, {"pf", false}, {"pfcc", false}} {
		cfg := testConfig(t, 1, n, c.name)
		require.Equal(t, c.reinjects, cfg.Algorithm.Reinjects, c.name)
		mk := func() *member.Machine {
			m, err := member.New(cfg)
			require.NoError(t, err)
			return m
		}
		m := mk()
		require.NoError(t, m.Begin(0, member.Op{Epoch: 3, Values: []float64{1}}))
		hs, changed := m.HardState()
		if !c.reinjects {
			assert.False(t, changed, "%s: no record before a vote", c.name)
			continue
		}
		require.True(t, changed, c.name)
		assert.Equal(t, member.HardState{Epoch: 3}, hs, c.name)
		_, changed = m.HardState()
		assert.False(t, changed, "%s: reported once", c.name)

		for _, epoch := range []uint64{3, 4} {
			r := mk()
			require.NoError(t, r.Restore(hs))
			require.NoError(t, r.Begin(0, member.Op{Epoch: epoch, Values: []float64{1}}))
			out, ok := r.TakeOutcome()
			require.True(t, ok, "%s: operation %d after the restart", c.name, epoch)
			require.ErrorIs(t, out.Err, member.ErrRestarted, c.name)
			assert.Empty(t, r.Outbox(), "%s: nothing sent in operation %d", c.name, epoch)
			require.NoError(t, r.Begin(0, member.Op{Epoch: epoch + 1, Values: []float64{1}}))
			_, ok = r.TakeOutcome()
			assert.False(t, ok, "%s: the next operation goes on", c.name)
			assert.NotEmpty(t, r.Outbox(), c.name)
		}
	}
}
