package member

import (
	"encoding/binary"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
)

func TestCertificateStabilityAndCompletion(t *testing.T) {
	a := newCertificate(3, 0, 2, 1e-6)
	own := []float64{1}
	a.observe(own, []float64{1 + 1e-7}, nil, nil)
	assert.False(t, a.stable.has(0), "one agreeing observation is not enough")
	a.observe(own, []float64{1 - 1e-7}, nil, nil)
	assert.True(t, a.stable.has(0))
	assert.False(t, a.complete())

	// Node 1 certified itself in the same generation; node 2 died.
	peer := newCertificate(3, 1, 1, 1e-6)
	peer.observe([]float64{1}, []float64{1}, nil, nil)
	fresh := a.merge(peer.gen, peer.stable, peer.dead)
	assert.Empty(t, fresh)
	assert.False(t, a.complete())
	assert.True(t, a.markDead(2))
	assert.False(t, a.markDead(2), "not news twice")
	assert.True(t, a.complete())
	assert.Equal(t, 2, a.live())
	assert.Equal(t, 0, a.root())

	// A disagreement withdraws every certificate of the generation.
	a.observe(own, []float64{2}, nil, nil)
	assert.Equal(t, uint64(1), a.gen)
	assert.False(t, a.complete())
	assert.False(t, a.stable.has(0))
	assert.True(t, a.dead.has(2), "the dead stay dead")
}

// TestStableNeedsNoNeighbourDisagreeing: agreeing observations of one
// neighbour do not make a node stable while another neighbour's latest
// disagreed (trace stale_agreement.txt: three late messages of one
// neighbour, carrying an estimate it had left, certified a member whose
// other neighbour had just disagreed, and the group decided 639 for an
// exact average of 560.667).
func TestStableNeedsNoNeighbourDisagreeing(t *testing.T) {
	c := newCertificate(3, 2, 3, 1e-9)
	own := []float64{0.4}
	var from0, from1 bool // what the member keeps of each neighbour
	c.block(&from1, true)
	c.unsettle()
	for range 5 {
		c.block(&from0, false)
		c.observe(own, own, nil, nil)
	}
	assert.False(t, c.stable.has(2), "member 1's latest disagreed")
	c.block(&from1, true)
	assert.Equal(t, 1, c.blocked, "the same neighbour twice blocks once")

	c.block(&from1, false)
	assert.False(t, c.stable.has(2), "stable only on an observation")
	c.observe(own, own, nil, nil)
	assert.True(t, c.stable.has(2))

	c.block(&from0, true)
	c.observe(own, []float64{0.5}, nil, nil)
	assert.False(t, c.stable.has(2))
	assert.Equal(t, uint64(1), c.gen, "withdrawn")

	// A neighbour excluded is no longer waited for (member.excluded).
	c.block(&from0, false)
	assert.Zero(t, c.blocked)
}

func TestCertificateMergeByGeneration(t *testing.T) {
	a := newCertificate(70, 5, 1, 1e-9)
	a.observe([]float64{1}, []float64{1}, nil, nil)
	old := newBitset(70)
	old.set(6)
	a.merge(0, old, newBitset(70))
	assert.True(t, a.stable.has(6), "same generation: union")

	newer := newBitset(70)
	newer.set(69)
	dead := newBitset(70)
	dead.set(64)
	dead.set(3)
	fresh := a.merge(4, newer, dead)
	assert.ElementsMatch(t, []int{3, 64}, fresh)
	assert.Equal(t, uint64(4), a.gen)
	assert.True(t, a.stable.has(69))
	assert.False(t, a.stable.has(6), "a newer generation replaces the set")
	assert.True(t, a.stable.has(5), "a node that is still stable re-certifies itself")
	assert.Equal(t, 0, a.root())
	a.merge(2, old, newBitset(70))
	assert.False(t, a.stable.has(6), "an older generation is ignored")
	assert.Equal(t, 68, a.live())
}

