package transport

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fragmentsOf splits raw into copies of its fragments.
func fragmentsOf(t testing.TB, f *fragmenter, from uint64, raw []byte, frame int) [][]byte {
	t.Helper()
	var out [][]byte
	require.NoError(t, f.split(from, raw, frame, func(b []byte) error {
		require.LessOrEqual(t, len(b), frame)
		out = append(out, bytes.Clone(b))
		return nil
	}))
	return out
}

func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestReassemblyInAnyOrder: fragments arriving in any order, with
// duplicates, make the original bytes exactly once.
func TestReassemblyInAnyOrder(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 2))
	f := newFragmenter()
	for _, n := range []int{257, 1000, 4096, 100_003} {
		raw := randomBytes(uint64(n), n)
		frags := fragmentsOf(t, f, 3, raw, 256)
		require.Len(t, frags, (n+256-fragOverhead-1)/(256-fragOverhead), "n=%d", n)
		frags = append(frags, frags[r.IntN(len(frags))]) // a duplicate
		r.Shuffle(len(frags), func(i, j int) { frags[i], frags[j] = frags[j], frags[i] })
		ra := newReassembler(1 << 20)
		wholes := 0
		for _, b := range frags {
			p, err := parseFragment(b)
			require.NoError(t, err)
			whole, evicted := ra.add(p)
			require.Zero(t, evicted)
			if whole != nil {
				wholes++
				require.Equal(t, raw, whole, "n=%d", n)
			}
		}
		assert.Equal(t, 1, wholes, "n=%d", n)
		// The duplicate that came after completion starts a new partial
		// message, or none if it came before.
		assert.LessOrEqual(t, ra.pending(), n)
	}
}

// TestFragmentCorruption: flipping any bit of a fragment makes it
// malformed (the checksum, or the header's consistency, catches it).
func TestFragmentCorruption(t *testing.T) {
	raw := randomBytes(1, 700)
	frags := fragmentsOf(t, newFragmenter(), 1, raw, 300)
	for _, b := range frags {
		for bit := range 8 * len(b) {
			c := bytes.Clone(b)
			c[bit/8] ^= 1 << (bit % 8)
			_, err := parseFragment(c)
			if c[0] != fragMagic {
				continue // no longer claims to be a fragment
			}
			require.Error(t, err, "bit %d", bit)
		}
	}
}

// TestReassemblyIsBounded: incomplete messages from many senders, and many
// from one, never hold more than the bound, and each one given up is
// counted.
func TestReassemblyIsBounded(t *testing.T) {
	const limit = 10_000
	ra := newReassembler(limit)
	f := newFragmenter()
	evicted, started := 0, 0
	for i := range 200 {
		from := uint64(i % 7)
		frags := fragmentsOf(t, f, from, randomBytes(uint64(i), 2000+i), 512)
		p, err := parseFragment(frags[0]) // the rest are lost
		require.NoError(t, err)
		whole, e := ra.add(p)
		require.Nil(t, whole)
		evicted += e
		started++
		require.LessOrEqual(t, ra.pending(), limit)
		require.LessOrEqual(t, len(ra.parts), 7*maxPartialPerPeer)
	}
	assert.Equal(t, started, evicted+len(ra.parts), "every message is held or counted")
	// One larger than the bound is refused and counted at once.
	frags := fragmentsOf(t, f, 9, randomBytes(9, limit+1), 4096)
	p, err := parseFragment(frags[1])
	require.NoError(t, err)
	whole, e := ra.add(p)
	assert.Nil(t, whole)
	assert.Equal(t, 1, e)
}

// FuzzFragment: no bytes make parsing or reassembly panic, allocate beyond
// the bound, or complete a message of another length than announced.
func FuzzFragment(f *testing.F) {
	fr := newFragmenter()
	require.NoError(f, fr.split(1, randomBytes(1, 600), 256, func(b []byte) error {
		f.Add(bytes.Clone(b))
		return nil
	}))
	f.Add([]byte{fragMagic, WireVersion, 0, 0, 0, 2, 2, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := parseFragment(b)
		if err != nil {
			return
		}
		ra := newReassembler(4096)
		whole, _ := ra.add(p)
		require.LessOrEqual(t, ra.pending(), 4096)
		if whole != nil {
			require.Len(t, whole, p.total)
		}
	})
}
