package transport_test

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
)

// kinds lists every valid kind, read off gossip.Kind.Valid.
func kinds() []gossip.Kind {
	var ks []gossip.Kind
	for k := range gossip.Kind(255) {
		if k.Valid() {
			ks = append(ks, k)
		}
	}
	return ks
}

// randomMessage draws a header and message whose fields span their whole
// ranges and whose payload words are arbitrary bit patterns (NaNs with
// payloads, infinities, subnormals, negative zero all occur). One in eight
// is a handshake message, which carries only From and To, and one in
// sixteen a configuration notice, which carries only From, To and a
// descriptor.
func randomMessage(rng *rand.Rand) (transport.Header, gossip.Message) {
	ks := kinds()
	wide := func() uint64 { return rng.Uint64() >> rng.UintN(64) } // every varint length
	h := transport.Header{ConfigHash: rng.Uint64(), Incarnation: rng.Uint64(), PeerIncarnation: rng.Uint64(), Seq: wide()}
	if rng.IntN(16) == 0 {
		h.Notice, h.Seq = true, 0
		d := make([]byte, 1+rng.IntN(transport.MaxNotice))
		for i := range d {
			d[i] = byte(rng.Uint32())
		}
		return h, gossip.Message{From: gossip.NodeID(wide()), To: gossip.NodeID(wide()), Attach: d}
	}
	if rng.IntN(8) == 0 {
		h.Handshake = true
		if rng.IntN(2) == 0 {
			h.PeerIncarnation = 0 // a probe
		}
		return h, gossip.Message{From: gossip.NodeID(wide()), To: gossip.NodeID(wide())}
	}
	m := gossip.Message{
		From:  gossip.NodeID(wide()),
		To:    gossip.NodeID(wide()),
		Kind:  ks[rng.IntN(len(ks))],
		Epoch: wide(),
		Tag:   wide(),
	}
	if n := rng.IntN(20); n > 0 {
		m.Payload = make([]float64, n)
		for i := range m.Payload {
			m.Payload[i] = math.Float64frombits(rng.Uint64())
		}
	}
	if a := rng.IntN(40) - 20; a > 0 { // half the messages carry an attachment
		m.Attach = make([]byte, a)
		for i := range m.Attach {
			m.Attach[i] = byte(rng.Uint32())
		}
	}
	return h, m
}

// requireSameMessage compares messages bit for bit (NaN != NaN for ==).
func requireSameMessage(t testing.TB, want, got gossip.Message, msgAndArgs ...any) {
	t.Helper()
	wantBits, gotBits := payloadBits(want.Payload), payloadBits(got.Payload)
	want.Payload, got.Payload = nil, nil
	require.Equal(t, want, got, msgAndArgs...)
	require.Equal(t, wantBits, gotBits, msgAndArgs...)
}

func payloadBits(p []float64) []uint64 {
	if len(p) == 0 {
		return nil
	}
	b := make([]uint64, len(p))
	for i, f := range p {
		b[i] = math.Float64bits(f)
	}
	return b
}

func TestWireRoundTrip(t *testing.T) {
	const seed = 20240605
	rng := rand.New(rand.NewPCG(seed, 1))
	n := 5000
	if testing.Short() {
		n = 500
	}
	for i := range n {
		h, m := randomMessage(rng)
		b, err := transport.Encode(nil, h, m)
		require.NoError(t, err)
		require.Len(t, b, transport.EncodedLen(h, m), "seed %d, message %d", seed, i)
		h2, m2, err := transport.Decode(b)
		require.NoError(t, err, "seed %d, message %d: %v", seed, i, m)
		require.Equal(t, h, h2)
		requireSameMessage(t, m, m2, "seed %d, message %d", seed, i)
	}
}

func TestEncodeAppends(t *testing.T) {
	m := gossip.Message{From: 1, To: 2, Kind: gossip.KindPush, Payload: []float64{1, 2}}
	prefix := []byte("xyz")
	b, err := transport.Encode(prefix, transport.Header{ConfigHash: 9}, m)
	require.NoError(t, err)
	require.Equal(t, "xyz", string(b[:3]))
	_, got, err := transport.Decode(b[3:])
	require.NoError(t, err)
	requireSameMessage(t, m, got)
}

