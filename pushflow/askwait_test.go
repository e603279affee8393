package pushflow

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
)

// pfccPair is two PFCC machines, neighbours of each other.
func pfccPair(t *testing.T) (a, b *Machine) { return pairOf(t, false) }

// pairOf is two PFCC machines, neighbours of each other, that push on in
// place of lost pushes (gossip.Config.Revive) if revive is set.
func pairOf(t *testing.T, revive bool) (a, b *Machine) {
	t.Helper()
	overlay := gossiptest.Complete(2)
	a, err := NewChecked(gossip.Config{ID: 0, Overlay: overlay, Value: []float64{1}, Revive: revive}, Cooperative, 1e-11)
	require.NoError(t, err)
	b, err = NewChecked(gossip.Config{ID: 1, Overlay: overlay, Value: []float64{3}, Revive: revive}, Cooperative, 1e-11)
	require.NoError(t, err)
	return a, b
}

// askRound has a push a to b that is lost, a's idle step ask about it at
// clock at, and b's answer reach a at at+rtt.
func askRound(t *testing.T, a, b *Machine, at, rtt int64) {
	t.Helper()
	a.SetClock(at)
	require.Len(t, a.Tick(nil), 1, "a push, lost")
	require.True(t, a.Pending())
	out := a.Idle(nil)
	require.Len(t, out, 1)
	require.NotZero(t, out[0].Tag&tagAsk, "the idle step asks about the push")
	answer, err := b.Step(out[0], nil)
	require.NoError(t, err)
	require.Len(t, answer, 1)
	a.SetClock(at + rtt)
	_, err = a.Step(answer[0], nil)
	require.NoError(t, err)
	require.False(t, a.Pending(), "the answer acknowledges the push")
}

// TestAskWaitIsTwiceTheLowerQuartileOfTheAsksRoundTrips: AskWait has no
// estimate until rttFirst asks were answered, then twice the lower
// quartile of the last rttKeep round trips, from the first ask about a
// neighbour's pushes to the acknowledgement after it.
func TestAskWaitIsTwiceTheLowerQuartileOfTheAsksRoundTrips(t *testing.T) {
	a, b := pfccPair(t)
	_, ok := a.AskWait()
	assert.False(t, ok, "no clock, no estimate")

	now := int64(1000)
	for i, rtt := range []int64{700, 500, 900} {
		_, ok := a.AskWait()
		assert.False(t, ok, "no estimate after %d round trips", i)
		askRound(t, a, b, now, rtt)
		now += 10_000
	}
	d, ok := a.AskWait()
	require.True(t, ok)
	assert.Equal(t, int64(2*500), d, "twice the least of three")

	// Sixteen more, from 100 to 1,600: the last rttKeep are those, and
	// their lower quartile (the fourth least) is 400.
	for rtt := int64(1600); rtt >= 100; rtt -= 100 {
		askRound(t, a, b, now, rtt)
		now += 10_000
	}
	d, _ = a.AskWait()
	assert.Equal(t, int64(2*400), d)
}

// TestAskedAgainCountsFromTheFirstAsk: a round trip runs from the first
// ask still unanswered, so that an ask lost and made again counts its
// wait, and an answer to an older ask is not taken for a quick network.
func TestAskedAgainCountsFromTheFirstAsk(t *testing.T) {
	a, b := pfccPair(t)
	for i := range rttFirst - 1 {
		askRound(t, a, b, int64(i)*10_000, 9_000)
	}
	a.SetClock(100_000)
	require.Len(t, a.Tick(nil), 1, "a push, lost")
	require.Len(t, a.Idle(nil), 1, "an ask, lost")
	a.SetClock(104_000)
	out := a.Idle(nil)
	require.Len(t, out, 1)
	require.NotZero(t, out[0].Tag&tagAsk, "asked again")
	answer, err := b.Step(out[0], nil)
	require.NoError(t, err)
	a.SetClock(104_300)
	_, err = a.Step(answer[0], nil)
	require.NoError(t, err)
	d, ok := a.AskWait()
	require.True(t, ok)
	assert.Equal(t, int64(2*4_300), d, "from the first ask: 4,300, not the last ask's 300")
}

// TestAskForAnEstimateIsNotTimed: Ask, which a runtime uses to hear a
// neighbour's estimate, is answered at once but starts no round trip: with
// no push to acknowledge, the clock would run on to the acknowledgement of
// a later push, and the next round trip would count the wait between.
func TestAskForAnEstimateIsNotTimed(t *testing.T) {
	a, b := pfccPair(t)
	for i := range rttFirst {
		askRound(t, a, b, int64(i)*10_000, 300)
	}
	a.SetClock(50_000)
	out := a.Ask(1, nil)
	require.Len(t, out, 1)
	require.NotZero(t, out[0].Tag&tagAsk)
	answer, err := b.Step(out[0], nil)
	require.NoError(t, err)
	require.Len(t, answer, 1, "answered at once")
	_, err = a.Step(answer[0], nil)
	require.NoError(t, err)
	assert.True(t, b.Asked())

	askRound(t, a, b, 90_000, 200)
	d, _ := a.AskWait()
	assert.Equal(t, int64(2*200), d, "200 from its own ask, not 40,200 from Ask's")
	assert.Empty(t, a.Ask(7, nil), "not a neighbour")
}

// TestStaleSaysTheFlowWasOld: Stale is set by a message older than one
// already taken in from its sender (its flow is not applied), and cleared
// by the next Step, so that a runtime does not read an estimate that came
// with it as the sender's latest.
func TestStaleSaysTheFlowWasOld(t *testing.T) {
	a, b := pfccPair(t)
	first := a.Tick(nil)
	second := a.Tick(nil)
	require.Len(t, first, 1)
	require.Len(t, second, 1)
	_, err := b.Step(second[0], nil)
	require.NoError(t, err)
	assert.False(t, b.Stale(), "the newer push")
	_, err = b.Step(first[0], nil)
	require.NoError(t, err)
	assert.True(t, b.Stale(), "overtaken by the newer one")
	_, err = b.Step(gossip.Message{From: 5, To: 1, Kind: b.Kind(), Epoch: 0}, nil)
	require.Error(t, err)
	assert.False(t, b.Stale(), "a rejected message is not stale")
}
