package member

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// The convergence certificate: how a node learns, without a coordinator and
// despite failures, that every estimate in the group has settled, so the
// root can broadcast its own. See the package documentation for the design.
//
// Every gossip message carries the sender's certificate: in its Attach the
// generation, the stable set of that generation and the dead set; at the
// end of its payload the sender's current estimate (see the attachment's
// wire format below).
type certificate struct {
	n      int
	self   int
	gen    uint64
	stable bitset
	dead   bitset
	streak int     // consecutive observations that agreed within theta
	need   int     // agreeing observations before the node calls itself stable
	theta  float64 // agreement threshold, relative
	// blocked counts the live neighbours whose latest observation
	// disagreed (the caller keeps which, see block): while any does, the
	// node is not stable, however many agreeing observations of its other
	// neighbours it has. Latest is the latest taken in: the member does
	// not observe a message older than one it already has from the same
	// sender (see Machine.step). A neighbour not heard from in the
	// operation holds nothing up; one never heard from is declared dead.
	blocked int

	// ver counts the changes of gen, stable and dead. What is derived from
	// them is kept with the ver it was derived at: every message carries
	// the sets and every step asks whether they are complete, each O(n/64)
	// words (at 65,536 members a quarter of the simulation's time went
	// there), while the sets change far less often.
	ver     uint64 // from 1, so that a derived ver of 0 means never derived
	setsVer uint64 // ver at which wire was encoded
	// wire is the attachment of ver setsVer (see attachment), for
	// estimates of wk components and wm extremes; setsAt and deadAt are
	// where gen and the dead set start in it. Messages in flight share
	// it: it is never written to once made.
	wire           []byte
	wk, wm         int
	setsAt, deadAt int
	doneVer        uint64 // ver at which done and nLive were computed
	done           bool   // complete()
	nLive          int    // live()
	// nStable and nDead count the sets' members, kept up to date by every
	// change, so that neither encoding the sets nor deriving live and
	// complete counts them again: at 65,536 members each count is a pass
	// over 1,024 words, and the sets change on most messages while the
	// stable set fills.
	nStable, nDead int
	// deadWire is the dead set's wire form when it had deadWireN
	// members: the set only gains members, so its count names it. Every
	// change of the stable set makes a new attachment, and the dead set,
	// which changes far less often, was written anew into each (a pass
	// over n bits and a uvarint for every member: at 65,536 simulated
	// members with 655 dead, most of the 4 % of the time spent writing
	// lists).
	deadWire  []byte
	deadWireN int
}

func newCertificate(n, self, need int, theta float64) *certificate {
	return &certificate{n: n, self: self, need: need, theta: theta, stable: newBitset(n), dead: newBitset(n), ver: 1}
}

// observe compares this node's estimate with a neighbour's. Agreement within
// theta extends the streak and, once it is long enough, puts the node in the
// stable set; disagreement ends the streak and, if the node had certified
// itself, withdraws every certificate of the generation by starting a new
// one (only certified nodes need to do that: the others are not counted).
// The member machine does not call it: it also records, with block, which
// neighbour disagreed, and asks whether the node has settled, before it
// calls agreed or unsettle (Machine.step); observe is the certificate's
// rule alone, for its tests.
func (c *certificate) observe(own, peer []float64, ownExt, peerExt []float64) {
	if c.agrees(own, peer, ownExt, peerExt) {
		c.agreed()
		return
	}
	c.unsettle()
}

// block records whether a live neighbour's latest observation disagreed;
// *flag is the caller's record of that neighbour's, which block keeps.
func (c *certificate) block(flag *bool, disagrees bool) {
	switch {
	case disagrees && !*flag:
		c.blocked++
	case !disagrees && *flag:
		c.blocked--
	}
	*flag = disagrees
}

// agrees reports whether two estimates agree within theta and their
// extremes are the same.
func (c *certificate) agrees(own, peer []float64, ownExt, peerExt []float64) bool {
	return relDiff(own, peer) <= c.theta && gossip.SameBits(ownExt, peerExt)
}