// TestWireLayout pins the byte layout documented in wire.go, byte by byte,
// so that a change to the format cannot go unnoticed (other processes, and
// other versions of this program, must read it).
func TestWireLayout(t *testing.T) {
	h := transport.Header{ConfigHash: 0x0102030405060708, Incarnation: 0x1112131415161718, PeerIncarnation: 0x2122232425262728, Seq: 200}
	m := gossip.Message{From: 3, To: 300, Kind: gossip.KindFlow, Epoch: 1, Tag: 0, Payload: []float64{1, math.Copysign(0, -1)}}
	b, err := transport.Encode(nil, h, m)
	require.NoError(t, err)
	want := []byte{
		0x9E, 2, 0, // magic, version, flags
		8, 7, 6, 5, 4, 3, 2, 1, // config hash, little endian
		0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11, // sender incarnation
		0x28, 0x27, 0x26, 0x25, 0x24, 0x23, 0x22, 0x21, // receiver incarnation
		byte(gossip.KindFlow),
		0xC8, 0x01, // sequence number 200 = 0b1_1001000
		3,          // from
		0xAC, 0x02, // to = 300 = 0b10_0101100: low 7 bits with continuation, then 2
		1,                            // epoch
		0,                            // tag
		2,                            // payload length
		0, 0, 0, 0, 0, 0, 0xF0, 0x3F, // 1.0 = 0x3FF0000000000000
		0, 0, 0, 0, 0, 0, 0, 0x80, // -0.0 = 0x8000000000000000
	}
	require.Equal(t, want, b)
	require.Len(t, b, transport.EncodedLen(h, m))
	// Push-Sum with one component (payload x, w) is 50 bytes, as documented:
	// 28 fixed, six one-byte varints, two words.
	b, err = transport.Encode(nil, transport.Header{Seq: 1}, gossip.Message{Kind: gossip.KindPush, Payload: []float64{1, 1}})
	require.NoError(t, err)
	assert.Len(t, b, 28+6+2*8)

	// A probe answer: flags bit 2, kind 0, epoch, tag and length 0.
	h = transport.Header{ConfigHash: 5, Incarnation: 6, PeerIncarnation: 7, Seq: 8, Handshake: true}
	b, err = transport.Encode(nil, h, gossip.Message{From: 1, To: 2})
	require.NoError(t, err)
	require.Equal(t, []byte{
		0x9E, 2, 4,
		5, 0, 0, 0, 0, 0, 0, 0,
		6, 0, 0, 0, 0, 0, 0, 0,
		7, 0, 0, 0, 0, 0, 0, 0,
		0,                // kind
		8, 1, 2, 0, 0, 0, // seq, from, to, epoch, tag, n
	}, b)
	got, m2, err := transport.Decode(b)
	require.NoError(t, err)
	assert.Equal(t, h, got)
	assert.Equal(t, gossip.Message{From: 1, To: 2}, m2)
}

func TestEncodeRejects(t *testing.T) {
	for _, k := range []gossip.Kind{gossip.KindInvalid, 200} {
		_, err := transport.Encode(nil, transport.Header{}, gossip.Message{Kind: k})
		require.ErrorIs(t, err, transport.ErrMalformed, "kind %d", k)
	}
	_, err := transport.Encode(nil, transport.Header{}, gossip.Message{Kind: gossip.KindPush, Payload: make([]float64, transport.MaxPayload+1)})
	require.ErrorIs(t, err, transport.ErrMalformed)
	require.ErrorIs(t, err, gossip.ErrLength)
	_, err = transport.Encode(nil, transport.Header{}, gossip.Message{Kind: gossip.KindPush, Payload: make([]float64, transport.MaxPayload)})
	require.NoError(t, err, "MaxPayload words are allowed")

	// A handshake message carries only From and To.
	hs := transport.Header{Handshake: true}
	for name, m := range map[string]gossip.Message{
		"kind":    {Kind: gossip.KindPush},
		"epoch":   {Epoch: 1},
		"tag":     {Tag: 1},
		"payload": {Payload: []float64{1}},
		"attach":  {Attach: []byte{1}},
	} {
		_, err := transport.Encode(nil, hs, m)
		require.ErrorIs(t, err, transport.ErrMalformed, name)
	}
	_, err = transport.Encode(nil, hs, gossip.Message{From: 1, To: 2})
	require.NoError(t, err)

	// A notice carries only From, To and a descriptor of 1 to MaxNotice
	// bytes, and is not a handshake.
	nh := transport.Header{Notice: true}
	d := []byte("nodes=8")
	for name, c := range map[string]struct {
		h transport.Header
		m gossip.Message
	}{
		"kind":          {nh, gossip.Message{Kind: gossip.KindPush, Attach: d}},
		"seq":           {transport.Header{Notice: true, Seq: 1}, gossip.Message{Attach: d}},
		"epoch":         {nh, gossip.Message{Epoch: 1, Attach: d}},
		"tag":           {nh, gossip.Message{Tag: 1, Attach: d}},
		"payload":       {nh, gossip.Message{Payload: []float64{1}, Attach: d}},
		"no descriptor": {nh, gossip.Message{}},
		"long":          {nh, gossip.Message{Attach: make([]byte, transport.MaxNotice+1)}},
		"handshake":     {transport.Header{Notice: true, Handshake: true}, gossip.Message{Attach: d}},
	} {
		_, err := transport.Encode(nil, c.h, c.m)
		require.ErrorIs(t, err, transport.ErrMalformed, name)
	}
	_, err = transport.Encode(nil, nh, gossip.Message{From: 1, To: 2, Attach: make([]byte, transport.MaxNotice)})
	require.NoError(t, err)
}

