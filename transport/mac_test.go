package transport_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
)

// Group keys of the tests: the fuzz target's, and two others.
var (
	fuzzKey  = []byte("fuzz-group-key-0123456789abcdef")
	groupKey = []byte("the group key, 32 bytes long....")
	otherKey = []byte("another group's key, also long..")
)

// TestSignedLayout pins the layout of a signed message: the unsigned
// encoding with flags bit 1 set, then the first 16 bytes of HMAC-SHA256
// under the key of everything before them, computed here independently.
func TestSignedLayout(t *testing.T) {
	h := transport.Header{ConfigHash: 0x0102030405060708, Incarnation: 9, PeerIncarnation: 10, Seq: 11}
	m := gossip.Message{From: 3, To: 300, Kind: gossip.KindFlow, Epoch: 1, Payload: []float64{1, 2}, Attach: []byte("cert")}
	plain, err := transport.Encode(nil, h, m)
	require.NoError(t, err)
	signed, err := transport.EncodeSigned(nil, h, m, groupKey)
	require.NoError(t, err)
	require.Len(t, signed, transport.EncodedLen(h, m)+transport.MACSize)

	body := append([]byte(nil), plain...)
	body[2] |= 2 // flags: bit 0 attachment (already set), bit 1 MAC
	assert.Equal(t, byte(3), body[2])
	require.Equal(t, body, signed[:len(plain)], "the MAC is appended after everything else")
	mac := hmac.New(sha256.New, groupKey)
	mac.Write(body)
	assert.Equal(t, mac.Sum(nil)[:16], signed[len(plain):])

	// Push-Sum with one component: 50 bytes, 66 signed (as documented).
	b, err := transport.EncodeSigned(nil, transport.Header{Seq: 1}, gossip.Message{Kind: gossip.KindPush, Payload: []float64{1, 1}}, groupKey)
	require.NoError(t, err)
	assert.Len(t, b, 50+16)

	// Decode reads it, reporting the MAC without checking it.
	dh, dm, err := transport.Decode(signed)
	require.NoError(t, err)
	want := h
	want.Signed = true
	assert.Equal(t, want, dh)
	assert.Equal(t, m, dm)
	_, err = transport.Encode(nil, dh, dm)
	require.ErrorIs(t, err, transport.ErrMalformed, "Encode does not sign")
}

func TestSignedRoundTrip(t *testing.T) {
	const seed = 20240606
	rng := rand.New(rand.NewPCG(seed, 2))
	for i := range 1000 {
		h, m := randomMessage(rng)
		b, err := transport.EncodeSigned([]byte("prefix"), h, m, groupKey)
		require.NoError(t, err)
		require.Equal(t, "prefix", string(b[:6]))
		h2, m2, err := transport.DecodeSigned(b[6:], groupKey)
		require.NoError(t, err, "seed %d, message %d", seed, i)
		h.Signed = true
		assert.Equal(t, h, h2)
		requireSameMessage(t, m, m2, "seed %d, message %d", seed, i)
	}
}

// TestDecodeSignedRejects: no MAC, a MAC under another key, a MAC moved to
// another message, and every single-bit change anywhere in a signed message
// fail; nothing is returned.
func TestDecodeSignedRejects(t *testing.T) {
	h := transport.Header{ConfigHash: 42}
	m := gossip.Message{From: 5, To: 6, Kind: gossip.KindCheckedFlow, Epoch: 7, Tag: 8, Payload: []float64{0.5, 1.5, 2.5}}
	good, err := transport.EncodeSigned(nil, h, m, groupKey)
	require.NoError(t, err)

	unsigned, err := transport.Encode(nil, h, m)
	require.NoError(t, err)
	other, err := transport.EncodeSigned(nil, h, m, otherKey)
	require.NoError(t, err)
	m2 := m
	m2.Epoch = 8
	moved, err := transport.EncodeSigned(nil, h, m2, groupKey)
	require.NoError(t, err)
	copy(moved[len(moved)-transport.MACSize:], good[len(good)-transport.MACSize:])
	for name, b := range map[string][]byte{"unsigned": unsigned, "other key": other, "moved MAC": moved} {
		gh, gm, err := transport.DecodeSigned(b, groupKey)
		require.ErrorIs(t, err, transport.ErrForged, name)
		assert.Zero(t, gh, name)
		assert.Zero(t, gm, name)
	}

	for i := range good {
		for bit := range 8 {
			b := append([]byte(nil), good...)
			b[i] ^= 1 << bit
			_, _, err := transport.DecodeSigned(b, groupKey)
			require.Error(t, err, "byte %d bit %d", i, bit)
			// A flip in the flags or the length fields can make the bytes
			// malformed, or the MAC flag vanish; a flip anywhere else keeps
			// them well formed but forged.
			require.True(t, errIsAny(err, transport.ErrForged, transport.ErrMalformed, transport.ErrVersion), "byte %d bit %d: %v", i, bit, err)
		}
	}
	for i := range len(good) {
		_, _, err := transport.DecodeSigned(good[:i], groupKey)
		require.Error(t, err, "prefix of %d bytes", i)
	}
	_, _, err = transport.DecodeSigned(good, groupKey[:transport.MinKeyLen-1])
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	_, err = transport.EncodeSigned(nil, h, m, nil)
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
}

