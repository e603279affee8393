package transport

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"math"
	"slices"
	"sync"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// Wire format, version 2. All multi-byte fixed-width fields are little
// endian; "uvarint" is encoding/binary's unsigned varint in its shortest form.
//
//	offset  size       field
//	0       1          magic 0x9E (never the first byte of UTF-8 text or JSON)
//	1       1          version (2)
//	2       1          flags: bit 0 = an attachment follows the payload;
//	                   bit 1 = a MAC ends the message;
//	                   bit 2 = a handshake message of the transport (below);
//	                   bit 3 = a configuration notice (below);
//	                   other bits 0
//	3       8          group configuration hash (uint64)
//	11      8          sender incarnation (uint64; 0 only in hand-made messages)
//	19      8          receiver incarnation, as the sender believes it
//	                   (uint64; 0 = unknown, only in a probe)
//	27      1          kind (gossip.Kind, must be valid; 0 in a handshake message)
//	28      1..10      sequence number (uvarint)
//	        1..5       from (uvarint, ≤ 2^32-1)
//	        1..5       to (uvarint, ≤ 2^32-1)
//	        1..10      epoch (uvarint)
//	        1..10      tag (uvarint)
//	        1..4       payload length n (uvarint, ≤ MaxPayload)
//	        8n         payload: n float64 as IEEE 754 bits (uint64)
//	        1..4       if flags bit 0: attachment length a (uvarint, 1 ≤ a ≤ MaxAttach)
//	        a          the attachment (gossip.Message.Attach)
//	        16         if flags bit 1: the MAC, the first 16 bytes of
//	                   HMAC-SHA256(group key, every byte before it)
//
// The message must end exactly after the payload, the attachment, or the
// MAC. A typical Push-Sum message with one value component (payload x, w)
// between nodes below 128, with a sequence number below 128, takes 50
// bytes, 66 with a MAC (version 1 took 33 and 49: the incarnations and the
// sequence number cost 17 bytes).
//
// Handshake messages. Flags bit 2 marks the two messages the transports
// exchange among themselves, which are never delivered to
// [Endpoint.Messages]: a session probe ("I am incarnation X, tell me
// yours": receiver incarnation 0) and a probe answer ("I am incarnation Y":
// receiver incarnation X, the prober's). A handshake message has kind 0
// (gossip.KindInvalid, which no machine sends), epoch, tag and payload
// length 0 and no attachment; it carries from, to and a sequence number,
// and is signed like any other message. A handshake message from a node to
// itself with sequence number 0 is a claim message: a claim ("I am
// incarnation X of this node": receiver incarnation 0) or a reply to one
// (receiver incarnation X, from another incarnation of the node); see the
// package documentation, "Claims".
//
// Configuration notices. Flags bit 3 marks a message that crosses
// configurations: an endpoint that drops a message because its
// configuration hash is not the group's answers its sender with a notice
// carrying the receiver's own hash and, as its attachment, the receiver's
// configuration descriptor ([Group.Describe], at most [MaxNotice] bytes),
// so that the layer above can say which setting differs. A notice has kind
// 0, sequence number, epoch, tag and payload length 0, is bound to the
// incarnation of the sender of the dropped message (receiver incarnation),
// carries the notifier's own incarnation, and is signed like any other
// message; it is never delivered to [Endpoint.Messages] (see
// [Endpoint.Foreign]). The first notice from each peer is answered with
// one (so that both ends learn how the other is configured), later ones
// are not, and an endpoint sends at most one notice per peer per answer
// interval.
//
// Incarnations and sequence numbers. Every endpoint draws a random
// non-zero 64-bit incarnation when it is opened, so that a node reopened
// (a new run, a restarted process) is a new incarnation. Every message
// carries its sender's incarnation, the incarnation the sender believes its
// receiver has, and a sequence number that increases strictly, from 1, over
// the messages (application and handshake) the sending endpoint sends to
// that one receiving node. A receiver drops, and counts in Stats.Replayed,
// a message bound to any incarnation but its own, and a message whose
// sequence number it has already accepted from that sender incarnation or
// that is [ReplayWindow] or more below the highest one accepted (the
// sliding window of IPsec, RFC 4303 section 3.4.3, and DTLS, RFC 9147
// section 4.5.1). The package documentation ("Sessions") describes how
// endpoints learn each other's incarnations.
//
// Message authentication. With a group key ([Options.Key], [EncodeSigned], [DecodeSigned]) every
// message carries a MAC over all the bytes before it: the flags (so the MAC
// bit itself), the configuration hash, the incarnations, the sequence
// number, the message and its attachment. Changing any of them, or moving
// a MAC to another message, fails the check; in particular a message of
// another group cannot be rewritten to this group's configuration hash,
// even when the groups share a key (package aggregate hashes the group name
// into the configuration hash; the subject prefix is not covered), and a
// recorded message cannot be rebound to another incarnation or sequence
// number. The MAC is
// HMAC-SHA256 truncated to [MACSize] = 16 bytes: RFC 2104 (section 5) and
// NIST SP 800-107 allow truncation to half the hash output, and a 128-bit
// tag leaves a forger a 2^-128 chance per attempt, while the untruncated 32
// bytes would add another 16 bytes to every message. Receivers compare in
// constant time (hmac.Equal).
//
// What is protected against replay, and what is not. The MAC proves that a
// message was made by a holder of the key; the incarnations and sequence
// numbers under it say for which session. A recorded message published
// again (replayed) by anyone who can publish on the subject is dropped and
// counted in Stats.Replayed when
//   - it was recorded in an earlier run, or before the receiving endpoint
//     was last reopened: it is bound to another incarnation of the receiver;
//   - it is replayed into the same incarnation (a duplicate): its sequence
//     number was accepted already, or lies below the window;
//   - it comes from an incarnation its sender had before restarting, once
//     the receiver has heard from the new one (each endpoint remembers the
//     last 16 incarnations of every peer; a peer restarted more often than
//     that within one incarnation of the receiver could have its oldest
//     messages replayed once more).
//
// A replayed probe is answered (at most one answer per peer per 10 ms to
// the incarnation the receiver knows for it, and one to any other) but
// teaches the receiver nothing. Not protected: a message that is delayed,
// or held back by an attacker, and then delivered for the first time while
// the receiver is still the incarnation it names is accepted, as it would
// have been on time, unless the receiver has meanwhile heard from both
// the sender incarnation it names and a later one; the runtime's epoch
// check then decides. A genuine message delayed beyond the window (a
// message of the same sender to the same receiver [ReplayWindow] or more
// sequence numbers later arrived first) is dropped as a replay, which
// gossip tolerates as loss. Without a group key
// the same mechanism keeps runs and restarted nodes from mixing their
// messages by accident, but it protects nothing: anyone who can publish
// can forge any message, incarnations and sequence numbers included. The
// MAC does not encrypt: anyone who can subscribe reads the values. Use
// NATS permissions on the subject prefix, and TLS, for those.
//
// Wire version 2 covers signed and unsigned messages. It does not
// interoperate with version 1: each reads the other's messages as another
// version (Stats.Foreign), so every member of a group must run a build of
// the same wire version.
const (
	// WireVersion is the version of the wire format this package writes and
	// the only one it reads.
	WireVersion = 2

	// MaxPayload is the largest payload, in float64 words, a message may
	// carry: room for a vector of a million components (values and
	// extremes together, aggregate.MaxComponents), what the runtime adds
	// to it, and the certificate's estimate of it (package member ends its
	// gossip messages' payloads with it). Decode rejects longer payloads, and any length the bytes
	// present do not hold, before allocating anything. A message longer
	// than the network's frame limit travels in fragments (see
	// "Fragments" in fragment.go and the package documentation).
	MaxPayload = 1 << 22

	// MaxAttach is the largest attachment, in bytes: room for the
	// runtime's certificate, whose two sets of a group's members take at
	// most a bit per member each, in a group of up to 8 million members
	// (a larger group's certificate would not fit, and nothing refuses
	// such a group earlier).
	MaxAttach = 1 << 21

	// MaxEncoded bounds the length of an encoded message, in bytes.
	MaxEncoded = 128 + 8*MaxPayload + MaxAttach + MACSize

	// MACSize is the length of the message authentication code that ends a
	// signed message.
	MACSize = 16

	// MinKeyLen is the shortest group key accepted, in bytes (128 bits).
	MinKeyLen = 16

	// MaxNotice is the largest configuration descriptor a configuration
	// notice carries, in bytes ([Group.Describe]).
	MaxNotice = 1024

	flagAttach    = 0x01
	flagMAC       = 0x02
	flagHandshake = 0x04
	flagNotice    = 0x08
	knownFlags    = flagAttach | flagMAC | flagHandshake | flagNotice

	wireMagic = 0x9E
	// fixedHeader is the length of the fixed-width fields: magic, version,
	// flags, hash, the two incarnations, kind.
	fixedHeader = 28
	offKind     = 27
	// minMessage is the shortest valid message: the fixed header and six
	// one-byte varints (sequence number, from, to, epoch, tag, n = 0).
	minMessage = fixedHeader + 6
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

	// ErrForged reports a message that fails authentication under a group
	// key: it carries no MAC, or a MAC that does not verify. Transports
	// drop such messages and count them in Stats.Forged.
	ErrForged = errors.New("transport: message authentication failed")
)

