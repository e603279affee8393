package member_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/algo"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/member"
	"github.com/gossipreduce/gossipreduce/topology"
)

// newMember builds member id of a complete group of n running pfcc.
func newMember(t *testing.T, id, n int, authenticated bool) *member.Machine {
	t.Helper()
	g, err := topology.Parse("complete", n)
	require.NoError(t, err)
	spec, err := algo.Lookup("pfcc")
	require.NoError(t, err)
	m, err := member.New(member.Config{ID: gossip.NodeID(id), Graph: g, Algorithm: spec, Diameter: 1,
		Epsilon: 1e-9, Idle: time.Millisecond, Suspect: 100 * time.Millisecond, Tick: time.Millisecond, Authenticated: authenticated})
	require.NoError(t, err)
	return m
}

// An error that blames a member names it plainly only when messages are
// authenticated; otherwise it says the sender is what the message claims.
func TestMismatchNamesTheSender(t *testing.T) {
	for _, auth := range []bool{false, true} {
		a, b := newMember(t, 0, 4, auth), newMember(t, 1, 4, auth)
		require.NoError(t, a.Begin(0, member.Op{Values: []float64{1, 2, 3}}))
		require.NoError(t, b.Begin(0, member.Op{Values: []float64{1, 2}}))
		var toB []gossip.Message
		sent := a.Outbox()
		for now := time.Millisecond; now < 50*time.Millisecond && len(sent) < 8; now += time.Millisecond {
			a.Tick(now)
			sent = append(sent, a.Outbox()...)
		}
		for _, msg := range sent {
			if msg.To == 1 && msg.Kind != gossip.KindControl {
				toB = append(toB, msg)
			}
		}
		require.NotEmpty(t, toB, "member 0 gossips to member 1")
		b.Step(50*time.Millisecond, toB[0])
		out, ok := b.TakeOutcome()
		require.True(t, ok, "a vector of another length ends the operation")
		require.ErrorIs(t, out.Err, member.ErrGroupMismatch)
		assert.Contains(t, out.Err.Error(), "node 0")
		if auth {
			assert.NotContains(t, out.Err.Error(), "not authenticated")
		} else {
			assert.Contains(t, out.Err.Error(), "not authenticated")
		}
	}
}