func errIsAny(err error, targets ...error) bool {
	for _, target := range targets {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// forgeries returns the four forged messages of the brief for a message m
// of a group with hash h and key groupKey: no MAC, a wrong MAC, a MAC
// under another key, and a valid message with one payload bit flipped after
// signing.
func forgeries(t testing.TB, h transport.Header, m gossip.Message) map[string][]byte {
	t.Helper()
	noMAC, err := transport.Encode(nil, h, m)
	require.NoError(t, err)
	wrong, err := transport.EncodeSigned(nil, h, m, groupKey)
	require.NoError(t, err)
	for i := len(wrong) - transport.MACSize; i < len(wrong); i++ {
		wrong[i] = byte(i * 37) // some other 16 bytes
	}
	other, err := transport.EncodeSigned(nil, h, m, otherKey)
	require.NoError(t, err)
	flipped, err := transport.EncodeSigned(nil, h, m, groupKey)
	require.NoError(t, err)
	flipped[len(flipped)-transport.MACSize-1] ^= 0x08 // a bit of the last payload word
	_, fm, err := transport.Decode(flipped)
	require.NoError(t, err, "the flipped message is well formed")
	require.NotEqual(t, m.Payload, fm.Payload)
	return map[string][]byte{"no MAC": noMAC, "wrong MAC": wrong, "other key": other, "flipped payload bit": flipped}
}

// TestForgedMessagesDropped injects the four forgeries into a keyed group,
// through Memory.Inject and a raw NATS publish on the node's subject: each
// is dropped and counted in Forged, and the legitimate traffic around them
// arrives intact.
func TestForgedMessagesDropped(t *testing.T) {
	forEach(t, func(t *testing.T, im impl) {
		tr, inject := im.open(t, transport.Options{Key: groupKey})
		g := transport.Group{Name: "keyed", ConfigHash: 99}
		eps := openNodes(t, tr, g, 2)
		ctx := testCtx(t)
		legit := gossip.Message{From: 0, To: 1, Kind: gossip.KindFlow, Epoch: 3, Tag: 1, Payload: []float64{2, 1}}
		require.NoError(t, eps[0].Send(ctx, legit))
		forged := forgeries(t, transport.Header{ConfigHash: g.ConfigHash}, gossip.Message{From: 0, To: 1, Kind: gossip.KindFlow, Epoch: 3, Tag: 2, Payload: []float64{1e9, 1}})
		for _, raw := range forged {
			inject(g.Subject(1), raw)
		}
		legit.Tag = 3
		require.NoError(t, eps[0].Send(ctx, legit))

		// Both legitimate messages arrive, in order, and nothing else.
		for _, tag := range []uint64{1, 3} {
			got := recv(t, eps[1])
			assert.Equal(t, tag, got.Tag)
			assert.Equal(t, legit.Payload, got.Payload)
		}
		requireEmpty(t, eps[1])
		want := transport.Stats{Received: 2, Forged: uint64(len(forged))}
		assert.Equal(t, want, appStats(eps[1].Stats()))
		assert.Equal(t, uint64(4), eps[1].Stats().Forged)
		assert.Equal(t, uint64(4), eps[1].Stats().Dropped())
		t.Logf("%s: forged injected %d, Stats %+v", im.name, len(forged), eps[1].Stats())
	})
}

// TestHalfConfiguredGroup: a member without the key drops signed messages
// as foreign, a member with it drops unsigned ones as forged; neither is
// silent. A message signed with the key but of another configuration is
// authentic, and foreign.
func TestHalfConfiguredGroup(t *testing.T) {
	keyed, err := transport.NewMemory(transport.MemoryOptions{Options: transport.Options{Key: groupKey}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, keyed.Close()) })
	plain, err := transport.NewMemory(transport.MemoryOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, plain.Close()) })
	g := transport.Group{Name: "half", ConfigHash: 5}
	k := openNodes(t, keyed, g, 2)
	p := openNodes(t, plain, g, 2)
	m := gossip.Message{From: 0, To: 1, Kind: gossip.KindPush, Payload: []float64{1, 1}}

	signed, err := transport.EncodeSigned(nil, transport.Header{ConfigHash: 5}, m, groupKey)
	require.NoError(t, err)
	unsigned, err := transport.Encode(nil, transport.Header{ConfigHash: 5}, m)
	require.NoError(t, err)
	require.True(t, plain.Inject(g.Subject(1), signed))
	require.True(t, keyed.Inject(g.Subject(1), unsigned))
	assert.Equal(t, transport.Stats{Foreign: 1}, p[1].Stats())
	assert.Equal(t, transport.Stats{Forged: 1}, k[1].Stats())

	otherGroup, err := transport.EncodeSigned(nil, transport.Header{ConfigHash: 6}, m, groupKey)
	require.NoError(t, err)
	require.True(t, keyed.Inject(g.Subject(1), otherGroup))
	assert.Equal(t, transport.Stats{Forged: 1, Foreign: 1}, k[1].Stats())

	// Between keyed members, messages flow.
	require.NoError(t, k[0].Send(testCtx(t), m))
	requireSameMessage(t, m, recv(t, k[1]))
}

