package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// Wire format, version 1. All multi-byte fixed-width fields are little
// endian; "uvarint" is encoding/binary's unsigned varint in its shortest form.
//
//	offset  size       field
//	0       1          magic 0x9E (never the first byte of UTF-8 text or JSON)
//	1       1          version (1)
//	2       1          flags: bit 0 = an attachment follows the payload; other bits 0
//	3       8          group configuration hash (uint64)
//	11      1          kind (gossip.Kind, must be valid)
//	12      1..5       from (uvarint, ≤ 2^32-1)
//	        1..5       to (uvarint, ≤ 2^32-1)
//	        1..10      epoch (uvarint)
//	        1..10      tag (uvarint)
//	        1..3       payload length n (uvarint, ≤ MaxPayload)
//	        8n         payload: n float64 as IEEE 754 bits (uint64)
//	        1..3       if flags bit 0: attachment length a (uvarint, 1 ≤ a ≤ MaxAttach)
//	        a          the attachment (gossip.Message.Attach)
//
// The message must end exactly after the payload, or the attachment. A typical Push-Sum message
// with one value component (payload x, w) between nodes below 128 takes 33
// bytes.
const (
	// WireVersion is the version of the wire format this package writes and
	// the only one it reads.
	WireVersion = 1

	// MaxPayload is the largest payload, in float64 words, a message may
	// carry. Decode rejects longer payloads before allocating anything.
	MaxPayload = 1 << 16

	// MaxAttach is the largest attachment, in bytes.
	MaxAttach = 1 << 16

	flagAttach = 0x01

	wireMagic   = 0x9E
	fixedHeader = 12 // magic, version, flags, hash, kind
	// minMessage is the shortest valid message: the fixed header and five
	// one-byte varints (from, to, epoch, tag, n = 0).
	minMessage = fixedHeader + 5
)

// Errors returned by [Decode], [Encode] and the transports. Errors wrap them,
// so test with errors.Is.
var (
	// ErrMalformed reports bytes that are not a message of this format, or a
	// message that cannot be encoded (invalid kind, payload too long).
	ErrMalformed = errors.New("transport: malformed message")

	// ErrVersion reports a message in a wire version this package does not
	// read. Transports count such messages as foreign.
	ErrVersion = errors.New("transport: unsupported wire version")
)

// Header is what the wire carries besides the [gossip.Message] itself.
type Header struct {
	// ConfigHash identifies the group's configuration (algorithm, overlay,
	// size, parameters). Package aggregate computes it, so that nodes
	// configured differently never mix their messages: a transport drops and
	// counts any message whose hash is not its group's.
	ConfigHash uint64
}

// Encode appends the wire encoding of h and m to dst and returns the extended
// slice. It fails, wrapping [ErrMalformed], for a message Decode would
// reject: an invalid kind, or a payload longer than [MaxPayload] (also
// wrapping [gossip.ErrLength]).
func Encode(dst []byte, h Header, m gossip.Message) ([]byte, error) {
	if !m.Kind.Valid() {
		return dst, fmt.Errorf("%w: cannot encode kind %s", ErrMalformed, m.Kind)
	}
	if len(m.Payload) > MaxPayload {
		return dst, fmt.Errorf("%w: %w: payload of %d words exceeds %d", ErrMalformed, gossip.ErrLength, len(m.Payload), MaxPayload)
	}
	if len(m.Attach) > MaxAttach {
		return dst, fmt.Errorf("%w: %w: attachment of %d bytes exceeds %d", ErrMalformed, gossip.ErrLength, len(m.Attach), MaxAttach)
	}
	var flags byte
	if len(m.Attach) > 0 {
		flags |= flagAttach
	}
	dst = slices.Grow(dst, EncodedLen(m))
	dst = append(dst, wireMagic, WireVersion, flags)
	dst = binary.LittleEndian.AppendUint64(dst, h.ConfigHash)
	dst = append(dst, byte(m.Kind))
	dst = binary.AppendUvarint(dst, uint64(m.From))
	dst = binary.AppendUvarint(dst, uint64(m.To))
	dst = binary.AppendUvarint(dst, m.Epoch)
	dst = binary.AppendUvarint(dst, m.Tag)
	dst = binary.AppendUvarint(dst, uint64(len(m.Payload)))
	for _, f := range m.Payload {
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(f))
	}
	if flags&flagAttach != 0 {
		dst = binary.AppendUvarint(dst, uint64(len(m.Attach)))
		dst = append(dst, m.Attach...)
	}
	return dst, nil
}

