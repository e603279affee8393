package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"
	"sync/atomic"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// Fragments. A NATS server refuses a message longer than its max_payload
// (1 MiB unless configured otherwise; the server tells each client its
// limit when it connects), and a vector of a million float64 encodes to 8
// MiB. A transport therefore splits an encoded message longer than its
// frame limit (for NATS the connection's max_payload, read at every send
// so that a reconnection to a server with another limit is followed; for
// Memory [MemoryOptions.MaxFrame]) into fragments that each fit, and the
// receiving endpoint reassembles them into the original bytes before any
// other check. Fragment layout:
//
//	offset  size    field
//	0       1       magic 0x9D (not the magic of a message, 0x9E)
//	1       1       version (WireVersion)
//	2       1..5    from (uvarint): the sending node
//	        1..10   message id (uvarint): drawn at random for the sending
//	                endpoint's first fragmented message, then +1 for each
//	        1..3    index i (uvarint, i < count)
//	        1..3    count c (uvarint, 2 ≤ c ≤ maxFragments)
//	        1..4    total length t of the message (uvarint, ≤ MaxEncoded)
//	        s       bytes [i·z, min(t, (i+1)·z)) of the message, z = ⌈t/c⌉
//	        4       CRC-32C (Castagnoli) of every byte before it
//
// The checksum makes a fragment corrupted in flight malformed (dropped
// and counted), so the message it belongs to never completes: to the
// layers above, a lost or corrupted fragment is a lost message, which
// gossip repairs as it repairs any loss. A fragment is not signed; the
// reassembled message is, and is checked like any other (a forged
// fragment makes the message fail its MAC, or its decoding). Fragments do
// not survive replay checks any better than messages do: the message they
// make carries its sequence number.
//
// Reassembly memory is bounded: an endpoint keeps at most
// [Options.Reassembly] bytes of incomplete messages, and at most
// maxPartialPerPeer of them per sender; when a new message would exceed
// either, the oldest incomplete one goes, counted in Stats.Incomplete.
const (
	fragMagic = 0x9D

	// maxFragments bounds the fragments of one message.
	maxFragments = 1 << 16

	// fragOverhead bounds the bytes a fragment adds to its slice of the
	// message: magic, version, the five varints and the checksum.
	fragOverhead = 2 + 5 + 10 + 3 + 3 + 4 + 4

	// minFrame is the smallest frame limit fragmentation works with.
	minFrame = 256

	// defaultFrame is the NATS server's default max_payload.
	defaultFrame = 1 << 20

	// maxPartialPerPeer bounds the incomplete messages kept per sender.
	maxPartialPerPeer = 2

	// DefaultReassembly is the bytes of incomplete fragmented messages an
	// endpoint keeps when [Options.Reassembly] is zero: four of the
	// largest messages a million-component vector makes (its values and
	// the runtime's certificate, about 16 MiB).
	DefaultReassembly = 64 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errFragment reports a malformed fragment.
var errFragment = errors.New("malformed fragment")

// fragmenter numbers the fragmented messages of one endpoint.
type fragmenter struct {
	next atomic.Uint64 // id of the next fragmented message
}

func newFragmenter() *fragmenter {
	f := &fragmenter{}
	f.next.Store(newIncarnation()) // random, so a restarted sender does not reuse ids
	return f
}

// split calls send with each fragment of raw, a message from node from,
// none longer than frame bytes. The slice send gets is reused for the next
// fragment: send must not keep it. raw must be longer than frame.
func (f *fragmenter) split(from uint64, raw []byte, frame int, send func([]byte) error) error {
	if frame < minFrame {
		return fmt.Errorf("transport: %w: a frame limit of %d bytes is below the %d fragments need", gossip.ErrInvalidConfig, frame, minFrame)
	}
	room := frame - fragOverhead
	count := (len(raw) + room - 1) / room
	if count > maxFragments {
		return fmt.Errorf("%w: a message of %d bytes needs %d fragments of %d bytes, more than %d", ErrMalformed, len(raw), count, frame, maxFragments)
	}
	size := chunkSize(len(raw), count)
	id := f.next.Add(1) - 1
	buf := make([]byte, 0, frame)
	for i := range count {
		chunk := raw[i*size : min(len(raw), (i+1)*size)]
		buf = append(buf[:0], fragMagic, WireVersion)
		buf = binary.AppendUvarint(buf, from)
		buf = binary.AppendUvarint(buf, id)
		buf = binary.AppendUvarint(buf, uint64(i))
		buf = binary.AppendUvarint(buf, uint64(count))
		buf = binary.AppendUvarint(buf, uint64(len(raw)))
		buf = append(buf, chunk...)
		buf = binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli))
		if err := send(buf); err != nil {
			return err
		}
	}
	return nil
}

// chunkSize is the bytes of a total-byte message each of count fragments
// carries (the last may carry fewer).
func chunkSize(total, count int) int { return (total + count - 1) / count }