// valid returns the encoding of a small message, with n payload words.
func valid(t testing.TB, n int) []byte {
	m := gossip.Message{From: 5, To: 6, Kind: gossip.KindCheckedFlow, Epoch: 7, Tag: 8, Payload: make([]float64, n)}
	for i := range m.Payload {
		m.Payload[i] = float64(i) + 0.5
	}
	b, err := transport.Encode(nil, transport.Header{ConfigHash: 42, Incarnation: 1, PeerIncarnation: 2, Seq: 3}, m)
	require.NoError(t, err)
	return b
}

// offKind is the offset of the kind byte, the last of the fixed header.
const offKind = 27

// withVarints builds a message with the fixed header of a Push message,
// followed by the given raw varint bytes (sequence number first) and
// payload bytes.
func withVarints(tail ...byte) []byte {
	b := []byte{0x9E, 2, 0, 42, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, byte(gossip.KindPush)}
	return append(b, tail...)
}

// notice builds a configuration notice (flags bits 3 and 0, kind 0) with
// the given raw bytes after the fixed header.
func notice(tail ...byte) []byte {
	b := withVarints(tail...)
	b[2] = 8 | 1
	b[offKind] = 0
	return b
}

// handshake builds a handshake message (flags bit 2, kind 0) with the
// given raw varint bytes after the fixed header.
func handshake(tail ...byte) []byte {
	b := withVarints(tail...)
	b[2] = 4
	b[offKind] = 0
	return b
}