func TestCertificateWireRoundTrip(t *testing.T) {
	c := newCertificate(70, 1, 1, 1e-9)
	c.gen = 300
	c.stable.set(0)
	c.stable.set(69)
	c.dead.set(33)
	recount(c)
	est := []float64{1.5, math.Inf(-1), math.Copysign(0, -1)}
	ext := []float64{-7, 3}
	b, pl := wire(c, est, ext)
	var p peerCert
	alg, err := decodeCert(b, pl, 70, 3, 2, &p)
	require.NoError(t, err)
	assert.Equal(t, []float64{7}, alg, "the algorithm's words")
	assert.Equal(t, ext, p.ext)
	assert.Equal(t, uint64(300), p.gen)
	assert.Equal(t, c.ver, p.ver)
	assert.Equal(t, c.stable, p.stable.bitset(70, nil))
	assert.Equal(t, c.dead, p.dead.bitset(70, nil))
	for i := range est {
		assert.Equal(t, math.Float64bits(est[i]), math.Float64bits(p.est[i]))
	}

	_, err = decodeCert(b, pl, 71, 3, 2, &p)
	assert.ErrorIs(t, err, gossip.ErrForeignMessage, "another group size")
	_, err = decodeCert(b, pl, 70, 2, 2, &p)
	assert.ErrorIs(t, err, gossip.ErrLength, "another vector length")
	_, err = decodeCert(b, pl, 71, 2, 2, &p)
	assert.ErrorIs(t, err, gossip.ErrForeignMessage, "another group before another vector length")
	assert.NotErrorIs(t, err, gossip.ErrLength)
	_, err = decodeCert(b, pl, 70, 3, 1, &p)
	assert.ErrorIs(t, err, gossip.ErrLength, "another number of extremes")
	for cut := range len(b) {
		_, err = decodeCert(b[:cut], pl, 70, 3, 2, &p)
		assert.Error(t, err, "truncated at %d", cut)
	}
	_, err = decodeCert(append(b, 0), pl, 70, 3, 2, &p)
	assert.Error(t, err, "trailing byte")
	_, err = decodeCert(b, pl[:4], 70, 3, 2, &p)
	assert.Error(t, err, "a payload too short for the estimate")
	alg, err = decodeCert(b, pl[1:], 70, 3, 2, &p)
	require.NoError(t, err, "a payload of the estimate alone")
	assert.Empty(t, alg)
}

// wire is what a message of c carries: its attachment, and a payload of
// one word of the algorithm's (7), then est and ext.
func wire(c *certificate, est, ext []float64) ([]byte, []float64) {
	return c.attachment(len(est), len(ext)), appendEstimate([]float64{7}, est, ext)
}

func TestCertificateDecodeNeverPanics(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	var p peerCert
	for range 20000 {
		b := make([]byte, r.IntN(64))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		if len(b) > 0 && r.IntN(2) == 0 {
			b[0] = certVersion
		}
		pl := make([]float64, r.IntN(6))
		_, _ = decodeCert(b, pl, 1+r.IntN(100), r.IntN(4), r.IntN(3), &p)
	}
}

func TestBitsetMasksBeyondN(t *testing.T) {
	var s bitset
	s = s.fromBytes([]byte{0xff, 0xff}, 10)
	assert.Equal(t, 10, s.count())
	assert.Equal(t, []byte{0xff, 0x03}, s.appendBytes(nil, 10))
}

func TestRelDiff(t *testing.T) {
	assert.Equal(t, 0.0, relDiff([]float64{2}, []float64{2}))
	assert.InDelta(t, 0.5, relDiff([]float64{2, 1}, []float64{3, 1}), 1e-15)
	assert.Equal(t, 0.25, relDiff([]float64{0}, []float64{0.25}))
	assert.True(t, math.IsInf(relDiff([]float64{1}, []float64{math.NaN()}), 1))
	assert.True(t, math.IsInf(relDiff([]float64{1}, []float64{1, 2}), 1))
}

func TestCertificateExtremesMustAgree(t *testing.T) {
	c := newCertificate(2, 0, 1, 1e-6)
	c.observe([]float64{1}, []float64{1}, []float64{5}, []float64{4})
	assert.False(t, c.stable.has(0), "estimates agree but the maxima differ")
	own := []float64{5}
	mergeMax(own, []float64{9})
	assert.Equal(t, []float64{9}, own)
	c.observe([]float64{1}, []float64{1}, own, []float64{9})
	assert.True(t, c.stable.has(0))
}