// agreed extends the streak of agreeing observations and, once it is long
// enough and no neighbour's latest observation disagreed, puts the node in
// the stable set.
//
// Until 2026-11-29 any need agreeing observations in a row made the node
// stable, and so they did when all came from one neighbour whose messages
// had been on their way for a while, carrying an estimate it had left:
// 3 simulated PFCC members, messages 177 ms plus up to 236 ms late, 5 %
// lost, where two members had averaged to 639 and the third still held
// 404. The third certified itself on three late messages of the root
// that carried 404; the root certified itself on three of the second
// member's (639) just after the third's latest had disagreed; each had
// been stable for a moment, and the root proposed 639 for an exact
// average of 560.667 (trace stale_agreement.txt; 12 such wrong results
// in 120,000 small slow groups, up to 0.14 from the exact average).
func (c *certificate) agreed() {
	c.streak++
	c.settle()
}

// ready reports whether the node may call itself stable.
func (c *certificate) ready() bool { return c.streak >= c.need && c.blocked == 0 }

// settle puts the node in the stable set once it is ready.
func (c *certificate) settle() {
	if c.ready() && !c.stable.has(c.self) {
		c.stable.set(c.self)
		c.nStable++
		c.ver++
	}
}

// unsettle withdraws this node's certificate because its own state changed
// by something other than gossip (an exclusion, a repaired fault).
func (c *certificate) unsettle() {
	c.streak = 0
	if c.stable.has(c.self) {
		c.gen++
		c.stable.clear()
		c.nStable = 0
		c.ver++
	}
}

// merge folds a neighbour's certificate into this node's. It returns the
// nodes that are newly known dead. A nil set stands for an empty one.
func (c *certificate) merge(gen uint64, stable, dead bitset) []int {
	return c.mergeWire(gen, bitmapOf(stable, c.n), bitmapOf(dead, c.n))
}

// bitmapOf returns a bitset of n bits (nil: empty) in the bitmap wire form.
func bitmapOf(s bitset, n int) wireSet {
	if s == nil {
		return wireSet{form: setList}
	}
	return wireSet{form: setBitmap, body: s.appendBytes(nil, n)}
}

// mergeWire folds a neighbour's certificate, its sets in their wire form
// as decodeCert left them, into this node's. It returns the nodes that are
// newly known dead. The words are read from the attachment as they are
// merged, so that a message costs no pass to clear and fill a set of n
// bits, only the words its sets hold.
func (c *certificate) mergeWire(gen uint64, stable, dead wireSet) []int {
	if stable.same && dead.same {
		return nil
	}
	var fresh []int
	for src := dead.words(c.n); !dead.same; {
		w, word, ok := src.next()
		if !ok {
			break
		}
		add := word &^ c.dead[w]
		if add == 0 {
			continue
		}
		c.dead[w] |= add
		c.nDead += bits.OnesCount64(add)
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
		c.stable.clear()
		c.nStable = stable.orInto(c.stable, c.n) // into an empty set: a copy
		if c.ready() && !c.stable.has(c.self) {
			c.stable.set(c.self)
			c.nStable++
		}
	case gen == c.gen && c.nStable < c.n && !stable.same: // (a full set gains nothing)
		if added := stable.orInto(c.stable, c.n); added > 0 {
			c.nStable += added
			c.ver++
		}
	}
	return fresh
}

