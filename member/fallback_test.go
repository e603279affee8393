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

// exchangeGroup builds a group of two running exchange, member i with
// input 10(i+1), both begun.
func exchangeGroup(t *testing.T) []*Machine {
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
	return ms
}

// exchangePair builds a group of two running exchange and runs its first
// pass: both members accept the result; the vouches of the second pass are
// held back, so neither is done.
func exchangePair(t *testing.T) (a, b *Machine) {
	t.Helper()
	ms := exchangeGroup(t)
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

// promiseTo hands member 1, b, member 0's prepare of the given round and
// returns b's promise, nil if it made none.
func promiseTo(b *Machine, now time.Duration, round uint64) *gossip.Message {
	b.Step(now, gossip.Message{From: 0, To: 1, Kind: gossip.KindControl, Epoch: 1, Tag: tagPrepare,
		Payload: []float64{u2f(round << 32)}}) // ballot: round, proposer 0
	var promise *gossip.Message
	for _, msg := range b.Outbox() {
		if msg.Kind == gossip.KindControl && msg.Tag == tagPromise {
			promise = &msg
		}
	}
	return promise
}

// A member that accepted the exchange's result and is asked to promise
// falls back first, and its promise reports the result at ballot 0: a
// proposer after the fallback proposes it.
func TestPromiseReportsTheExchangeResult(t *testing.T) {
	_, b := exchangePair(t)
	want := b.cur.px.accepted
	promise := promiseTo(b, 2*time.Millisecond, 1)
	assert.Equal(t, 1, b.Stats().Fallbacks)
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

// exchangeStalled builds a group of two running exchange in which member
// stalled never hears the other's first step until it has fallen back: it
// returns both members, the held step and the time.
func exchangeStalled(t *testing.T, stalled int) (ms []*Machine, held gossip.Message, now time.Duration) {
	t.Helper()
	ms = exchangeGroup(t)
	out := ms[1-stalled].Outbox()
	require.Len(t, out, 1)
	held = out[0]
	ms[stalled].Outbox()
	s := ms[stalled]
	for now = time.Millisecond; s.Stats().Fallbacks == 0 && now < time.Second; now += time.Millisecond {
		s.Tick(now)
	}
	require.Equal(t, 1, s.Stats().Fallbacks)
	require.False(t, s.cur.px.hasAcc, "fell back before its first pass ended")
	s.Outbox()
	return ms, held, now
}

// A member that fell back and promised never accepts the exchange's result
// at ballot 0 afterwards, even when its first pass ends then: an acceptance
// at ballot 0 after a promise at a higher ballot would let a proposer that
// counted the promise choose another value while ballot 0 chose R.
func TestNoAcceptanceAtBallotZeroAfterAPromise(t *testing.T) {
	ms, held, now := exchangeStalled(t, 1)
	b := ms[1]
	require.NotNil(t, promiseTo(b, now, 1))
	b.Step(now+time.Millisecond, held) // the first pass could end now
	assert.False(t, b.cur.px.hasAcc, "accepted at ballot 0 after promising")
	promise := promiseTo(b, now+2*time.Millisecond, 2)
	require.NotNil(t, promise)
	require.GreaterOrEqual(t, len(promise.Payload), 2)
	assert.Zero(t, f2u(promise.Payload[1]), "the promise reports no accepted value")
}

// A member that fell back but has promised nothing keeps its exchange
// going beside the gossip: when the first pass ends late it accepts R at
// ballot 0, and its next promise reports R, so that the proposer proposes
// it. On a slow network every member falls back before its first pass
// ends, and refused there, no member could end the exchange at all (trace
// slow_network.txt).
func TestFallbackKeepsTheExchangeUntilAPromise(t *testing.T) {
	ms, held, now := exchangeStalled(t, 1)
	b := ms[1]
	b.Step(now+time.Millisecond, held) // the first pass ends now
	require.True(t, b.cur.px.hasAcc, "accepted at ballot 0 after falling back")
	assert.Zero(t, b.cur.px.accB)
	promise := promiseTo(b, now+2*time.Millisecond, 1)
	require.NotNil(t, promise)
	require.Greater(t, len(promise.Payload), 2)
	assert.Equal(t, uint64(1), f2u(promise.Payload[1]), "accepted at ballot 0 (+1)")
	assert.Equal(t, []float64{0, 15, 2}, promise.Payload[2:5], "root 0, the average, both inputs")
}

// A proposer that hears of no higher ballot does not bid again when its
// replies are slow: it sends its prepare again, at the same ballot, so
// that promises still on their way count. Bidding every Suspect/2 at
// round trips of seconds, it never counted a promise (slow_network.txt).
func TestSlowPromisesAreNotOrphaned(t *testing.T) {
	ms, _, now := exchangeStalled(t, 1)
	b := ms[1]
	b.propose(now, b.cur.m.Estimate(nil))
	ballot := b.cur.px.ballot
	require.Equal(t, 1, b.cur.px.phase, "preparing")
	var prepares int
	for end := now + 5*b.r.Suspect; now < end; now += time.Millisecond {
		b.Tick(now)
		for _, msg := range b.Outbox() {
			if msg.Kind == gossip.KindControl && msg.Tag == tagPrepare {
				prepares++
				assert.Equal(t, ballot, f2u(msg.Payload[0]), "the same ballot")
			}
		}
	}
	assert.Greater(t, prepares, 5, "sent again")
	assert.Equal(t, ballot, b.cur.px.ballot)
	// A higher ballot seen (a nack) makes it bid above it, after a pause.
	b.Step(now, gossip.Message{From: 0, To: 1, Kind: gossip.KindControl, Epoch: 1, Tag: tagNack,
		Payload: []float64{u2f(ballot + 1<<32)}})
	for end := now + b.r.Suspect; now < end; now += time.Millisecond {
		b.Tick(now)
	}
	assert.Greater(t, b.cur.px.ballot, ballot+1<<32, "bid again above the ballot it heard of")
}

// Member 0 has no fast ballot in a fallback: members may have accepted the
// exchange's result at ballot 0, so a proposal of its own estimate there
// would put two values at one ballot. It prepares at a higher ballot.
func TestNoFastBallotInAFallback(t *testing.T) {
	ms, _, now := exchangeStalled(t, 0)
	a := ms[0]
	a.propose(now, resultPayload([]float64{10}, nil, 2, newBitset(2)))
	assert.NotZero(t, a.cur.px.ballot, "member 0 proposed at ballot 0")
	for _, msg := range a.Outbox() {
		assert.NotEqual(t, tagPropose, msg.Tag, "a proposal without a prepare")
	}
}

// mismatching is an exchange machine that reports that members hold
// different results, as a member restarted under its id with another input
// makes the exchange find.
type mismatching struct{ twoPass }

func (mismatching) Mismatch() bool { return true }

// TestMismatchFallsBackOnce: an exchange that finds members holding
// different results falls back once. Falling back took in what the
// exchange did, found the mismatch again and fell back again, recursing
// until the stack overflowed: found by a helper with real processes, a
// member killed and started again with another --value, which took the
// restarted member and a neighbour down with a fatal error and no output.
func TestMismatchFallsBackOnce(t *testing.T) {
	g, err := topology.Parse("complete", 2)
	require.NoError(t, err)
	spec, err := algo.Lookup("exchange")
	require.NoError(t, err)
	build := spec.New
	spec.New = func(cfg gossip.Config) (gossip.Machine, error) {
		gm, err := build(cfg)
		if err != nil {
			return nil, err
		}
		return mismatching{gm.(twoPass)}, nil
	}
	m, err := New(Config{ID: 0, Graph: g, Algorithm: spec, Diameter: 1,
		Epsilon: 1e-9, Idle: time.Millisecond, Suspect: 100 * time.Millisecond, Tick: time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, m.Begin(0, Op{Values: []float64{1}}))
	m.Tick(time.Millisecond)
	assert.Equal(t, 1, m.Stats().Fallbacks)
	assert.True(t, m.Active(), "the fallback runs the operation on")
}

// TestLeaveSaysTheExchangesResultIsChosen: a member that leaves with the
// exchange's result tells the others in its leave notice (epoch and the
// result's hash), and a member still waiting for vouches in the second
// pass returns the same result on it; a notice naming another result is
// rejected, and the member gives up, as before, when everybody else has
// left (here the one other member).
func TestLeaveSaysTheExchangesResultIsChosen(t *testing.T) {
	for _, forged := range []bool{false, true} {
		ms := exchangeGroup(t)
		a, b := ms[0], ms[1]
		steps := [][]gossip.Message{a.Outbox(), b.Outbox()}
		a.Step(time.Millisecond, steps[1][0])
		b.Step(time.Millisecond, steps[0][0])
		b.Outbox() // b's vouch, held back: a waits for it
		for _, msg := range a.Outbox() {
			b.Step(2*time.Millisecond, msg) // a's vouch: b is done
		}
		res, ok := b.TakeOutcome()
		require.True(t, ok, "b has its result")
		require.NoError(t, res.Err)
		b.Leave(3 * time.Millisecond)
		var leave gossip.Message
		for _, msg := range b.Outbox() {
			if msg.Kind == gossip.KindControl && msg.Tag == tagLeave && msg.To == 0 {
				leave = msg
			}
		}
		require.Len(t, leave.Payload, 3, "the leave notice says which result b returned")
		if forged {
			leave.Payload = []float64{leave.Payload[0], leave.Payload[1], float64(uint32(leave.Payload[2]) ^ 1)}
		}
		_, ok = a.TakeOutcome()
		require.False(t, ok, "a waits for b's vouch")
		a.Step(4*time.Millisecond, leave)
		out, ok := a.TakeOutcome()
		require.True(t, ok, "forged %v: a ended", forged)
		if forged {
			assert.ErrorIs(t, out.Err, ErrNotConverged, "a notice for another result is no proof")
			assert.Equal(t, 1, a.Stats().Rejected)
			continue
		}
		require.NoError(t, out.Err)
		assert.True(t, gossip.SameBits(res.Result.Value, out.Result.Value), "a returns b's result: %v against %v", out.Result.Value, res.Result.Value)
		assert.Equal(t, 2, out.Result.Live)
	}
}