// TestBitsetByteForm pins the wire form of a set (bit j of byte j/8 = node
// j) for sizes around the word boundaries, where the word-at-a-time
// encoder switches to single bytes.
func TestBitsetByteForm(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{1, 7, 8, 9, 63, 64, 65, 127, 128, 129, 200, 1000} {
		s := newBitset(n)
		for j := range n {
			if rng.IntN(3) == 0 {
				s.set(j)
			}
		}
		b := s.appendBytes(nil, n)
		require.Len(t, b, (n+7)/8, "n=%d", n)
		for j := range n {
			assert.Equal(t, s.has(j), b[j/8]&(1<<(j%8)) != 0, "n=%d bit %d", n, j)
		}
		var back bitset
		back = back.fromBytes(b, n)
		assert.Equal(t, s, back, "n=%d", n)
	}
}

// TestSetForms round-trips sets of every density through the three wire
// forms and checks that the encoder picks a short one.
func TestSetForms(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for _, n := range []int{1, 2, 63, 64, 65, 100, 1000, 65536} {
		for _, density := range []float64{0, 0.001, 0.01, 0.3, 0.5, 0.99, 0.999, 1} {
			s := newBitset(n)
			c := 0
			for j := range n {
				if rng.Float64() < density {
					s.set(j)
					c++
				}
			}
			b := s.appendSet(nil, n)
			back, rest, err := readSet(append(b, 0xAA), n, nil)
			require.NoError(t, err, "n=%d density %v", n, density)
			assert.Equal(t, []byte{0xAA}, rest, "readSet returns what follows")
			assert.Equal(t, s, back, "n=%d density %v form %d", n, density, b[0])
			// The list forms cost at most uvarintLen(n) bytes an id; the
			// encoder never takes more than the bitmap plus its form byte.
			assert.LessOrEqual(t, len(b), 1+(n+7)/8)
			if short := min(c, n-c); 1+short*uvarintLen(uint64(n)) < (n+7)/8 {
				assert.LessOrEqual(t, len(b), 2+uvarintLen(uint64(n))*(short+1), "n=%d density %v", n, density)
			}
		}
	}
	// An empty and a full set of 65,536 members take a few bytes.
	assert.Len(t, newBitset(65536).appendSet(nil, 65536), 2)
	full := newBitset(65536)
	for j := range 65536 {
		full.set(j)
	}
	assert.Len(t, full.appendSet(nil, 65536), 2)
}

// Merging a set from its wire form, whichever form it takes, adds to a
// set what OR-ing the decoded bitset would, and counts what it added.
func TestSetFormsMergeLikeBitsets(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	random := func(n int, density float64) bitset {
		s := newBitset(n)
		for j := range n {
			if rng.Float64() < density {
				s.set(j)
			}
		}
		return s
	}
	forms := map[byte]int{}
	for _, n := range []int{1, 2, 63, 64, 65, 127, 128, 129, 1000, 4096, 65536} {
		for _, density := range []float64{0, 0.001, 0.3, 0.99, 0.999, 1} {
			for _, into := range []float64{0, 0.5, 0.999, 1} {
				src, dst := random(n, density), random(n, into)
				b := src.appendSet(nil, n)
				forms[b[0]]++
				ws, rest, err := checkSet(b, n)
				require.NoError(t, err)
				require.Empty(t, rest)
				want := slices.Clone(dst)
				for w := range want {
					want[w] |= src[w]
				}
				before := dst.count()
				added := ws.orInto(dst, n)
				assert.Equal(t, want, dst, "n %d density %v into %v form %d", n, density, into, b[0])
				assert.Equal(t, want.count()-before, added, "n %d density %v into %v form %d: members added", n, density, into, b[0])
			}
		}
	}
	for _, form := range []byte{setBitmap, setList, setAllBut} {
		assert.NotZero(t, forms[form], "form %d never tried", form)
	}
	// A set of no members at all: checkSet accepts an empty bitmap, and
	// merging it adds nothing (a review's find: it read before the body).
	ws, _, err := checkSet([]byte{setBitmap}, 0)
	require.NoError(t, err)
	assert.Zero(t, ws.orInto(newBitset(0), 0))
}