// orInto adds the set, of n nodes, to dst and returns how many members
// dst gained. It is the merge of most messages, specialized by form: a
// bitmap is read a word at a time straight from its bytes, and a
// complement fills the words between the ids it lists instead of asking
// wireWords for each word. At 65,536 simulated members with 655 dead,
// every stable set is such a complement once the group has settled, and
// wireWords was over half of what merging cost in a profile of that row
// (BenchmarkSetMerge: 6.2 µs to 4.4 µs for a complement, 1.77 to 1.53
// µs for a bitmap).
func (s wireSet) orInto(dst bitset, n int) (added int) {
	or := func(w int, word uint64) {
		if add := word &^ dst[w]; add != 0 {
			dst[w] |= add
			added += bits.OnesCount64(add)
		}
	}
	last := len(dst) - 1
	if last < 0 {
		return 0 // a group of no members: checkSet takes an empty bitmap
	}
	switch s.form {
	case setBitmap:
		b := s.body
		whole := min(len(b)/8, last) // every word but the last: unmasked
		for w := range whole {
			or(w, binary.LittleEndian.Uint64(b[8*w:]))
		}
		for w := whole; w <= last; w++ {
			var word uint64
			for i := 8 * w; i < len(b) && i < 8*(w+1); i++ {
				word |= uint64(b[i]) << (8 * (i % 8))
			}
			if w == last {
				word &= lastMask(n)
			}
			or(w, word)
		}
	case setAllBut:
		src := s.words(n) // src.pend: the next id not in the set
		w := 0
		for src.pend >= 0 {
			hole := src.pend / 64 // the next word with an id missing
			for ; w < hole; w++ {
				or(w, ^uint64(0))
			}
			word := ^uint64(0)
			for src.pend >= 0 && src.pend/64 == hole {
				word &^= 1 << (src.pend % 64)
				src.advance()
			}
			if w == last {
				word &= lastMask(n)
			}
			or(w, word)
			w++
		}
		for ; w < last; w++ {
			or(w, ^uint64(0))
		}
		if w == last {
			or(w, lastMask(n))
		}
	default:
		src := s.words(n)
		for {
			w, word, ok := src.next()
			if !ok {
				return added
			}
			or(w, word)
		}
	}
	return added
}

// lastMask keeps the bits of a set's last word that name nodes below n.
func lastMask(n int) uint64 {
	if rest := n % 64; rest != 0 {
		return 1<<rest - 1
	}
	return ^uint64(0)
}

// isDead reports whether node j is known dead. Nearly always none is, and
// nDead says so without a look at the set's words (a cache miss on most
// messages of a large simulated group).
func (c *certificate) isDead(j int) bool { return c.nDead > 0 && c.dead.has(j) }

// markDead records that node j has failed. It reports whether that is news.
func (c *certificate) markDead(j int) bool {
	if c.isDead(j) {
		return false
	}
	c.dead.set(j)
	c.nDead++
	c.ver++
	return true
}

// complete reports whether every node is stable in the current generation
// or known dead.
func (c *certificate) complete() bool {
	c.derive()
	return c.done
}

// derive brings done and nLive up to date with the sets.
func (c *certificate) derive() {
	if c.doneVer == c.ver {
		return
	}
	c.doneVer = c.ver
	c.nLive = c.n - c.nDead
	// Complete needs every node in one set or the other, so at least n
	// members between them; most changes leave fewer, and need no scan.
	c.done = c.nStable+c.nDead >= c.n && c.scanComplete()
}

func (c *certificate) scanComplete() bool {
	for w := range c.stable {
		want := ^uint64(0)
		if rest := c.n - w*64; rest < 64 {
			want = 1<<rest - 1
		}
		if (c.stable[w]|c.dead[w])&want != want {
			return false
		}
	}
	return true
}

// live is the number of nodes not known dead.
func (c *certificate) live() int {
	c.derive()
	return c.nLive
}

// root is the lowest node not known dead: the one that broadcasts.
func (c *certificate) root() int {
	for j := range c.n {
		if !c.isDead(j) {
			return j
		}
	}
	return -1
}

// mergeMax raises own to the element-wise maximum of own and peer.
func mergeMax(own, peer []float64) {
	for i := range own {
		if i < len(peer) && peer[i] > own[i] {
			own[i] = peer[i]
		}
	}
}

