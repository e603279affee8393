package transport

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWindowModel checks the bitmap window against the obvious model (the
// set of every number accepted, and the highest): a sequence number is
// accepted iff it is not 0, was never accepted, and is less than
// ReplayWindow below the highest accepted. The streams mix small steps,
// reordering within and beyond the window, duplicates and jumps of every
// size across the word boundaries of the bitmap.
func TestWindowModel(t *testing.T) {
	const seed = 20240607
	rng := rand.New(rand.NewPCG(seed, 3))
	for stream := range 200 {
		var w window
		seen := map[uint64]bool{}
		var top uint64
		for i := range 2000 {
			var seq uint64
			switch r := rng.IntN(10); {
			case r < 4: // forwards, by 1 to 3
				seq = top + 1 + rng.Uint64N(3)
			case r < 7: // backwards, around the window's edge
				seq = top - min(top, rng.Uint64N(ReplayWindow+8))
			case r < 8: // a duplicate of something accepted
				seq = top - min(top, rng.Uint64N(4))
			case r < 9: // a jump across 1, 2 or more words
				seq = top + 1 + rng.Uint64N(3*ReplayWindow/2)
			default: // anywhere, including 0
				seq = rng.Uint64N(top + 2)
			}
			want := seq != 0 && !seen[seq] && (seq > top || top-seq < ReplayWindow)
			require.Equal(t, want, w.accept(seq), "seed %d, stream %d, step %d: seq %d, top %d", seed, stream, i, seq, top)
			if want {
				seen[seq] = true
				top = max(top, seq)
			}
		}
	}
}

func TestWindowEdges(t *testing.T) {
	var w window
	require.False(t, w.accept(0), "0 is never a sequence number")
	require.True(t, w.accept(1))
	require.False(t, w.accept(1), "duplicate")
	require.True(t, w.accept(1+ReplayWindow))
	require.False(t, w.accept(1), "exactly ReplayWindow below the top")
	require.True(t, w.accept(2), "ReplayWindow-1 below the top")
	require.True(t, w.accept(65), "bit 64: the second word")
	require.False(t, w.accept(65))
	require.True(t, w.accept(1+ReplayWindow+64), "a shift by one word")
	require.False(t, w.accept(65), "now beyond the window")
	require.False(t, w.accept(1+ReplayWindow), "moved from word 0 to word 1, still seen")
	require.True(t, w.accept(1+ReplayWindow+1))
}