// BenchmarkSetMerge merges a set of 65,536 members from its wire form
// into an empty set: a bitmap (half the members, the stable set while it
// fills) and a complement (all but 655, every stable set of a group with
// 1 % crashed once it has settled).
func BenchmarkSetMerge(b *testing.B) {
	const n = 65536
	rng := rand.New(rand.NewPCG(1, 1))
	for _, c := range []struct {
		name    string
		members int
	}{{"bitmap", n / 2}, {"complement", n - 655}} {
		src := newBitset(n)
		for _, j := range rng.Perm(n)[:c.members] {
			src.set(j)
		}
		ws, _, err := checkSet(src.appendSet(nil, n), n)
		require.NoError(b, err)
		dst := newBitset(n)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				clear(dst)
				ws.orInto(dst, n)
			}
		})
	}
}

func TestSetFormsRejectMalformed(t *testing.T) {
	for name, b := range map[string][]byte{
		"empty":             {},
		"unknown form":      {3},
		"bitmap truncated":  {setBitmap, 0xff},
		"count missing":     {setList},
		"count beyond n":    {setList, 11},
		"count beyond data": {setList, 3, 0},
		"id beyond n":       {setList, 1, 10},
		"gap beyond n":      {setList, 2, 5, 4},
		"complement beyond": {setAllBut, 1, 12},
	} {
		_, _, err := readSet(b, 10, nil)
		assert.ErrorIs(t, err, errSet, name)
	}
	s, _, err := readSet([]byte{setAllBut, 2, 0, 8}, 10, nil)
	require.NoError(t, err)
	assert.Equal(t, bitset{0b01_1111_1110}, s, "all of 0…9 but 0 and 9")
}

// FuzzDecodeCert: any bytes either fail to decode or give sets within the
// group; decoding never panics. Run with go test -fuzz FuzzDecodeCert
// ./member; the seeds run in the suite.
func FuzzDecodeCert(f *testing.F) {
	for _, fill := range []float64{0, 0.02, 0.5, 1} {
		c := newCertificate(200, 0, 1, 1e-9)
		for j := range 200 {
			if float64(j%50) < fill*50 {
				c.stable.set(j)
			}
		}
		recount(c)
		b, _ := wire(c, []float64{1, 2}, nil)
		f.Add(b, uint16(200))
	}
	// A receiver's own sets (see below), which decodeCertAgainst
	// recognises without checking them.
	own := newCertificate(200, 0, 1, 1e-9)
	for j := 0; j < 200; j += 2 {
		own.stable.set(j)
	}
	recount(own)
	b, _ := wire(own, []float64{1, 2}, nil)
	f.Add(b, uint16(199))
	f.Fuzz(func(t *testing.T, b []byte, n16 uint16) {
		n := 1 + int(n16%1024)
		var p peerCert
		pl := []float64{7, 1, 2}
		if _, err := decodeCert(b, pl, n, 2, 0, &p); err != nil {
			return
		}
		for _, s := range []bitset{p.stable.bitset(n, nil), p.dead.bitset(n, nil)} {
			require.Len(t, s, (n+63)/64)
			for j := n; j < 64*len(s); j++ {
				require.False(t, s.has(j), "bit %d of a group of %d", j, n)
			}
		}
		// Merged from the wire form, they do what their bitsets do.
		c, ref := newCertificate(n, 0, 1, 1e-9), newCertificate(n, 0, 1, 1e-9)
		require.Equal(t, refMerge(ref, p.gen, p.stable.bitset(n, nil), p.dead.bitset(n, nil)), c.mergeWire(p.gen, p.stable, p.dead))
		require.Equal(t, ref.stable, c.stable)
		require.Equal(t, ref.dead, c.dead)
		require.Equal(t, c.stable.count(), c.nStable)
		require.Equal(t, c.dead.count(), c.nDead)
		// Decoded against a receiver's own sets (every other member
		// stable, say), the same bytes merge to the same state.
		o := newCertificate(n, 0, 1, 1e-9)
		for j := 0; j < n; j += 2 {
			o.stable.set(j)
		}
		recount(o)
		o.attachment(2, 0)
		var q peerCert
		_, err := decodeCertAgainst(b, pl, n, 2, 0, receiver{own: o.own()}, &q)
		require.NoError(t, err)
		r := newCertificate(n, 0, 1, 1e-9)
		r.stable, r.nStable, r.ver = slices.Clone(o.stable), o.nStable, o.ver
		require.Equal(t, r.mergeWire(p.gen, p.stable, p.dead), o.mergeWire(q.gen, q.stable, q.dead))
		require.Equal(t, r.stable, o.stable)
		require.Equal(t, r.dead, o.dead)
		require.Equal(t, r.gen, o.gen)
	})
}