func TestKeyOptions(t *testing.T) {
	_, err := transport.NewMemory(transport.MemoryOptions{Options: transport.Options{Key: []byte("short")}})
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	assert.NotContains(t, err.Error(), "short", "the error does not echo the key")

	// The transport keeps its own copy: changing the caller's slice later
	// changes nothing. Everything it sends (the probe, the answer, the
	// message) verifies under the key as it was.
	key := append([]byte(nil), groupKey...)
	var mu sync.Mutex
	var sent [][]byte
	tap := func(_ string, raw []byte) {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, raw)
	}
	tr := newMemory(t, transport.MemoryOptions{Options: transport.Options{Key: key}, Tap: tap})
	key[0] ^= 1
	g := transport.Group{Name: "copy", ConfigHash: 1}
	eps := openNodes(t, tr, g, 2)
	m := gossip.Message{From: 0, To: 1, Kind: gossip.KindPush}
	require.NoError(t, eps[0].Send(testCtx(t), m))
	requireSameMessage(t, m, recv(t, eps[1]))
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, sent, 3)
	for i, raw := range sent {
		_, _, err := transport.DecodeSigned(raw, groupKey)
		require.NoError(t, err, "message %d", i)
	}
}

func TestReadKeyFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	const hex = "00112233445566778899aabbccddeeff"
	for name, content := range map[string]string{"bare": hex, "lf": hex + "\n", "crlf": hex + "\r\n"} {
		k, err := transport.ReadKeyFile(write(name, content))
		require.NoError(t, err, name)
		assert.Equal(t, hex, string(k), name)
	}
	k, err := transport.ReadKeyFile(write("two", hex+"\n\n"))
	require.NoError(t, err)
	assert.Equal(t, hex+"\n", string(k), "only one line end is removed")

	_, err = transport.ReadKeyFile(write("short", "tooshort\n"))
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	assert.NotContains(t, err.Error(), "tooshort")
	_, err = transport.ReadKeyFile(filepath.Join(dir, "missing"))
	require.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, err.Error(), "transport: group key")
}