// relDiff is the largest relative difference of two estimates, the
// absolute one where a is zero; NaN and mismatched lengths count as +Inf.
func relDiff(a, b []float64) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	worst := 0.0
	for i := range a {
		d := math.Abs(a[i] - b[i])
		if a[i] != 0 {
			d /= math.Abs(a[i])
		}
		if !(d <= worst) { // also catches NaN
			worst = d
			if math.IsNaN(d) {
				return math.Inf(1)
			}
		}
	}
	return worst
}

// Attachment wire format, version 3:
//
//	1 byte   version (3)
//	uvarint  ver, the sender's count of changes to its sets (see below)
//	uvarint  k, the estimate's length
//	uvarint  m, the number of extremes (0 for a plain average)
//	uvarint  generation
//	uvarint  n, the group size
//	set      stable set
//	set      dead set
//
// The sender's estimate (k words) and extremes (maxima so far, m words)
// end the message's payload, after the algorithm's own words: the
// attachment holds the sets alone, so that one attachment serves every
// message its sender sends until the sets change. Most messages carry
// sets that have not changed since their sender's last message (at 16,384
// simulated members with 1 % crashes, 79 % of them, and 70 % of the
// attachments' bytes), and version 2, which carried the estimate too,
// made a new copy of the sets for each.
//
// ver grows with every change of the sender's generation, stable set or
// dead set, from 1. A certificate's sets only gain members, except that a
// newer generation replaces the stable set, and an older one is of no use
// to a receiver that merged a newer: so sets of a ver no higher than one
// already merged from the same certificate hold nothing new, and the
// receiver neither checks nor merges them unless their generation is
// newer than its own (see decodeCertAgainst for a sender that restarted).
//
// A set of the n nodes is written in the shortest of three forms, named by
// its first byte:
//
//	0  bitmap: ⌈n/8⌉ bytes, bit j of byte j/8 = node j
//	1  list: uvarint c, then c uvarint gaps (the first id; then each id
//	   minus the one before, minus one)
//	2  complement: the list form of the nodes not in the set
//
// The dead set is nearly always empty and the stable set empty until the
// end of an operation and then quickly full, so most sets take a few bytes
// where the bitmap of 65,536 members takes 8 KiB (version 1 sent two
// bitmaps always).
const certVersion = 3

const (
	setBitmap byte = iota
	setList
	setAllBut
)

var errCert = errors.New("member: malformed certificate")

// lengthError reports a certificate whose estimate has another number of
// components than this member's vectors. It wraps gossip.ErrLength.
type lengthError struct {
	theirs uint64
	ours   int
}

func (e *lengthError) Error() string {
	return fmt.Sprintf("%s: estimate of %d components, this member has %d", gossip.ErrLength, e.theirs, e.ours)
}

func (e *lengthError) Unwrap() error { return gossip.ErrLength }

// attachment returns this member's certificate in wire form, for a
// message whose payload ends with an estimate of k components and m
// extremes (appendEstimate). The slice is shared by every message sent
// until the sets change, and never written to again.
func (c *certificate) attachment(k, m int) []byte {
	if c.setsVer == c.ver && c.wk == k && c.wm == m {
		return c.wire
	}
	if c.deadWire == nil || c.deadWireN != c.nDead {
		c.deadWire = c.dead.appendCountedSet(c.deadWire[:0], c.n, c.nDead)
		c.deadWireN = c.nDead
	}
	var head [6 * binary.MaxVarintLen64]byte
	h := append(head[:0], certVersion)
	h = binary.AppendUvarint(h, c.ver)
	h = binary.AppendUvarint(h, uint64(k))
	h = binary.AppendUvarint(h, uint64(m))
	setsAt := len(h)
	h = binary.AppendUvarint(h, c.gen)
	h = binary.AppendUvarint(h, uint64(c.n))
	// The attachment is made at its exact size: the sets take up to n/4
	// bytes, and the attachments in flight are most of a large simulated
	// group's memory. A bitmap's size is known before it is written, and
	// it is written in place; a list's is not, and it is written in a
	// buffer first and copied (a bitmap written there too was copied
	// again, 8 KiB at 65,536 members, for most attachments of a large
	// group's certificate while its stable set fills).
	var b []byte
	if setForm(c.n, c.nStable) == setBitmap {
		b = make([]byte, 0, len(h)+1+(c.n+7)/8+len(c.deadWire))
		b = append(b, h...)
		b = c.stable.appendCountedSet(b, c.n, c.nStable)
	} else {
		buf := scratch.Get().(*[]byte)
		t := c.stable.appendCountedSet(append((*buf)[:0], h...), c.n, c.nStable)
		b = append(make([]byte, 0, len(t)+len(c.deadWire)), t...)
		*buf = t
		scratch.Put(buf)
	}
	deadAt := len(b)
	c.wire = append(b, c.deadWire...)
	c.setsVer, c.wk, c.wm, c.setsAt, c.deadAt = c.ver, k, m, setsAt, deadAt
	return c.wire
}