// The certificate keeps what it derives from its sets (complete, live, the
// sets' wire form), and merges a peer's sets straight from their wire form.
// Both are checked against computing afresh, over a
// random walk through every change a certificate sees: agreement,
// disagreement, withdrawal, merges of sets empty and not (in every wire
// form) and deaths.
func TestCertificateCachesAgreeWithAFreshLook(t *testing.T) {
	for _, n := range []int{3, 64, 70, 300} {
		seed := uint64(n)
		rng := rand.New(rand.NewPCG(seed, 7))
		c := newCertificate(n, 0, 2, 1e-6)
		ids := func(s bitset) []gossip.NodeID {
			if s == nil {
				return nil
			}
			return s.members(n)
		}
		var reused peerCert
		own := []float64{1}
		for step := range 3000 {
			switch rng.IntN(6) {
			case 0, 1:
				c.observe(own, []float64{1}, nil, nil)
			case 2:
				if rng.IntN(8) == 0 {
					c.observe(own, []float64{2}, nil, nil)
				} else {
					c.unsettle()
				}
			case 3:
				if rng.IntN(20) == 0 {
					c.markDead(rng.IntN(n))
				}
			default:
				// A peer's certificate: empty, sparse or dense sets, of this
				// generation, an older or a newer one.
				p := newCertificate(n, 1+rng.IntN(n-1), 1, 1e-6)
				p.gen = c.gen + uint64(rng.IntN(3)) - min(c.gen, 1)
				for i, set := range []bitset{p.stable, p.dead} {
					dense := 8 // stable: 7 in 8 set; dead: 1 in 40
					if i == 1 {
						dense = 40
					}
					switch rng.IntN(3) {
					case 1:
						set.set(rng.IntN(n))
					case 2:
						for j := range n {
							if (i == 0) == (rng.IntN(dense) != 0) {
								set.set(j)
							}
						}
					}
				}
				recount(p)
				b, pl := wire(p, []float64{1}, nil)
				_, err := decodeCert(b, pl, n, 1, 0, &reused)
				require.NoError(t, err)
				rs, rd := reused.stable.bitset(n, nil), reused.dead.bitset(n, nil)
				assert.Equal(t, ids(p.stable), ids(rs), "n %d step %d: stable set decoded", n, step)
				assert.Equal(t, ids(p.dead), ids(rd), "n %d step %d: dead set decoded", n, step)
				// Merging from the wire form does what merging the decoded
				// bitsets does.
				ref, verBefore := *c, c.ver
				ref.stable, ref.dead = slices.Clone(c.stable), slices.Clone(c.dead)
				wantFresh := refMerge(&ref, reused.gen, rs, rd)
				gotFresh := c.mergeWire(reused.gen, reused.stable, reused.dead)
				assert.Equal(t, wantFresh, gotFresh, "n %d step %d: newly dead", n, step)
				assert.Equal(t, ref.gen, c.gen, "n %d step %d: generation", n, step)
				assert.Equal(t, ids(ref.stable), ids(c.stable), "n %d step %d: stable set merged", n, step)
				assert.Equal(t, ids(ref.dead), ids(c.dead), "n %d step %d: dead set merged", n, step)
				assert.Equal(t, ref.ver != verBefore, c.ver != verBefore, "n %d step %d: a change counted", n, step)
			}
			require.Equal(t, c.scanComplete(), c.complete(), "n %d step %d: complete", n, step)
			require.Equal(t, n-c.dead.count(), c.live(), "n %d step %d: live", n, step)
			require.Equal(t, c.stable.count(), c.nStable, "n %d step %d: stable members counted", n, step)
			require.Equal(t, c.dead.count(), c.nDead, "n %d step %d: dead members counted", n, step)
			want := []byte{certVersion}
			want = binary.AppendUvarint(want, c.ver)
			want = binary.AppendUvarint(want, 1)
			want = binary.AppendUvarint(want, 0)
			want = binary.AppendUvarint(want, c.gen)
			want = binary.AppendUvarint(want, uint64(n))
			want = c.stable.appendSet(want, n)
			want = c.dead.appendSet(want, n)
			require.Equal(t, want, c.attachment(1, 0), "n %d step %d: encoded sets", n, step)
		}
	}
}