// Header is what the wire carries besides the [gossip.Message] itself.
type Header struct {
	// ConfigHash identifies the group's configuration (algorithm, overlay,
	// size, parameters). Package aggregate computes it, so that nodes
	// configured differently never mix their messages: a transport drops and
	// counts any message whose hash is not its group's.
	ConfigHash uint64

	// Incarnation is the sending endpoint's incarnation: the random
	// non-zero number it drew when it was opened. Endpoints drop a message
	// with incarnation 0 (only hand-made messages have it).
	Incarnation uint64

	// PeerIncarnation is the incarnation the sender believes the receiving
	// endpoint has; 0 (unknown) only in a probe. A receiver drops any other
	// message that is not bound to its own incarnation (Stats.Replayed).
	PeerIncarnation uint64

	// Seq is the message's sequence number: it increases strictly, from 1,
	// over the messages one endpoint sends to one receiving node, so that
	// the receiver can drop duplicates ([ReplayWindow]). Claim messages
	// (below) have sequence number 0.
	Seq uint64

	// Handshake marks a handshake message of the transport (flags bit 2):
	// a session probe when PeerIncarnation is 0, else a probe answer; with
	// From equal to To and Seq 0, a claim of the node (PeerIncarnation 0)
	// or a reply to one (see the package documentation, "Claims"). Its
	// message carries only From and To (Kind is gossip.KindInvalid) and is
	// never delivered to [Endpoint.Messages].
	Handshake bool

	// Notice marks a configuration notice (flags bit 3): "I, node From,
	// run configuration ConfigHash, described by the attachment", sent to
	// the incarnation PeerIncarnation of node To after dropping a message
	// of another configuration from it, or to answer its first notice.
	// Its message carries From, To and an attachment of 1 to [MaxNotice]
	// bytes (Kind is gossip.KindInvalid, Seq 0), and it is never delivered
	// to [Endpoint.Messages]; a transport reports it through
	// [Endpoint.Foreign].
	Notice bool

	// Signed reports that the message ends with a MAC (flags bit 1). Decode
	// sets it without checking the MAC, which takes the key: [DecodeSigned]
	// checks it, and transports with a key drop what fails. Encode never
	// signs and refuses a Header with Signed set; [EncodeSigned] signs.
	Signed bool
}

