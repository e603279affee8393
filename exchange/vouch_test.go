package exchange

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/rdb"
	"github.com/gossipreduce/gossipreduce/topology"
)

// pair builds the two machines of a group of two.
func pair(t *testing.T) (*Machine, *Machine) {
	t.Helper()
	g, err := topology.Complete(2)
	require.NoError(t, err)
	var ms [2]*Machine
	for i := range ms {
		ms[i], err = New(gossip.Config{ID: gossip.NodeID(i), Overlay: g, Value: []float64{float64(i + 1)}, Mode: gossip.Average, Epoch: 1})
		require.NoError(t, err)
	}
	return ms[0], ms[1]
}

// acceptedPair is pair after the first pass: both nodes accepted, and each
// one's vouch is still to be sent.
func acceptedPair(t *testing.T) (*Machine, *Machine) {
	t.Helper()
	a, b := pair(t)
	toB, toA := a.Tick(nil), b.Tick(nil)
	_, err := a.Step(toA[0], nil)
	require.NoError(t, err)
	_, err = b.Step(toB[0], nil)
	require.NoError(t, err)
	return a, b
}

// TestRefusedBeforeTheFirstPassNeverAccepts: a node told to refuse before
// its first pass ends never accepts, never vouches and asks for nothing but
// the chosen result;
// its partner, which accepted, still gets its stored step message.
func TestRefusedBeforeTheFirstPassNeverAccepts(t *testing.T) {
	a, b := pair(t)
	toB := a.Tick(nil)
	require.Len(t, toB, 1)
	b.Refuse()
	toA := b.Tick(nil) // b sends its step message, then waits
	require.Len(t, toA, 1)
	out, err := b.Step(toB[0], nil)
	require.NoError(t, err)
	assert.Empty(t, out, "a refused node vouches for nothing")
	assert.False(t, b.Accepted())
	asks := 0
	for range 50 {
		for _, m := range b.Idle(nil) {
			asks++
			assert.Equal(t, uint64(rdb.TagFoldOut|flagAsk|flagEmpty), m.Tag, "a refused node asks for the chosen result only")
			for _, w := range m.Payload[:len(m.Payload)-2] {
				assert.Zero(t, w, "an empty ask: nothing but the hash")
			}
		}
	}
	assert.LessOrEqual(t, asks, 50/(2*maxBackoff)+1, "at the longest timeout")
	vouch, err := a.Step(toA[0], nil)
	require.NoError(t, err)
	assert.True(t, a.Accepted())
	require.Len(t, vouch, 1, "a vouches")
	_, err = b.Step(vouch[0], nil)
	require.NoError(t, err)
	assert.False(t, b.Done(), "a vouch cannot make a refused node accept")
	// a waits for b's vouch, asks around, goes on without it: one vouch of
	// two is no majority, and a is never done.
	for range 500 {
		a.Idle(nil)
	}
	assert.Equal(t, 1, a.Counters().Skipped)
	assert.False(t, a.Done(), "one vouch of two is no majority")
}

// TestRefusedNodeIsOfferedTheResult: a node that refused before its first
// pass ended asks for the result; a node that accepted R (but is not done)
// answers with R, not marked chosen. The refused node does not accept it
// or end with it, but offers it to its runtime (Offered), which may have to
// vote for R when a proposer proposes it.
func TestRefusedNodeIsOfferedTheResult(t *testing.T) {
	a, b := pair(t)
	toB := a.Tick(nil)
	b.Refuse()
	toA := b.Tick(nil)
	_, err := b.Step(toB[0], nil)
	require.NoError(t, err)
	_, err = a.Step(toA[0], nil)
	require.NoError(t, err)
	require.True(t, a.Accepted())
	require.False(t, a.Done())
	_, _, ok := b.Offered(nil, nil)
	require.False(t, ok, "nothing offered yet")
	var ask []gossip.Message
	for range 50 {
		if ask = b.Idle(nil); len(ask) > 0 {
			break
		}
	}
	require.Len(t, ask, 1, "b asks for the result")
	answer, err := a.Step(ask[0], nil)
	require.NoError(t, err)
	require.Len(t, answer, 1)
	assert.Zero(t, answer[0].Tag&flagChosen, "R is not chosen yet")
	_, err = b.Step(answer[0], nil)
	require.NoError(t, err)
	est, ext, ok := b.Offered(nil, nil)
	require.True(t, ok)
	assert.Equal(t, a.Estimate(nil), est)
	assert.Empty(t, ext)
	assert.False(t, b.Accepted(), "a refused node never accepts")
	assert.False(t, b.Done())
	assert.Zero(t, b.Counters().Conflicts)

	// The same offer again changes nothing; another one is counted, and
	// the first stays.
	_, err = b.Step(answer[0], nil)
	require.NoError(t, err)
	assert.Zero(t, b.Counters().Conflicts, "the same offer twice is no conflict")
	other := slices.Clone(b.offered)
	other[0]++
	b.takeResult(other, false)
	assert.Equal(t, 1, b.Counters().Conflicts)
	again, _, ok := b.Offered(nil, nil)
	require.True(t, ok)
	assert.Equal(t, est, again, "the first offer stays")
}