// scratch holds buffers to encode lists of an attachment in before they
// are copied to their exact size.
var scratch = sync.Pool{New: func() any { return new([]byte) }}

// appendEstimate returns a new payload: payload, then est and ext, as a
// message with a certificate carries them (see the attachment's format).
func appendEstimate(payload, est, ext []float64) []float64 {
	p := make([]float64, 0, len(payload)+len(est)+len(ext))
	p = append(p, payload...)
	p = append(p, est...)
	return append(p, ext...)
}

// own returns the wire form of this node's sets, for decodeCertAgainst to
// recognise a peer's that are the same, or nothing when that form is out
// of date (a merge since the last message sent): it is never encoded for a
// receipt alone.
func (c *certificate) own() ownSets {
	if c.setsVer != c.ver || c.wire == nil {
		return ownSets{}
	}
	return ownSets{sets: c.wire[c.setsAt:], deadAt: c.deadAt - c.setsAt}
}

// ownSets is the receiver's own sets in wire form (certificate.own): gen,
// n, the stable and the dead set.
type ownSets struct {
	sets   []byte
	deadAt int
}

// peerCert is a decoded certificate. Its sets stay in their wire form,
// checked, until they are merged (see certificate.mergeWire); est and ext
// are the words of the message's payload.
type peerCert struct {
	ver, gen     uint64
	stable, dead wireSet
	est, ext     []float64
}

// wireSet is a set of the n nodes in its wire form (see the attachment's
// format), checked by decodeCert: form is its first byte; body the
// bitmap's bytes, or the gaps of a list form; count the number of gaps.
// A set with nothing to merge (byte for byte the receiver's own, or of a
// ver already merged from its sender) is only marked same.
type wireSet struct {
	form  byte
	body  []byte
	count uint64
	same  bool
}

// decodeCert parses the certificate of a message of a group of n nodes
// whose estimates have k components and m extremes: its attachment b and
// its payload p, whose last k+m words are the sender's estimate and
// extremes. It returns the algorithm's part of the payload. It never
// panics, and allocates only for an error.
func decodeCert(b []byte, p []float64, n, k, m int, into *peerCert) ([]float64, error) {
	return decodeCertAgainst(b, p, n, k, m, receiver{}, into)
}

// receiver is what decodeCertAgainst knows of the member that receives:
// its own sets in wire form (certificate.own), its generation, and the
// highest ver of the sender's sets it has merged (0: none yet).
type receiver struct {
	own        ownSets
	gen, known uint64
}

