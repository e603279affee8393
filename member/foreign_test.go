package member

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/algo"
	"github.com/gossipreduce/gossipreduce/gossip"
)

// foreignMember builds member id of a complete group of n running alg,
// with an operation begun.
func foreignMember(t *testing.T, alg string, id, n int) *Machine {
	t.Helper()
	spec, err := algo.Lookup(alg)
	require.NoError(t, err)
	g, err := Overlay("complete", n, spec)
	require.NoError(t, err)
	m, err := New(Config{ID: gossip.NodeID(id), Graph: g, Algorithm: spec, Diameter: 3,
		Epsilon: 1e-9, Idle: time.Millisecond, Suspect: 100 * time.Millisecond, Tick: time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, m.Begin(0, Op{Epoch: 1, Values: []float64{float64(id)}}))
	m.Outbox()
	return m
}

const why = "a configuration with nodes=8 where this member has nodes=9"

// A member told by half of its group that they run another
// configuration, and that has heard from nobody under its own, is the odd
// one out: its operation ends with ErrGroupMismatch naming the difference,
// and so does every later one, at once.
func TestForeignOddOneOut(t *testing.T) {
	for _, alg := range []string{"exchange", "pfcc"} {
		m := foreignMember(t, alg, 7, 8)
		m.Foreign(time.Millisecond, 0, why)
		m.Foreign(time.Millisecond, 1, why)
		m.Foreign(time.Millisecond, 1, why) // counted once
		m.Foreign(time.Millisecond, 2, why)
		_, ok := m.TakeOutcome()
		require.False(t, ok, "%s: three members are not half the group", alg)
		m.Foreign(2*time.Millisecond, 3, "")
		out, ok := m.TakeOutcome()
		require.True(t, ok, "%s: half the group, and none of its own configuration", alg)
		require.ErrorIs(t, out.Err, ErrGroupMismatch)
		assert.Contains(t, out.Err.Error(), why)
		assert.Contains(t, out.Err.Error(), "4 members (0, 1, 2, 3)")
		assert.Equal(t, 4, m.Stats().Foreign)

		require.NoError(t, m.Begin(3*time.Millisecond, Op{Values: []float64{1}}))
		out, ok = m.TakeOutcome()
		require.True(t, ok, "%s: the next operation fails at once", alg)
		require.ErrorIs(t, out.Err, ErrGroupMismatch)
		assert.Equal(t, uint64(2), out.Result.Epoch, "%s: the outcome is the new operation's", alg)
	}
}

// Three misconfigured members that started first tell a member of the
// correctly configured majority, which has heard nobody yet, that they run
// another configuration: it must not take itself for the odd one out (a
// helper's real-process test: 3 members with --nodes 9 started 1.5 s
// before 5 with --nodes 8 made all 5 fail, when the rule was three
// notices and more than it had heard).
func TestForeignMinorityFirst(t *testing.T) {
	m := foreignMember(t, "exchange", 0, 8)
	for j := 5; j <= 7; j++ {
		m.Foreign(time.Millisecond, gossip.NodeID(j), why)
	}
	_, ok := m.TakeOutcome()
	require.False(t, ok, "three of eight are not half the group")
	assert.True(t, m.Active())
	assert.Equal(t, 1, m.Stats().Fallbacks, "it stops waiting for them")
}

// A member that has heard from more members under its own configuration
// than it was told run another one is not the odd one out: it stops
// waiting for the foreign member (the exchange falls back at once, PFCC
// declares it dead) and carries on; a member heard from again under this
// member's configuration is no longer foreign.
func TestForeignMemberIsNotWaitedFor(t *testing.T) {
	for _, alg := range []string{"exchange", "pfcc"} {
		m := foreignMember(t, alg, 0, 8)
		for j := 1; j <= 4; j++ {
			m.Step(time.Millisecond, gossip.Message{From: gossip.NodeID(j), To: 0, Kind: gossip.KindControl, Tag: tagHello})
		}
		for j := 5; j <= 7; j++ {
			m.Foreign(2*time.Millisecond, gossip.NodeID(j), "")
		}
		_, ok := m.TakeOutcome()
		require.False(t, ok, "%s: three foreign members against four of its own configuration", alg)
		require.True(t, m.Active())
		assert.NotNil(t, m.cur.cert, "%s: the operation is certified (PFCC, or the exchange's fallback)", alg)
		for j := 5; j <= 7; j++ {
			assert.True(t, m.cur.cert.dead.has(j), "%s: member %d is not waited for", alg, j)
			assert.True(t, m.absent.has(j), "%s: nor in the next operation", alg)
		}
		if alg == "exchange" {
			assert.Equal(t, 1, m.Stats().Fallbacks)
		}
		assert.Equal(t, 3, m.foreign.count())

		// Member 5 speaks under this member's configuration after all.
		m.Step(3*time.Millisecond, gossip.Message{From: 5, To: 0, Kind: gossip.KindControl, Tag: tagHello})
		assert.Equal(t, 2, m.foreign.count())
		assert.False(t, m.absent.has(5))
	}
}

// Foreign ignores ids outside the group and the member's own.
func TestForeignIgnoresStrangers(t *testing.T) {
	m := foreignMember(t, "pfcc", 0, 4)
	for _, j := range []gossip.NodeID{0, 4, 1 << 30} {
		m.Foreign(time.Millisecond, j, why)
	}
	assert.Zero(t, m.Stats().Foreign)
	assert.True(t, m.Active())
}
