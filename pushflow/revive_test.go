package pushflow

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
)

// plain returns the plain pushes of out (neither asks nor answers).
func plain(out []gossip.Message) []gossip.Message {
	var p []gossip.Message
	for _, m := range out {
		if m.Tag&(tagRepair|tagAsk) == 0 {
			p = append(p, m)
		}
	}
	return p
}

// TestAPushShownLostIsPushedOn: every message counts its sender's pushes
// on the edge, so that a receiver learns of pushes that never came from
// the next message that does, and pushes on in place of each, as it would
// have on the push: a lost push otherwise ended one of the pushes in
// circulation for good, and under 1 % loss a large group lost nearly all
// of them within milliseconds. A push overtaken by a later message was
// pushed on for when that message came, and is not again; nor is a
// duplicate, unless it acknowledges nothing (a sender restarted within the
// operation numbers from 1 again, and its first pushes look like
// duplicates of its earlier self's). Four lost in a row on one edge are counted as none
// (the count is modulo 4), and four overtaken are pushed on when they come.
func TestAPushShownLostIsPushedOn(t *testing.T) {
	t.Run("lost", func(t *testing.T) {
		a, b := pairOf(t, true)
		require.Len(t, a.Tick(nil), 1, "a push, lost")
		second := a.Tick(nil)
		require.Len(t, second, 1)
		out, err := b.Step(second[0], nil)
		require.NoError(t, err)
		assert.Len(t, plain(out), 2, "one push for the push received, one for the push lost")
		assert.Equal(t, 1, b.Counters().Revived)
	})
	t.Run("lost, then an ask", func(t *testing.T) {
		a, b := pairOf(t, true)
		require.Len(t, a.Tick(nil), 1, "a push, lost")
		ask := a.Idle(nil)
		require.Len(t, ask, 1)
		require.NotZero(t, ask[0].Tag&tagAsk)
		out, err := b.Step(ask[0], nil)
		require.NoError(t, err)
		require.Len(t, out, 2)
		assert.NotZero(t, out[0].Tag&tagRepair, "the answer")
		assert.Len(t, plain(out), 1, "and a push in place of the lost one")
	})
	t.Run("overtaken", func(t *testing.T) {
		a, b := pairOf(t, true)
		first, second := a.Tick(nil), a.Tick(nil)
		out, err := b.Step(second[0], nil)
		require.NoError(t, err)
		assert.Len(t, plain(out), 2, "the first is not here yet: pushed on for")
		out, err = b.Step(first[0], nil)
		require.NoError(t, err)
		assert.True(t, b.Stale())
		assert.Empty(t, out, "overtaken: pushed on for already")
		assert.Equal(t, 1, b.Counters().Revived)
	})
	t.Run("four overtaken", func(t *testing.T) {
		// The fifth push's count reads four missing as none, so none is
		// pushed on for, and the four are pushed on when they come (a
		// review found them dropped for good when an overtaken push was
		// never pushed on, whatever the count had said).
		a, b := pairOf(t, true)
		var pushes []gossip.Message
		for range 5 {
			pushes = append(pushes, a.Tick(nil)...)
		}
		require.Len(t, pushes, 5)
		made := 0
		for _, i := range []int{4, 0, 1, 2, 3} {
			out, err := b.Step(pushes[i], nil)
			require.NoError(t, err)
			made += len(plain(out))
		}
		assert.Equal(t, 5, made, "one push on for each push, as without the count")
	})
	t.Run("duplicate", func(t *testing.T) {
		a, b := pairOf(t, true)
		first := b.Tick(nil)
		push, err := a.Step(first[0], nil) // a's push on acknowledges b's
		require.NoError(t, err)
		require.Len(t, push, 1)
		out, err := b.Step(push[0], nil)
		require.NoError(t, err)
		assert.Len(t, plain(out), 1)
		out, err = b.Step(push[0], nil)
		require.NoError(t, err)
		assert.True(t, b.Stale())
		assert.Empty(t, plain(out), "a duplicate is not pushed on: the push it copies was")
		assert.Zero(t, b.Counters().Revived)
	})
	t.Run("duplicate of a first push", func(t *testing.T) {
		a, b := pairOf(t, true)
		push := a.Tick(nil)
		for range 2 {
			out, err := b.Step(push[0], nil)
			require.NoError(t, err)
			assert.Len(t, plain(out), 1, "it acknowledges nothing, as a restarted sender's: pushed on")
		}
	})
	t.Run("hushed", func(t *testing.T) {
		a, b := pairOf(t, true)
		b.Hush(true)
		require.Len(t, a.Tick(nil), 1, "a push, lost")
		second := a.Tick(nil)
		out, err := b.Step(second[0], nil)
		require.NoError(t, err)
		assert.Empty(t, plain(out), "a hushed node lets the circulation end")
		assert.Zero(t, b.Counters().Revived)
	})
	t.Run("four lost", func(t *testing.T) {
		a, b := pairOf(t, true)
		for range 4 {
			require.Len(t, a.Tick(nil), 1, "a push, lost")
		}
		fifth := a.Tick(nil)
		out, err := b.Step(fifth[0], nil)
		require.NoError(t, err)
		assert.Len(t, plain(out), 1, "four lost read as none: the count is modulo 4")
	})
	t.Run("without Revive", func(t *testing.T) {
		a, b := pfccPair(t)
		first, second := a.Tick(nil), a.Tick(nil)
		out, err := b.Step(second[0], nil)
		require.NoError(t, err)
		assert.Len(t, plain(out), 1, "the thesis's algorithm: one push for the push received")
		out, err = b.Step(first[0], nil)
		require.NoError(t, err)
		assert.Len(t, plain(out), 1, "and one for the push overtaken")
	})
	t.Run("untagged", func(t *testing.T) {
		overlay := gossiptest.Complete(2)
		a, err := NewPublished(gossip.Config{ID: 0, Overlay: overlay, Value: []float64{1}, Revive: true})
		require.NoError(t, err)
		b, err := NewPublished(gossip.Config{ID: 1, Overlay: overlay, Value: []float64{3}, Revive: true})
		require.NoError(t, err)
		require.Len(t, a.Tick(nil), 1, "a push, lost")
		second := a.Tick(nil)
		out, err := b.Step(second[0], nil)
		require.NoError(t, err)
		assert.Len(t, out, 1, "Algorithm 3 as published counts nothing")
	})
}
