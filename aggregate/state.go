package aggregate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"github.com/gossipreduce/gossipreduce/member"
)

// stateFile keeps a member's votes (member.HardState) in a file across
// restarts (see Config.StateFile); lock, if not nil, holds it for this
// member (lockState).
type stateFile struct {
	path string
	lock *os.File
}

// release gives the file up for another member.
func (f *stateFile) release() {
	if f != nil && f.lock != nil {
		f.lock.Close()
		f.lock = nil
	}
}

// State file format: the magic, then little-endian uint64 words: epoch,
// promised, seen, accepted ballot, the accepted proposal's length plus one
// (0: none), the proposal's words as float64 bits; then the CRC-32 (IEEE)
// of all that, 4 bytes little-endian, so that a damaged file is refused
// rather than restored as votes the member never cast.
const stateMagic = "GRHS0002"

var errState = errors.New("malformed state file")

// ErrStateInUse reports a Config.StateFile that another member (of this
// process or another) holds.
var ErrStateInUse = errors.New("aggregate: state file in use")

// load reads the votes; a file that does not exist holds none.
func (f stateFile) load() (member.HardState, error) {
	b, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return member.HardState{}, nil
	}
	if err != nil {
		return member.HardState{}, fmt.Errorf("aggregate: state file: %w", err)
	}
	if len(b) < len(stateMagic)+5*8+4 || string(b[:len(stateMagic)]) != stateMagic {
		return member.HardState{}, fmt.Errorf("aggregate: state file %s: %w: header", f.path, errState)
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return member.HardState{}, fmt.Errorf("aggregate: state file %s: %w: checksum", f.path, errState)
	}
	w := body[len(stateMagic):]
	word := func(i int) uint64 { return binary.LittleEndian.Uint64(w[8*i:]) }
	hs := member.HardState{Epoch: word(0), Promised: word(1), Seen: word(2), AcceptedBallot: word(3)}
	k := word(4)
	if want := uint64(len(w))/8 - 5; len(w)%8 != 0 || (k != 0 && k-1 != want) || (k == 0 && want != 0) {
		return member.HardState{}, fmt.Errorf("aggregate: state file %s: %w: %d bytes for a proposal of %d words", f.path, errState, len(w), int64(k)-1)
	}
	if k > 0 {
		hs.Accepted = make([]float64, k-1)
		for i := range hs.Accepted {
			hs.Accepted[i] = math.Float64frombits(word(5 + i))
		}
	}
	return hs, nil
}

// save writes the votes durably: to a temporary file in the same
// directory, synced, renamed over the old one, and the directory synced.
func (f stateFile) save(hs member.HardState) error {
	b := []byte(stateMagic)
	for _, v := range []uint64{hs.Epoch, hs.Promised, hs.Seen, hs.AcceptedBallot} {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	k := uint64(0)
	if hs.Accepted != nil {
		k = uint64(len(hs.Accepted)) + 1
	}
	b = binary.LittleEndian.AppendUint64(b, k)
	for _, v := range hs.Accepted {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	dir := filepath.Dir(f.path)
	tmp, err := os.CreateTemp(dir, filepath.Base(f.path)+".*")
	if err != nil {
		return fmt.Errorf("aggregate: state file: %w", err)
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), f.path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("aggregate: state file: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return fmt.Errorf("aggregate: state file: syncing %s: %w", dir, err)
		}
	}
	return nil
}