// An attachment is made once for a version of the sets and shared by the
// messages sent until they change; one handed out is never written to.
func TestAttachmentIsSharedUntilTheSetsChange(t *testing.T) {
	for _, n := range []int{1, 70, 1000, 65536} {
		c := newCertificate(n, 0, 1, 1e-9)
		c.gen = 1 << 40
		for j := range n {
			if j%3 == 0 {
				c.stable.set(j)
			}
		}
		recount(c)
		a := c.attachment(2, 1)
		kept := slices.Clone(a)
		assert.Equal(t, len(a), cap(a), "n=%d: one allocation of the exact size", n)
		b := c.attachment(2, 1)
		assert.Same(t, &a[0], &b[0], "n=%d: unchanged sets, the same attachment", n)
		c.markDead(n - 1)
		d := c.attachment(2, 1)
		assert.NotEqual(t, a, d, "n=%d: a death, a new attachment", n)
		assert.Equal(t, kept, a, "n=%d: the old one untouched", n)
		e := c.attachment(3, 1)
		assert.NotEqual(t, d, e, "n=%d: another estimate length, another header", n)
		var p peerCert
		_, err := decodeCert(e, make([]float64, 4), n, 3, 1, &p)
		require.NoError(t, err, "n=%d", n)
		assert.Equal(t, c.ver, p.ver)
	}
}

// recount brings a certificate whose sets a test wrote directly up to date.
func recount(c *certificate) {
	c.nStable, c.nDead = c.stable.count(), c.dead.count()
	c.ver++
}

// refMerge is merge as it was written before mergeWire, on bitsets, word by
// word: the reference the wire-form merge is checked against.
func refMerge(c *certificate, gen uint64, stable, dead bitset) []int {
	var fresh []int
	for w := range dead {
		add := dead[w] &^ c.dead[w]
		if add == 0 {
			continue
		}
		c.dead[w] |= add
		c.ver++
		for add != 0 {
			b := bits.TrailingZeros64(add)
			add &^= 1 << b
			fresh = append(fresh, w*64+b)
		}
	}
	switch {
	case gen > c.gen:
		c.gen = gen
		c.ver++
		copy(c.stable, stable)
		if c.streak >= c.need {
			c.stable.set(c.self)
		}
	case gen == c.gen:
		for w := range stable {
			if add := stable[w] &^ c.stable[w]; add != 0 {
				c.stable[w] |= add
				c.ver++
			}
		}
	}
	c.nStable, c.nDead = c.stable.count(), c.dead.count()
	return fresh
}