// decodeCertAgainst is decodeCert for a receiver rc. Sets of a ver no
// higher than one already merged from the same sender hold nothing new
// (see the attachment's format) and are neither checked nor decoded,
// unless their generation is newer than the receiver's: a sender that
// restarted within the operation counts its ver from 1 again, and a
// newer generation is how it withdraws a stability its earlier self
// claimed. Skipping anything else can only leave out stable or dead
// members, which delays a certificate and never completes one. Nor are
// sets byte for byte the receiver's own checked, which most attachments
// carry once a group has settled or agrees on who died: checking and
// merging a dead set of hundreds of ids or a stable set of n bits on
// every message was most of a large simulated group's time (at 65,536
// members with 655 dead, half of it). Both are only marked same. The
// encoding is canonical (one form for a set, chosen by its size) and
// self-delimiting, so the bytes are equal exactly when the sets are.
func decodeCertAgainst(b []byte, p []float64, n, k, m int, rc receiver, into *peerCert) ([]float64, error) {
	if len(b) < 1 || b[0] != certVersion {
		return nil, fmt.Errorf("%w: version", errCert)
	}
	var head [5]uint64 // ver, k, m, gen, n
	var sets []byte    // gen, n and the sets: what own holds of this member's
	b = b[1:]
	for i := range head {
		if i == 3 {
			sets = b
		}
		var ok bool
		if head[i], b, ok = uvarint(b); !ok {
			return nil, fmt.Errorf("%w: header truncated", errCert)
		}
	}
	ver, gotK, gotM, gen, gotN := head[0], head[1], head[2], head[3], head[4]
	switch {
	case gotN != uint64(n): // another group before another vector length
		return nil, fmt.Errorf("%w: %w: group of %d, this node's has %d", errCert, gossip.ErrForeignMessage, gotN, n)
	case gotK != uint64(k):
		return nil, fmt.Errorf("%w: %w", errCert, &lengthError{theirs: gotK, ours: k})
	case gotM != uint64(m):
		return nil, fmt.Errorf("%w: %w: %d extremes, this node has %d", errCert, gossip.ErrLength, gotM, m)
	case ver == 0: // a certificate's ver starts at 1
		return nil, fmt.Errorf("%w: version of the sets 0", errCert)
	case len(p) < k+m:
		return nil, fmt.Errorf("%w: payload of %d words, want at least %d for the estimate and extremes", errCert, len(p), k+m)
	}
	rest := len(p) - k - m
	into.ver, into.gen = ver, gen
	into.est, into.ext = p[rest:rest+k:rest+k], p[rest+k:]
	own := rc.own
	if (ver <= rc.known && gen <= rc.gen) || (len(own.sets) > 0 && bytes.Equal(sets, own.sets)) {
		into.stable, into.dead = wireSet{same: true}, wireSet{same: true}
		return p[:rest:rest], nil
	}
	var err error
	if into.stable, b, err = checkSet(b, n); err != nil {
		return nil, fmt.Errorf("%w: stable set: %w", errCert, err)
	}
	if dead := own.sets[own.deadAt:]; len(dead) > 0 && bytes.Equal(b, dead) {
		into.dead = wireSet{same: true}
		b = nil
	} else if into.dead, b, err = checkSet(b, n); err != nil {
		return nil, fmt.Errorf("%w: dead set: %w", errCert, err)
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the sets", errCert, len(b))
	}
	return p[:rest:rest], nil
}

// uvarint reads a uvarint from the front of b and returns what follows.
func uvarint(b []byte) (uint64, []byte, bool) {
	v, w := binary.Uvarint(b)
	if w <= 0 {
		return 0, b, false
	}
	return v, b[w:], true
}

// bitset is a set of node ids.
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (s bitset) set(i int)      { s[i/64] |= 1 << (i % 64) }
func (s bitset) has(i int) bool { return s[i/64]&(1<<(i%64)) != 0 }
func (s bitset) clear()         { clear(s) }

// clear1 removes i; on a nil set, which stands for an empty one, it does
// nothing.
func (s bitset) clear1(i int) {
	if s != nil {
		s[i/64] &^= 1 << (i % 64)
	}
}

// members lists the ids in the set, below n, in increasing order.
func (s bitset) members(n int) []gossip.NodeID {
	var out []gossip.NodeID
	for w, word := range s {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			word &^= 1 << b
			if w*64+b >= n {
				return out
			}
			out = append(out, gossip.NodeID(w*64+b))
		}
	}
	return out
}