// TestRefusedAfterTheFirstPassStillEnds: an acceptance made before the
// refusal stands, and the second pass goes on to the chosen result.
func TestRefusedAfterTheFirstPassStillEnds(t *testing.T) {
	a, b := pair(t)
	toB, toA := a.Tick(nil), b.Tick(nil)
	va, err := a.Step(toA[0], nil)
	require.NoError(t, err)
	vb, err := b.Step(toB[0], nil)
	require.NoError(t, err)
	b.Refuse()
	require.True(t, b.Accepted())
	_, err = a.Step(vb[0], nil)
	require.NoError(t, err)
	_, err = b.Step(va[0], nil)
	require.NoError(t, err)
	assert.True(t, a.Done())
	assert.True(t, b.Done())
	assert.Equal(t, a.Estimate(nil), b.Estimate(nil))
	assert.Equal(t, []float64{1.5}, a.Estimate(nil))
}

// TestVouchForAnotherResultIsAMismatch: a well-formed vouch for another
// hash than this node's result stops the node (the runtime falls back);
// it is never done.
func TestVouchForAnotherResultIsAMismatch(t *testing.T) {
	a, b := acceptedPair(t)
	other := b.rHash ^ 1
	forged := b.message(0, b.plan[b.p1].Tag, []float64{float64(other >> 32), float64(other & 0xffffffff), 1})
	_, err := a.Step(forged, nil)
	require.NoError(t, err)
	assert.True(t, a.Mismatch())
	assert.False(t, a.Done())

	// A chosen result with other bits is a mismatch too.
	a, b = acceptedPair(t)
	chosen := b.message(0, 1<<20|flagChosen, []float64{7, 2})
	_, err = a.Step(chosen, nil)
	require.NoError(t, err)
	assert.True(t, a.Mismatch())
	assert.False(t, a.Done())
}

// TestVouchCountsAreChecked: a vouch for more nodes than the subcube holds
// is refused, with an error, and changes nothing.
func TestVouchCountsAreChecked(t *testing.T) {
	a, b := acceptedPair(t)
	for _, c := range []float64{2, -1, 0.5} {
		forged := b.message(0, b.plan[b.p1].Tag, []float64{float64(b.rHash >> 32), float64(b.rHash & 0xffffffff), c})
		_, err := a.Step(forged, nil)
		assert.ErrorIs(t, err, gossip.ErrForeignMessage, "count %v", c)
		assert.False(t, a.Done(), "count %v", c)
	}
}

// TestFlippedStateIsNoMismatch: a chosen result that arrives while this
// node's own result has a flipped bit (not yet repaired) is compared with
// the repaired state, not the flipped one: a flip is no disagreement. The
// chunked flip test found this (a false mismatch, which made the runtime
// fall back for nothing).
func TestFlippedStateIsNoMismatch(t *testing.T) {
	a, b := acceptedPair(t)
	chosen := b.message(0, rdb.TagFoldOut|flagChosen, b.y)
	for w := range a.Words() {
		*w.Ptr = math.Float64frombits(math.Float64bits(*w.Ptr) ^ 1<<45)
		break
	}
	_, err := a.Step(chosen, nil)
	require.NoError(t, err)
	assert.False(t, a.Mismatch())
	assert.True(t, a.Done())
	assert.Equal(t, []float64{1.5}, a.Estimate(nil))
	assert.Equal(t, 1, a.Counters().Repairs)
}

// TestLenTagIsNeverZero: a chunked exchange's length tag is never the zero
// that plain schedules carry, and fits its 20 bits. Before, the tag was the
// length modulo 2^20, so a vector of 2^20 words said what an uncut one does
// (helper-33; the payload lengths tell them apart only while N is small).
func TestLenTagIsNeverZero(t *testing.T) {
	for _, w := range []int{1, 2, 1<<20 - 2, 1<<20 - 1, 1 << 20, 1<<20 + 1, 1 << 21, 3 << 20, 1<<40 - 1} {
		tag := lenTag(w)
		assert.NotZero(t, tag, "w=%d", w)
		assert.LessOrEqual(t, tag, uint64(lenMask), "w=%d", w)
	}
}

// TestFoldedRankIsOfferedTheResult: a folded rank (N not a power of two)
// never accepts, refused or not, and keeps a result R offered to it for
// its runtime (Offered) before any refusal too: its runtime may have
// fallen back and keep the exchange going until it promises a ballot,
// and then needs R to vote for it. Vouches names the nodes that can
// accept: the hypercube's ranks, not the folded ones.
func TestFoldedRankIsOfferedTheResult(t *testing.T) {
	g, err := topology.Complete(3)
	require.NoError(t, err)
	m, err := New(gossip.Config{ID: 0, Overlay: g, Value: []float64{1}, Mode: gossip.Average, Epoch: 1})
	require.NoError(t, err)
	assert.False(t, m.Vouches(0), "member 0 folds into member 1")
	assert.True(t, m.Vouches(1))
	assert.True(t, m.Vouches(2))
	r := []float64{6, 3} // Σx, Σw of R
	m.takeResult(r, false)
	est, _, ok := m.Offered(nil, nil)
	require.True(t, ok, "kept without a refusal")
	assert.Equal(t, []float64{2}, est)
	assert.False(t, m.Accepted())
	assert.False(t, m.Done())
}