func TestDecodeRejects(t *testing.T) {
	good := valid(t, 2)
	flip := func(i int, v byte) []byte { b := append([]byte(nil), good...); b[i] = v; return b }
	hsAttach := handshake(1, 1, 1, 0, 0, 0, 1, 'a')
	hsAttach[2] |= 1 // flags: handshake and attachment
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, transport.ErrMalformed},
		{"text", []byte("hello"), transport.ErrMalformed},
		{"json", []byte(`{"from":1}`), transport.ErrMalformed},
		{"magic only", []byte{0x9E}, transport.ErrMalformed},
		{"version 0", flip(1, 0), transport.ErrVersion},
		{"version 1", flip(1, 1), transport.ErrVersion},
		{"version 3", flip(1, 3), transport.ErrVersion},
		{"flags", flip(2, 1), transport.ErrMalformed},
		{"flag 4", flip(2, 16), transport.ErrMalformed},
		{"notice of kind push", flip(2, 8|1), transport.ErrMalformed},
		{"notice and handshake", func() []byte { b := notice(0, 1, 1, 0, 0, 0, 1, 'a'); b[2] |= 4; return b }(), transport.ErrMalformed},
		{"notice with seq", notice(1, 1, 1, 0, 0, 0, 1, 'a'), transport.ErrMalformed},
		{"notice with epoch", notice(0, 1, 1, 1, 0, 0, 1, 'a'), transport.ErrMalformed},
		{"notice with payload", notice(0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 'a'), transport.ErrMalformed},
		{"notice without descriptor", func() []byte { b := notice(0, 1, 1, 0, 0, 0); b[2] = 8; return b }(), transport.ErrMalformed},
		{"notice descriptor too long", append(notice(0, 1, 1, 0, 0, 0, 0x81, 0x08), make([]byte, transport.MaxNotice+1)...), transport.ErrMalformed},
		{"kind 0", flip(offKind, 0), transport.ErrMalformed},
		{"kind unknown", flip(offKind, 99), transport.ErrMalformed},
		{"trailing byte", append(append([]byte(nil), good...), 0), transport.ErrMalformed},
		{"seq not shortest", withVarints(0x81, 0x00, 1, 1, 0, 0, 0), transport.ErrMalformed},
		{"seq overflows", withVarints(0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 1, 1, 0, 0, 0), transport.ErrMalformed},
		{"from not shortest", withVarints(1, 0x81, 0x00, 1, 0, 0, 0), transport.ErrMalformed},
		{"to beyond uint32", withVarints(1, 1, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0, 0), transport.ErrMalformed},
		{"epoch overflows", withVarints(1, 1, 1, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 0, 0), transport.ErrMalformed},
		{"length beyond max", withVarints(1, 1, 1, 0, 0, 0x81, 0x80, 0x04), transport.ErrMalformed},
		{"length beyond bytes", withVarints(1, 1, 1, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0), transport.ErrMalformed},
		{"length below bytes", withVarints(1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), transport.ErrMalformed},
		{"handshake of kind push", flip(2, 4), transport.ErrMalformed},
		{"handshake with epoch", handshake(1, 1, 1, 1, 0, 0), transport.ErrMalformed},
		{"handshake with tag", handshake(1, 1, 1, 0, 1, 0), transport.ErrMalformed},
		{"handshake with payload", handshake(1, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0), transport.ErrMalformed},
		{"handshake with attachment", hsAttach, transport.ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := transport.Decode(c.b)
			require.ErrorIs(t, err, c.want)
		})
	}
	// The well-formed handshake message and notice these were made from
	// decode.
	_, _, err := transport.Decode(handshake(1, 1, 1, 0, 0, 0))
	require.NoError(t, err)
	h, m, err := transport.Decode(notice(0, 1, 1, 0, 0, 0, 1, 'a'))
	require.NoError(t, err)
	require.True(t, h.Notice)
	require.Equal(t, []byte("a"), m.Attach)
	// Every strict prefix of a valid message is malformed (or, for the
	// one-byte prefix, has no version yet).
	for i := range len(good) {
		_, _, err := transport.Decode(good[:i])
		require.ErrorIs(t, err, transport.ErrMalformed, "prefix of %d bytes", i)
	}
}

// TestDecodeHostileLength checks that a message announcing the largest
// payload but carrying none is rejected before the payload is allocated.
func TestDecodeHostileLength(t *testing.T) {
	b := binary.AppendUvarint(withVarints(1, 1, 1, 0, 0), transport.MaxPayload)
	const calls = 100
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range calls {
		_, _, err := transport.Decode(b)
		require.ErrorIs(t, err, transport.ErrMalformed)
	}
	runtime.ReadMemStats(&after)
	// One honoured allocation would be 8·MaxPayload bytes (32 MiB); the error
	// values take a few hundred bytes per call.
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(calls*4096))
}

// TestBitFlipsSurvive flips every bit of the payload on the wire, as an
// in-flight SDC experiment does, and checks the receiver sees exactly that
// flip: the format neither normalises NaNs nor rejects odd bit patterns.
func TestBitFlipsSurvive(t *testing.T) {
	good := valid(t, 3)
	_, orig, err := transport.Decode(good)
	require.NoError(t, err)
	start := len(good) - 8*len(orig.Payload)
	for i := start; i < len(good); i++ {
		for bit := range 8 {
			b := append([]byte(nil), good...)
			b[i] ^= 1 << bit
			_, m, err := transport.Decode(b)
			require.NoError(t, err)
			word := (i - start) / 8
			flipped := 8*((i-start)%8) + bit
			for j, f := range m.Payload {
				want := math.Float64bits(orig.Payload[j])
				if j == word {
					want ^= 1 << flipped
				}
				require.Equal(t, want, math.Float64bits(f), "byte %d bit %d, word %d", i, bit, j)
			}
		}
	}
}