// A peer's sets that are byte for byte the receiver's own are recognised
// and not merged (decodeCertAgainst), and that changes nothing: over a
// random walk of peers that are copies of the receiver with one set, the
// generation, or nothing changed, merging with the receiver's own sets at
// hand leaves the certificate as merging without them does. The walk also
// counts that the shortcut is taken, so that a shortcut never taken
// cannot pass.
func TestOwnSetsAreRecognised(t *testing.T) {
	for _, n := range []int{1, 3, 64, 70, 300, 2000} {
		rng := rand.New(rand.NewPCG(uint64(n), 8))
		c := newCertificate(n, 0, 1, 1e-6)
		sameBoth, sameDead := 0, 0
		for step := range 2000 {
			// The receiver changes now and then; its wire form is up to
			// date only when it sent since (own is then at hand).
			switch rng.IntN(8) {
			case 0:
				c.markDead(rng.IntN(n))
			case 1:
				c.stable.set(rng.IntN(n))
				recount(c)
			case 2:
				c.unsettle()
			}
			if rng.IntN(4) > 0 {
				c.attachment(1, 0)
			}
			p := newCertificate(n, 0, 1, 1e-6)
			p.gen, p.stable, p.dead = c.gen, slices.Clone(c.stable), slices.Clone(c.dead)
			switch rng.IntN(5) {
			case 1:
				p.stable.set(rng.IntN(n))
			case 2:
				p.dead.set(rng.IntN(n))
			case 3:
				p.gen++
			case 4:
				p.stable.clear1(rng.IntN(n))
			}
			recount(p)
			b, pl := wire(p, []float64{1}, nil)

			var fast, slow peerCert
			_, err := decodeCertAgainst(b, pl, n, 1, 0, receiver{own: c.own()}, &fast)
			require.NoError(t, err)
			_, err = decodeCert(b, pl, n, 1, 0, &slow)
			require.NoError(t, err)
			if fast.stable.same {
				sameBoth++
				require.True(t, fast.dead.same, "n %d step %d", n, step)
			} else if fast.dead.same {
				sameDead++
			}
			assert.Equal(t, slow.est, fast.est, "n %d step %d: estimate", n, step)
			ref := *c
			ref.stable, ref.dead = slices.Clone(c.stable), slices.Clone(c.dead)
			wantFresh := ref.mergeWire(slow.gen, slow.stable, slow.dead)
			gotFresh := c.mergeWire(fast.gen, fast.stable, fast.dead)
			require.Equal(t, wantFresh, gotFresh, "n %d step %d: newly dead", n, step)
			require.Equal(t, ref.gen, c.gen, "n %d step %d: generation", n, step)
			require.Equal(t, ref.stable, c.stable, "n %d step %d: stable set", n, step)
			require.Equal(t, ref.dead, c.dead, "n %d step %d: dead set", n, step)
			require.Equal(t, ref.ver, c.ver, "n %d step %d: changes counted", n, step)
			require.Equal(t, ref.nStable, c.nStable, "n %d step %d", n, step)
			require.Equal(t, ref.nDead, c.nDead, "n %d step %d", n, step)
		}
		assert.Greater(t, sameBoth, 200, "n %d: peers with the receiver's sets recognised", n)
		assert.Greater(t, sameDead, 100, "n %d: peers with its dead set recognised", n)
	}
}

