package aggregate

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/member"
)

// A state file gives back what was saved, bit for bit (a proposal's words
// include sets stored as float64 bits, NaN patterns among them); a missing
// file holds no votes; a truncated, padded, foreign or damaged one is
// refused.
func TestStateFileRoundTrip(t *testing.T) {
	f := stateFile{path: filepath.Join(t.TempDir(), "votes")}
	hs, err := f.load()
	require.NoError(t, err)
	assert.Equal(t, member.HardState{}, hs)
	for _, want := range []member.HardState{
		{Epoch: 3, Promised: 7<<32 | 2, Seen: 9<<32 | 1},
		{Epoch: 4, Promised: 1, Seen: 1, AcceptedBallot: 1, Accepted: []float64{0, 2.5, math.Float64frombits(0x7ff8_0000_dead_beef)}},
		{Epoch: 5, Accepted: []float64{}},
	} {
		require.NoError(t, f.save(want))
		got, err := f.load()
		require.NoError(t, err)
		assert.Equal(t, want.Epoch, got.Epoch)
		assert.Equal(t, want.Promised, got.Promised)
		assert.Equal(t, want.Seen, got.Seen)
		assert.Equal(t, want.AcceptedBallot, got.AcceptedBallot)
		require.Equal(t, want.Accepted == nil, got.Accepted == nil)
		require.Len(t, got.Accepted, len(want.Accepted))
		for i := range want.Accepted {
			assert.Equal(t, math.Float64bits(want.Accepted[i]), math.Float64bits(got.Accepted[i]))
		}
	}
	b, err := os.ReadFile(f.path)
	require.NoError(t, err)
	flipped := slices.Clone(b)
	flipped[9] ^= 1   // the epoch's low byte
	var padded []byte // eight words more, with a checksum that fits them
	padded = append(padded, b[:len(b)-4]...)
	padded = append(padded, 0, 0, 0, 0, 0, 0, 0, 0)
	padded = binary.LittleEndian.AppendUint32(padded, crc32.ChecksumIEEE(padded))
	for _, bad := range [][]byte{b[:len(b)-1], append(slices.Clone(b), 0, 0, 0, 0, 0, 0, 0, 0), b[:10], []byte("GRHS0001" + string(b[8:])), flipped, padded} {
		require.NoError(t, os.WriteFile(f.path, bad, 0o600))
		_, err := f.load()
		require.ErrorIs(t, err, errState, "%d bytes", len(bad))
	}
	entries, err := os.ReadDir(filepath.Dir(f.path))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file left behind")
}