// EncodedLen returns the number of bytes [Encode] writes for m.
func EncodedLen(m gossip.Message) int {
	return fixedHeader +
		uvarintLen(uint64(m.From)) + uvarintLen(uint64(m.To)) +
		uvarintLen(m.Epoch) + uvarintLen(m.Tag) +
		uvarintLen(uint64(len(m.Payload))) + 8*len(m.Payload) + attachLen(m.Attach)
}

func attachLen(a []byte) int {
	if len(a) == 0 {
		return 0
	}
	return uvarintLen(uint64(len(a))) + len(a)
}

// Decode parses one message. It accepts exactly the byte strings [Encode]
// produces (so encoding a decoded message gives back the same bytes: varints
// must be in shortest form, no unknown flag, no empty attachment, nothing may
// trail the payload or attachment), never
// panics, and allocates only the payload, after checking its length against
// [MaxPayload] and the bytes present (and the attachment likewise). Errors wrap [ErrVersion] for another
// wire version and [ErrMalformed] for anything else. A payload of length 0
// decodes as nil. On error the Header and Message are zero.
func Decode(b []byte) (Header, gossip.Message, error) {
	h, m, err := decode(b)
	if err != nil {
		return Header{}, gossip.Message{}, err
	}
	return h, m, nil
}

func decode(b []byte) (Header, gossip.Message, error) {
	var h Header
	var m gossip.Message
	if len(b) < 2 || b[0] != wireMagic {
		return h, m, fmt.Errorf("%w: no magic byte", ErrMalformed)
	}
	if b[1] != WireVersion {
		return h, m, fmt.Errorf("%w: version %d (this build reads %d)", ErrVersion, b[1], WireVersion)
	}
	if len(b) < minMessage {
		return h, m, fmt.Errorf("%w: %d bytes, shorter than any message", ErrMalformed, len(b))
	}
	flags := b[2]
	if flags&^flagAttach != 0 {
		return h, m, fmt.Errorf("%w: unknown flags %#02x", ErrMalformed, flags)
	}
	h.ConfigHash = binary.LittleEndian.Uint64(b[3:11])
	m.Kind = gossip.Kind(b[11])
	if !m.Kind.Valid() {
		return h, m, fmt.Errorf("%w: unknown kind %d", ErrMalformed, b[11])
	}
	r := reader{b: b[fixedHeader:]}
	from := r.uvarint("from")
	to := r.uvarint("to")
	m.Epoch = r.uvarint("epoch")
	m.Tag = r.uvarint("tag")
	n := r.uvarint("payload length")
	if r.err != nil {
		return h, m, r.err
	}
	if from > math.MaxUint32 || to > math.MaxUint32 {
		return h, m, fmt.Errorf("%w: node id out of range (from %d, to %d)", ErrMalformed, from, to)
	}
	m.From, m.To = gossip.NodeID(from), gossip.NodeID(to)
	if n > MaxPayload {
		return h, m, fmt.Errorf("%w: payload length %d exceeds %d", ErrMalformed, n, MaxPayload)
	}
	if uint64(len(r.b)) < 8*n {
		return h, m, fmt.Errorf("%w: payload length %d needs %d bytes, have %d", ErrMalformed, n, 8*n, len(r.b))
	}
	body, rest := r.b[:8*n], r.b[8*n:]
	if flags&flagAttach != 0 {
		r.b = rest
		a := r.uvarint("attachment length")
		switch {
		case r.err != nil:
			return h, m, r.err
		case a == 0 || a > MaxAttach:
			return h, m, fmt.Errorf("%w: attachment length %d not in [1, %d]", ErrMalformed, a, MaxAttach)
		case uint64(len(r.b)) != a:
			return h, m, fmt.Errorf("%w: attachment of %d bytes, have %d", ErrMalformed, a, len(r.b))
		}
		m.Attach = append([]byte(nil), r.b...)
	} else if len(rest) != 0 {
		return h, m, fmt.Errorf("%w: %d bytes after the payload", ErrMalformed, len(rest))
	}
	if n > 0 {
		m.Payload = make([]float64, n)
		for i := range m.Payload {
			m.Payload[i] = math.Float64frombits(binary.LittleEndian.Uint64(body[8*i:]))
		}
	}
	return h, m, nil
}

// reader reads shortest-form uvarints and keeps the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint(field string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	switch {
	case n == 0:
		r.err = fmt.Errorf("%w: truncated %s", ErrMalformed, field)
		return 0
	case n < 0:
		r.err = fmt.Errorf("%w: %s overflows 64 bits", ErrMalformed, field)
		return 0
	case n != uvarintLen(v):
		r.err = fmt.Errorf("%w: %s is not in shortest form", ErrMalformed, field)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// uvarintLen is the length of v's shortest uvarint encoding.
func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