func (s bitset) count() int {
	c := 0
	for _, w := range s {
		c += bits.OnesCount64(w)
	}
	return c
}

func (s bitset) appendBytes(dst []byte, n int) []byte {
	nb := (n + 7) / 8
	w := 0
	for ; 8*(w+1) <= nb; w++ {
		dst = binary.LittleEndian.AppendUint64(dst, s[w])
	}
	for i := 8 * w; i < nb; i++ {
		dst = append(dst, byte(s[i/8]>>(8*(i%8))))
	}
	return dst
}

// appendSet writes the set of n nodes in its shortest form (see the
// attachment's wire format).
func (s bitset) appendSet(dst []byte, n int) []byte {
	return s.appendCountedSet(dst, n, s.count())
}

// appendCountedSet is appendSet for a set of c members.
func (s bitset) appendCountedSet(dst []byte, n, c int) []byte {
	switch setForm(n, c) {
	case setList:
		dst = append(dst, setList)
		return s.appendList(dst, n, c, false)
	case setAllBut:
		dst = append(dst, setAllBut)
		return s.appendList(dst, n, n-c, true)
	}
	dst = append(dst, setBitmap)
	return s.appendBytes(dst, n)
}

// setForm is the form a set of c of the n nodes is written in: a list
// when it is shorter than the bitmap even at the longest gaps, else the
// list of the nodes not in it when that is, else the bitmap.
func setForm(n, c int) byte {
	per := uvarintLen(uint64(n)) // bytes per gap, at most
	bitmap := (n + 7) / 8
	switch {
	case 1+c*per < bitmap:
		return setList
	case 1+(n-c)*per < bitmap:
		return setAllBut
	}
	return setBitmap
}

// appendList writes the c ids of the set (of its complement, if
// complement) below n as a count and gaps.
func (s bitset) appendList(dst []byte, n, c int, complement bool) []byte {
	dst = binary.AppendUvarint(dst, uint64(c))
	next := 0 // the id a gap of zero stands for
	for w, word := range s {
		if c == 0 {
			break // every id written: the words left hold none
		}
		if complement {
			word = ^word
		}
		for word != 0 {
			b := bits.TrailingZeros64(word)
			word &^= 1 << b
			id := w*64 + b
			if id >= n {
				break
			}
			dst = binary.AppendUvarint(dst, uint64(id-next))
			next = id + 1
			c--
		}
	}
	return dst
}

// uvarintLen is the length of v's uvarint encoding.
func uvarintLen(v uint64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], v)
}

var errSet = errors.New("bad set")

// readSet parses a set of n nodes written by appendSet, reusing into, and
// returns what follows it. It never panics, and loops at most once per
// byte of b or per word of the set.
func readSet(b []byte, n int, into bitset) (bitset, []byte, error) {
	ws, rest, err := checkSet(b, n)
	if err != nil {
		return into, nil, err
	}
	return ws.bitset(n, into), rest, nil
}

// checkSet checks a set of n nodes written by appendSet and returns it in
// its wire form, and what follows it. It never panics, and loops at most
// once per byte of b.
func checkSet(b []byte, n int) (wireSet, []byte, error) {
	if len(b) < 1 {
		return wireSet{}, nil, fmt.Errorf("%w: truncated", errSet)
	}
	form, b := b[0], b[1:]
	switch form {
	case setBitmap:
		nb := (n + 7) / 8
		if len(b) < nb {
			return wireSet{}, nil, fmt.Errorf("%w: bitmap truncated", errSet)
		}
		return wireSet{form: form, body: b[:nb]}, b[nb:], nil
	case setList, setAllBut:
	default:
		return wireSet{}, nil, fmt.Errorf("%w: form %d", errSet, form)
	}
	c, w := binary.Uvarint(b)
	if w <= 0 || c > uint64(n) || c > uint64(len(b)-w) {
		return wireSet{}, nil, fmt.Errorf("%w: count", errSet)
	}
	b = b[w:]
	body := b
	next := uint64(0)
	for range c {
		gap, w := binary.Uvarint(b)
		if w <= 0 || gap >= uint64(n)-next {
			return wireSet{}, nil, fmt.Errorf("%w: id out of range", errSet)
		}
		b = b[w:]
		next += gap + 1
	}
	return wireSet{form: form, body: body[:len(body)-len(b)], count: c}, b, nil
}