// Encode appends the wire encoding of h and m, without a MAC, to dst and
// returns the extended slice. It fails, wrapping [ErrMalformed], for a
// message Decode would reject: an invalid kind, or a payload longer than
// [MaxPayload] (also wrapping [gossip.ErrLength]), a handshake message
// (h.Handshake) carrying anything but From and To, and for h.Signed (only
// [EncodeSigned] can sign).
func Encode(dst []byte, h Header, m gossip.Message) ([]byte, error) {
	if h.Signed {
		return dst, fmt.Errorf("%w: Header.Signed set: sign with EncodeSigned", ErrMalformed)
	}
	return encode(dst, h, m, 0)
}

// EncodeSigned appends the wire encoding of h and m followed by its MAC
// under key (see the package's wire format) and returns the extended slice;
// the message takes [EncodedLen] + [MACSize] bytes. h.Signed is ignored. It
// fails like [Encode], and, wrapping [gossip.ErrInvalidConfig], for a key
// shorter than [MinKeyLen]. Tests use it to craft messages of a group (to
// inject with [Memory.Inject] or a raw NATS publish on [Group.Subject]).
func EncodeSigned(dst []byte, h Header, m gossip.Message, key []byte) ([]byte, error) {
	mk, err := newMACKey(key)
	if err != nil {
		return dst, err
	}
	return mk.encode(dst, h, m)
}