// FuzzDecode checks that Decode never panics, fails only with its own
// sentinels, and accepts only canonical encodings: whatever decodes
// re-encodes to exactly the same bytes.
func FuzzDecode(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 16 {
		h, m := randomMessage(rng)
		b, err := transport.Encode(nil, h, m)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add(valid(f, 0))
	f.Add([]byte{})
	f.Add([]byte{0x9E, 1})
	f.Add([]byte{0x9E, 2})
	f.Add(binary.AppendUvarint(withVarints(1, 1, 1, 0, 0), transport.MaxPayload))
	f.Add(handshake(1, 1, 1, 0, 0, 0))
	for range 8 {
		h, m := randomMessage(rng)
		b, err := transport.EncodeSigned(nil, h, m, fuzzKey)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, m, err := transport.Decode(b)
		hs, ms, errSigned := transport.DecodeSigned(b, fuzzKey)
		if err != nil {
			require.True(t, errors.Is(err, transport.ErrMalformed) || errors.Is(err, transport.ErrVersion), "unexpected error %v", err)
			require.Equal(t, err.Error(), errSigned.Error(), "DecodeSigned fails like Decode on what Decode rejects")
			return
		}
		require.LessOrEqual(t, len(m.Payload), transport.MaxPayload)
		if !h.Signed {
			again, err := transport.Encode(nil, h, m)
			require.NoError(t, err)
			require.Equal(t, b, again)
			require.ErrorIs(t, errSigned, transport.ErrForged, "no MAC")
			return
		}
		// Signed: the bytes before the MAC are the canonical unsigned
		// encoding with flags bit 1 set.
		unsigned := h
		unsigned.Signed = false
		again, err := transport.Encode(nil, unsigned, m)
		require.NoError(t, err)
		body := append([]byte(nil), b[:len(b)-transport.MACSize]...)
		require.Equal(t, byte(2), body[2]&2)
		body[2] &^= 2
		require.Equal(t, again, body)
		if errSigned != nil {
			require.ErrorIs(t, errSigned, transport.ErrForged)
			return
		}
		// It verifies: then it is exactly what EncodeSigned writes.
		require.Equal(t, h, hs)
		requireSameMessage(t, m, ms)
		resigned, err := transport.EncodeSigned(nil, hs, ms, fuzzKey)
		require.NoError(t, err)
		require.Equal(t, b, resigned)
	})
}

func TestAttachment(t *testing.T) {
	m := gossip.Message{From: 1, To: 2, Kind: gossip.KindPush, Payload: []float64{1, 2}, Attach: []byte("cert")}
	h := transport.Header{ConfigHash: 7, Incarnation: 1, PeerIncarnation: 2, Seq: 3}
	b, err := transport.Encode(nil, h, m)
	require.NoError(t, err)
	assert.Len(t, b, transport.EncodedLen(h, m))
	assert.Equal(t, byte(1), b[2], "flags bit 0 announces the attachment")
	_, got, err := transport.Decode(b)
	require.NoError(t, err)
	assert.Equal(t, m, got)

	// Canonical form: the flag without an attachment, an empty attachment,
	// a wrong length and trailing bytes are all rejected.
	plain, err := transport.Encode(nil, transport.Header{}, gossip.Message{From: 1, To: 2, Kind: gossip.KindPush})
	require.NoError(t, err)
	flagOnly := append([]byte(nil), plain...)
	flagOnly[2] = 1
	zeroLen := append(append([]byte(nil), flagOnly...), 0)
	short := append(append([]byte(nil), flagOnly...), 3, 'a')
	trailing := append(append([]byte(nil), b...), 0)
	unknownFlag := append([]byte(nil), b...)
	unknownFlag[2] = 3
	for name, bad := range map[string][]byte{"flag only": flagOnly, "zero length": zeroLen, "short": short, "trailing": trailing, "unknown flag": unknownFlag} {
		_, _, err := transport.Decode(bad)
		assert.ErrorIs(t, err, transport.ErrMalformed, name)
	}
	_, err = transport.Encode(nil, transport.Header{}, gossip.Message{Kind: gossip.KindPush, Attach: make([]byte, transport.MaxAttach+1)})
	assert.ErrorIs(t, err, transport.ErrMalformed)
}