// bitset returns the set as a bitset of n bits, reusing into.
func (s wireSet) bitset(n int, into bitset) bitset {
	into = into.fromBytes(nil, n)
	src := s.words(n)
	for {
		w, word, ok := src.next()
		if !ok {
			return into
		}
		into[w] = word
	}
}

// words yields the words of a set of n nodes that decodeCert checked: a
// bitmap's and a complement's every word, a list's only those it names.
func (s wireSet) words(n int) wireWords {
	r := wireWords{form: s.form, b: s.body, left: s.count, n: n, nw: (n + 63) / 64, pend: -1}
	if s.form != setBitmap {
		r.advance()
	}
	return r
}

// wireWords reads a wireSet word by word (see wireSet.words).
type wireWords struct {
	form  byte
	b     []byte // the bitmap's bytes, or the gaps not read yet
	left  uint64 // gaps not read yet
	n, nw int    // nodes and words of the set
	w     int    // the next word of a bitmap or complement
	pend  int    // the next id of a list, -1 once there is none
	after int    // the id a gap of zero stands for
}

// advance reads the next id of a list into pend.
func (r *wireWords) advance() {
	if r.left == 0 {
		r.pend = -1
		return
	}
	gap, w := binary.Uvarint(r.b)
	r.b = r.b[w:]
	r.left--
	r.pend = r.after + int(gap)
	r.after = r.pend + 1
}

func (r *wireWords) next() (int, uint64, bool) {
	switch r.form {
	case setList:
		if r.pend < 0 {
			return 0, 0, false
		}
		w := r.pend / 64
		var word uint64
		for r.pend >= 0 && r.pend/64 == w {
			word |= 1 << (r.pend % 64)
			r.advance()
		}
		return w, word, true
	case setAllBut:
		if r.w >= r.nw {
			return 0, 0, false
		}
		w := r.w
		r.w++
		word := ^uint64(0)
		for r.pend >= 0 && r.pend/64 == w {
			word &^= 1 << (r.pend % 64)
			r.advance()
		}
		return w, word & r.mask(w), true
	}
	// setBitmap
	if r.w >= r.nw {
		return 0, 0, false
	}
	w := r.w
	r.w++
	var word uint64
	if 8*(w+1) <= len(r.b) {
		word = binary.LittleEndian.Uint64(r.b[8*w:])
	} else {
		for i := 8 * w; i < len(r.b); i++ {
			word |= uint64(r.b[i]) << (8 * (i % 8))
		}
	}
	return w, word & r.mask(w), true
}

// mask keeps the bits of word w that name nodes below n.
func (r *wireWords) mask(w int) uint64 {
	if rest := r.n - 64*w; rest < 64 {
		return 1<<rest - 1
	}
	return ^uint64(0)
}

// fromBytes fills a set of n bits from its byte form, reusing s; bits at
// or beyond n are ignored.
func (s bitset) fromBytes(b []byte, n int) bitset {
	words := (n + 63) / 64
	if cap(s) < words {
		s = make(bitset, words)
	}
	s = s[:words]
	clear(s)
	w := 0
	for ; 8*(w+1) <= len(b) && w < words; w++ {
		s[w] = binary.LittleEndian.Uint64(b[8*w:])
	}
	for i := 8 * w; i < len(b) && i/8 < words; i++ {
		s[i/8] |= uint64(b[i]) << (8 * (i % 8))
	}
	if rest := n % 64; rest != 0 {
		s[words-1] &= 1<<rest - 1
	}
	return s
}
