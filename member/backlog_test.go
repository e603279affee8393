package member_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/member"
)

// TestBehindMemberAnswersWithoutPushingOn: a member told that more
// messages wait behind the next than it has neighbours (Backlog) answers a
// push to its sender alone and pushes no further, so that the pushes that
// queued while it was starved or paused end with it; once it has caught up
// it pushes on again, paying back the push it held.
func TestBehindMemberAnswersWithoutPushingOn(t *testing.T) {
	const n, b = 8, 4 // a complete group, 7 neighbours each; b is the member under test
	var members []*member.Machine
	var pushes []gossip.Message // first pushes made to b
	for i := range n {
		m := newMember(t, i, n, false)
		require.NoError(t, m.Begin(0, member.Op{Epoch: 1, Values: []float64{float64(i)}}))
		for _, msg := range m.Outbox() {
			if msg.To == b && msg.Kind != gossip.KindControl { // not the start announcement (a pong to every neighbour)
				pushes = append(pushes, msg)
			}
		}
		members = append(members, m)
	}
	require.GreaterOrEqual(t, len(pushes), 2, "with this seed, several members push to member %d first", b)
	m := members[b]

	m.Backlog(n) // behind: more waiting than its 7 neighbours
	m.Step(msAt(1), pushes[0])
	out := m.Outbox()
	require.Len(t, out, 1, "behind, a push gets one answer: %v", out)
	assert.Equal(t, pushes[0].From, out[0].To, "to its sender")

	m.Backlog(0) // caught up
	m.Step(msAt(2), pushes[1])
	out = m.Outbox()
	others := 0
	for _, msg := range out {
		if msg.To != pushes[1].From {
			others++
		}
	}
	assert.GreaterOrEqual(t, len(out), 2, "caught up, it pushes on and pays back the push it held: %v", out)
	assert.Positive(t, others, "its pushes go to neighbours other than the sender: %v", out)
}

// msAt is ms milliseconds from the start.
func msAt(ms int) time.Duration { return time.Duration(ms) * time.Millisecond }