// checkEncodable reports why h and m cannot be encoded, wrapping
// [ErrMalformed], or nil.
func checkEncodable(h Header, m gossip.Message) error {
	if h.Notice {
		switch {
		case h.Handshake:
			return fmt.Errorf("%w: a message cannot be both a handshake and a notice", ErrMalformed)
		case m.Kind != gossip.KindInvalid || h.Seq != 0 || m.Epoch != 0 || m.Tag != 0 || len(m.Payload) != 0:
			return fmt.Errorf("%w: a notice carries only from, to and a descriptor", ErrMalformed)
		case len(m.Attach) == 0 || len(m.Attach) > MaxNotice:
			return fmt.Errorf("%w: notice descriptor of %d bytes not in [1, %d]", ErrMalformed, len(m.Attach), MaxNotice)
		}
		return nil
	}
	if h.Handshake {
		if m.Kind != gossip.KindInvalid || m.Epoch != 0 || m.Tag != 0 || len(m.Payload) != 0 || len(m.Attach) != 0 {
			return fmt.Errorf("%w: a handshake message carries only from and to", ErrMalformed)
		}
		return nil
	}
	if !m.Kind.Valid() {
		return fmt.Errorf("%w: cannot encode kind %s", ErrMalformed, m.Kind)
	}
	if len(m.Payload) > MaxPayload {
		return fmt.Errorf("%w: %w: payload of %d words exceeds %d", ErrMalformed, gossip.ErrLength, len(m.Payload), MaxPayload)
	}
	if len(m.Attach) > MaxAttach {
		return fmt.Errorf("%w: %w: attachment of %d bytes exceeds %d", ErrMalformed, gossip.ErrLength, len(m.Attach), MaxAttach)
	}
	return nil
}