// isFragment reports whether raw is (or claims to be) a fragment.
func isFragment(raw []byte) bool { return len(raw) > 0 && raw[0] == fragMagic }

// firstFragment reports whether raw is a fragment with index 0: the one a
// transport counts as the message when it counts messages by their bytes.
func firstFragment(raw []byte) bool {
	f, err := parseFragment(raw)
	return err == nil && f.index == 0
}

// fragment is one parsed fragment.
type fragment struct {
	from, id            uint64
	index, count, total int
	chunk               []byte
}

// parseFragment checks and parses one fragment.
func parseFragment(raw []byte) (fragment, error) {
	var f fragment
	if len(raw) < 2+5+4 || raw[0] != fragMagic {
		return f, fmt.Errorf("%w: %d bytes", errFragment, len(raw))
	}
	if raw[1] != WireVersion {
		return f, fmt.Errorf("%w: fragment of version %d (this build reads %d)", ErrVersion, raw[1], WireVersion)
	}
	body := raw[:len(raw)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(raw[len(raw)-4:]) {
		return f, fmt.Errorf("%w: checksum", errFragment)
	}
	var v [5]uint64
	b := body[2:]
	for i := range v {
		x, w := binary.Uvarint(b)
		if w <= 0 {
			return f, fmt.Errorf("%w: header field %d", errFragment, i)
		}
		v[i], b = x, b[w:]
	}
	f.from, f.id = v[0], v[1]
	if v[3] < 2 || v[3] > maxFragments || v[2] >= v[3] || v[4] > MaxEncoded || v[4] < v[3] {
		return f, fmt.Errorf("%w: fragment %d of %d of a %d-byte message", errFragment, v[2], v[3], v[4])
	}
	f.index, f.count, f.total = int(v[2]), int(v[3]), int(v[4])
	size := chunkSize(f.total, f.count)
	want := min(f.total, (f.index+1)*size) - f.index*size
	if want <= 0 || len(b) != want {
		return f, fmt.Errorf("%w: fragment %d of %d carries %d bytes, want %d", errFragment, f.index, f.count, len(b), max(want, 0))
	}
	f.chunk = b
	return f, nil
}

// reassembler holds one endpoint's incomplete fragmented messages.
type reassembler struct {
	limit int

	mu    sync.Mutex
	parts map[partKey]*partial
	bytes int    // sum of the parts' totals
	clock uint64 // orders the parts by arrival of their first fragment
}

type partKey struct{ from, id uint64 }

type partial struct {
	buf     []byte // the message, filled in as fragments arrive
	have    []bool // which fragments arrived; len is their count
	missing int    // fragments still to come
	born    uint64 // r.clock when the first one arrived
}

func newReassembler(limit int) *reassembler {
	return &reassembler{limit: limit, parts: map[partKey]*partial{}}
}

// add takes one fragment. It returns the whole message when f completes
// it, and the number of incomplete messages it gave up to make room.
func (r *reassembler) add(f fragment) (whole []byte, evicted int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := partKey{f.from, f.id}
	p := r.parts[k]
	if p != nil && (len(p.buf) != f.total || len(p.have) != f.count) {
		r.drop(k) // the same id for another message: keep the newer
		evicted++
		p = nil
	}
	if p == nil {
		if f.total > r.limit {
			return nil, evicted + 1
		}
		evicted += r.makeRoom(f.from, f.total)
		r.clock++
		p = &partial{buf: make([]byte, f.total), have: make([]bool, f.count), missing: f.count, born: r.clock}
		r.parts[k] = p
		r.bytes += f.total
	}
	if p.have[f.index] {
		return nil, evicted // a duplicate fragment
	}
	size := chunkSize(f.total, f.count)
	copy(p.buf[f.index*size:], f.chunk)
	p.have[f.index] = true
	p.missing--
	if p.missing > 0 {
		return nil, evicted
	}
	delete(r.parts, k)
	r.bytes -= f.total
	return p.buf, evicted
}

// makeRoom gives up the oldest incomplete messages until a new one of n
// bytes from sender from fits both bounds, and returns how many went.
func (r *reassembler) makeRoom(from uint64, n int) int {
	gone := 0
	for {
		var oldest, oldestPeer partKey
		var oldestBorn, peerBorn uint64
		perPeer := 0
		for k, p := range r.parts {
			if oldestBorn == 0 || p.born < oldestBorn {
				oldest, oldestBorn = k, p.born
			}
			if k.from == from {
				perPeer++
				if peerBorn == 0 || p.born < peerBorn {
					oldestPeer, peerBorn = k, p.born
				}
			}
		}
		switch {
		case perPeer >= maxPartialPerPeer:
			r.drop(oldestPeer)
		case r.bytes+n > r.limit && oldestBorn != 0:
			r.drop(oldest)
		default:
			return gone
		}
		gone++
	}
}

func (r *reassembler) drop(k partKey) {
	r.bytes -= len(r.parts[k].buf)
	delete(r.parts, k)
}

// pending returns the bytes of incomplete messages held.
func (r *reassembler) pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bytes
}