// Sets of a ver no higher than one already merged from the same sender
// are skipped (decodeCertAgainst's known), and that changes nothing: a
// receiver that skips them and one that merges every message stay equal
// while a sender's certificate changes in every way it can and its
// messages arrive late, out of order and twice, and the receiver's own
// certificate changes between them.
func TestStaleSetsAreSkipped(t *testing.T) {
	for _, n := range []int{3, 70, 300} {
		rng := rand.New(rand.NewPCG(uint64(n), 9))
		s := newCertificate(n, 1, 2, 1e-6)
		skip, all := newCertificate(n, 0, 2, 1e-6), newCertificate(n, 0, 2, 1e-6)
		var sent [][]byte // the sender's attachments, in the order sent
		known, skipped := uint64(0), 0
		for step := range 4000 {
			// The sender changes.
			switch rng.IntN(7) {
			case 0, 1:
				s.observe([]float64{1}, []float64{1}, nil, nil)
			case 2:
				s.unsettle()
			case 3:
				if rng.IntN(10) == 0 {
					s.markDead(2 + rng.IntN(n-2))
				}
			case 4:
				p := newCertificate(n, 2+rng.IntN(n-2), 1, 1e-6)
				p.gen = s.gen + uint64(rng.IntN(2))
				for range rng.IntN(n) {
					p.stable.set(rng.IntN(n))
				}
				recount(p)
				s.merge(p.gen, p.stable, p.dead)
			}
			sent = append(sent, s.attachment(1, 0))
			// The receivers change alike.
			switch rng.IntN(10) {
			case 0:
				skip.unsettle()
				all.unsettle()
			case 1:
				skip.observe([]float64{1}, []float64{1}, nil, nil)
				all.observe([]float64{1}, []float64{1}, nil, nil)
			}
			// One of the last few messages arrives.
			b := sent[max(0, len(sent)-1-rng.IntN(8))]
			var p, q peerCert
			pl := []float64{7, 1}
			_, err := decodeCertAgainst(b, pl, n, 1, 0, receiver{own: skip.own(), gen: skip.gen, known: known}, &p)
			require.NoError(t, err)
			_, err = decodeCert(b, pl, n, 1, 0, &q)
			require.NoError(t, err)
			if p.ver <= known {
				skipped++
				require.True(t, p.stable.same && p.dead.same, "n %d step %d", n, step)
			}
			require.Equal(t, all.mergeWire(q.gen, q.stable, q.dead), skip.mergeWire(p.gen, p.stable, p.dead), "n %d step %d: newly dead", n, step)
			known = max(known, p.ver)
			require.Equal(t, all.gen, skip.gen, "n %d step %d: generation", n, step)
			require.Equal(t, all.stable, skip.stable, "n %d step %d: stable set", n, step)
			require.Equal(t, all.dead, skip.dead, "n %d step %d: dead set", n, step)
			require.Equal(t, all.nStable, skip.nStable, "n %d step %d", n, step)
			if rng.IntN(2) == 0 {
				skip.attachment(1, 0) // its own sets at hand, sometimes
			}
		}
		assert.Greater(t, skipped, 1000, "n %d: stale sets skipped", n)
	}
}

// A sender that restarts within an operation counts its ver from 1 again.
// Its sets are skipped while that ver is no higher than its earlier self's,
// but not a newer generation: that is how it withdraws the stability its
// earlier self claimed, and a receiver that skipped it took the group for
// settled (found by review).
func TestRestartedSenderStillWithdraws(t *testing.T) {
	const n = 4
	r := newCertificate(n, 0, 1, 1e-6)
	before := newCertificate(n, 1, 1, 1e-6)
	for j := 1; j < n; j++ {
		before.stable.set(j)
		recount(before) // ver climbs: 2, 3, 4
	}
	var p peerCert
	b, pl := wire(before, []float64{1}, nil)
	_, err := decodeCertAgainst(b, pl, n, 1, 0, receiver{gen: r.gen}, &p)
	require.NoError(t, err)
	r.mergeWire(p.gen, p.stable, p.dead)
	known := p.ver
	require.False(t, r.complete(), "the receiver is not stable yet")

	// Restarted: it learns the old claim, itself included, and withdraws.
	after := newCertificate(n, 1, 1, 1e-6)
	after.merge(before.gen, before.stable, nil)
	after.unsettle()
	require.Equal(t, uint64(1), after.gen)
	b, pl = wire(after, []float64{1}, nil)
	_, err = decodeCertAgainst(b, pl, n, 1, 0, receiver{own: r.own(), gen: r.gen, known: known}, &p)
	require.NoError(t, err)
	require.LessOrEqual(t, p.ver, known, "the case at hand: a ver already seen")
	require.False(t, p.stable.same, "a newer generation is merged")
	r.mergeWire(p.gen, p.stable, p.dead)
	r.observe([]float64{1}, []float64{1}, nil, nil)
	assert.Equal(t, uint64(1), r.gen)
	assert.False(t, r.complete(), "withdrawn: only the receiver is stable in generation 1")

	// A ver of 0 is no certificate's: refused, not skipped unchecked.
	zero := append([]byte{certVersion, 0}, b[2:]...)
	_, err = decodeCertAgainst(zero, pl, n, 1, 0, receiver{known: 5}, &p)
	assert.Error(t, err)
}