func encode(dst []byte, h Header, m gossip.Message, extra byte) ([]byte, error) {
	if err := checkEncodable(h, m); err != nil {
		return dst, err
	}
	flags := extra
	if len(m.Attach) > 0 {
		flags |= flagAttach
	}
	if h.Handshake {
		flags |= flagHandshake
	}
	if h.Notice {
		flags |= flagNotice
	}
	grow := EncodedLen(h, m)
	if flags&flagMAC != 0 {
		grow += MACSize
	}
	dst = slices.Grow(dst, grow)
	dst = append(dst, wireMagic, WireVersion, flags)
	dst = binary.LittleEndian.AppendUint64(dst, h.ConfigHash)
	dst = binary.LittleEndian.AppendUint64(dst, h.Incarnation)
	dst = binary.LittleEndian.AppendUint64(dst, h.PeerIncarnation)
	dst = append(dst, byte(m.Kind))
	dst = binary.AppendUvarint(dst, h.Seq)
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

// EncodedLen returns the number of bytes [Encode] writes for h and m
// ([EncodeSigned] adds [MACSize]).
func EncodedLen(h Header, m gossip.Message) int {
	return fixedHeader + uvarintLen(h.Seq) +
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
// and [EncodeSigned] produce (so encoding a decoded message gives back the
// same bytes: varints must be in shortest form, no unknown flag, no empty
// attachment, nothing may trail the payload, attachment or MAC), never
// panics, and allocates only the payload and attachment, after checking
// their lengths against [MaxPayload], [MaxAttach] and the bytes present.
// A signed message decodes with Header.Signed set, its MAC unchecked: use
// [DecodeSigned] to check it. Errors wrap [ErrVersion] for another wire
// version and [ErrMalformed] for anything else. A payload of length 0
// decodes as nil. On error the Header and Message are zero.
func Decode(b []byte) (Header, gossip.Message, error) {
	h, m, err := decode(b)
	if err != nil {
		return Header{}, gossip.Message{}, err
	}
	return h, m, nil
}

// DecodeSigned parses one message, like [Decode], and checks its MAC under
// key. A well-formed message without a MAC, or whose MAC does not verify,
// fails with an error wrapping [ErrForged]; a key shorter than [MinKeyLen]
// with one wrapping [gossip.ErrInvalidConfig]. On error the Header and
// Message are zero.
func DecodeSigned(b []byte, key []byte) (Header, gossip.Message, error) {
	mk, err := newMACKey(key)
	if err != nil {
		return Header{}, gossip.Message{}, err
	}
	h, m, err := decode(b)
	if err == nil {
		err = mk.verify(b, h)
	}
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
	if flags&^knownFlags != 0 {
		return h, m, fmt.Errorf("%w: unknown flags %#02x", ErrMalformed, flags)
	}
	if flags&flagMAC != 0 {
		if len(b) < minMessage+MACSize {
			return h, m, fmt.Errorf("%w: %d bytes, shorter than any signed message", ErrMalformed, len(b))
		}
		h.Signed = true
		b = b[:len(b)-MACSize] // the MAC is checked by DecodeSigned
	}
	h.ConfigHash = binary.LittleEndian.Uint64(b[3:11])
	h.Incarnation = binary.LittleEndian.Uint64(b[11:19])
	h.PeerIncarnation = binary.LittleEndian.Uint64(b[19:27])
	h.Handshake = flags&flagHandshake != 0
	h.Notice = flags&flagNotice != 0
	m.Kind = gossip.Kind(b[offKind])
	switch {
	case h.Handshake && h.Notice:
		return h, m, fmt.Errorf("%w: both a handshake and a notice", ErrMalformed)
	case (h.Handshake || h.Notice) && m.Kind != gossip.KindInvalid:
		return h, m, fmt.Errorf("%w: handshake or notice of kind %d, want 0", ErrMalformed, b[offKind])
	case !h.Handshake && !h.Notice && !m.Kind.Valid():
		return h, m, fmt.Errorf("%w: unknown kind %d", ErrMalformed, b[offKind])
	}
	r := reader{b: b[fixedHeader:]}
	h.Seq = r.uvarint("sequence number")
	from := r.uvarint("from")
	to := r.uvarint("to")
	m.Epoch = r.uvarint("epoch")
	m.Tag = r.uvarint("tag")
	n := r.uvarint("payload length")
	if r.err != nil {
		return h, m, r.err
	}
	if h.Handshake && (m.Epoch != 0 || m.Tag != 0 || n != 0 || flags&flagAttach != 0) {
		return h, m, fmt.Errorf("%w: a handshake message carries only from and to", ErrMalformed)
	}
	if h.Notice && (h.Seq != 0 || m.Epoch != 0 || m.Tag != 0 || n != 0 || flags&flagAttach == 0) {
		return h, m, fmt.Errorf("%w: a notice carries only from, to and a descriptor", ErrMalformed)
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
		case h.Notice && a > MaxNotice:
			return h, m, fmt.Errorf("%w: notice descriptor of %d bytes exceeds %d", ErrMalformed, a, MaxNotice)
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

// isTransportOnly reports whether raw looks like a message the transports
// exchange among themselves (a handshake message or a configuration
// notice) of this wire version, from its flags alone (nothing else is
// checked).
func isTransportOnly(raw []byte) bool {
	return len(raw) > 2 && raw[0] == wireMagic && raw[1] == WireVersion && raw[2]&(flagHandshake|flagNotice) != 0
}

// macKey computes and checks the MACs of one group key. Its HMAC states
// are pooled: hmac.New allocates, and an endpoint signs or checks every
// message.
type macKey struct {
	key  []byte
	pool sync.Pool // of *macState
}

// macState is one keyed HMAC and room for its output, so that neither
// signing nor checking allocates.
type macState struct {
	h   hash.Hash
	out [sha256.Size]byte
}

// newMACKey checks key and returns its MAC computer.
func newMACKey(key []byte) (*macKey, error) {
	if len(key) < MinKeyLen {
		return nil, fmt.Errorf("transport: %w: group key of %d bytes, want at least %d", gossip.ErrInvalidConfig, len(key), MinKeyLen)
	}
	k := &macKey{key: slices.Clone(key)}
	k.pool.New = func() any { return &macState{h: hmac.New(sha256.New, k.key)} }
	return k, nil
}

// mac returns the MAC of msg, valid until the state is put back.
func (k *macKey) mac(msg []byte) (*macState, []byte) {
	st := k.pool.Get().(*macState)
	st.h.Reset()
	st.h.Write(msg)
	return st, st.h.Sum(st.out[:0])[:MACSize]
}

// encode appends the signed encoding of h and m to dst.
func (k *macKey) encode(dst []byte, h Header, m gossip.Message) ([]byte, error) {
	start := len(dst)
	h.Signed = false
	dst, err := encode(dst, h, m, flagMAC)
	if err != nil {
		return dst, err
	}
	st, tag := k.mac(dst[start:])
	dst = append(dst, tag...)
	k.pool.Put(st)
	return dst, nil
}

// verify checks the MAC of b, which decoded to header h.
func (k *macKey) verify(b []byte, h Header) error {
	if !h.Signed {
		return fmt.Errorf("%w: the message carries no MAC", ErrForged)
	}
	body, tag := b[:len(b)-MACSize], b[len(b)-MACSize:]
	st, want := k.mac(body)
	ok := hmac.Equal(want, tag)
	k.pool.Put(st)
	if !ok {
		return fmt.Errorf("%w: the MAC does not verify under the group key", ErrForged)
	}
	return nil
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
