// Package exchange implements dimension exchange: the schedule of recursive
// doubling (package rdb), made to survive lost and corrupted messages, as a
// pure machine that the simulator and the live runtime drive like the
// gossip algorithms.
//
// For N = 2^d, in step k = 0 … d-1 node i sends its partial sums (x…, w) to
// node i XOR 2^k and adds the partner's; after d steps every node holds
// Σx and Σw of the whole group. Other N fold the extra ranks in and out as
// rdb does. Both partners of a step add the same two partials, and IEEE
// addition is commutative, so every node ends with the same bits: no
// convergence certificate and no result broadcast are needed.
//
// What recursive doubling lacks, this package adds:
//
//   - Every message carries a 64-bit hash of its header and payload (two
//     payload words, each an exact integer below 2^32). A message whose hash
//     does not match is never added: it is dropped, counted, and its sender
//     asked at once to send its stored copy again. A change of any one word,
//     however many of its bits flipped, always changes the hash (each word
//     goes through a bijective mix before the words are added); changes to
//     several words escape with probability about 2^-64.
//   - The state (the partial sums, the words an SDC injector can reach) is
//     hashed too and checked before every use (the words a step sends or
//     adds to, and the whole state before it is taken as the result); a
//     state that fails is rebuilt from the input and the verified partials
//     received, so a flip of the state is repaired, never sent on.
//   - A node keeps every step message it sent. A node that waits for a step
//     sends its own message of that step again with an ask flag (or, in a
//     fold step where it has none, an empty ask), after a timeout that
//     doubles with each try (two driver calls spent waiting, then 4, 8, 16); a partner that has moved on, or finished,
//     answers from its stored copy. Nothing is ever sent that was not sent
//     before: silence never adds mass.
//
// In a hypercube every member of a subcube holds the same partial sums
// once it has done the steps inside the subcube: in step k a node needs
// the partial of its partner's subcube of 2^k ranks, and any member of that
// subcube has sent exactly those bits to its own partner. So a node whose
// partner stays silent (it died after contributing, or it is merely slow)
// asks, from its third ask on, the partner's subcube members in turn and,
// between them, the other nodes in turn for the result, and takes
// whichever answer comes first; a folded rank waiting for the result asks
// every node in turn. Any finished node answers for the result (which
// helps when the partner's whole subcube is dead). Every answer is a copy
// of bits the schedule computed anyway, so the result keeps its bits and
// still covers every input, the dead node's too.
//
// What cannot be asked for is an input that never left its node: a node
// that dies before its first send (and, when it folds in, its partner
// for the steps after) stalls the exchange. The runtime (package member)
// then hands the operation to PFCC, and the first pass's result must not
// be returned by some members while the others decide another value. So
// the exchange has two passes:
//
//   - The first pass is recursive doubling, as above. A node that ends it
//     holds the result R and accepts it (in the runtime's Paxos, at the
//     lowest ballot; see Accepted) unless Refuse came first.
//   - The second pass runs the hypercube steps again with small messages:
//     the hash of R and the number of the subcube's nodes that vouch for
//     it (2^k at most in step k; subcubes are disjoint, so the counts
//     add). A node whose count reaches a majority of the group knows that
//     R is chosen and is done; its folded neighbour gets R from it after
//     that. A vouch for another hash stops the node (Mismatch). A vouch
//     asked for around the partner's subcube in vain is counted as none
//     (skipAfter), which may leave too few: no node is done, and the
//     runtime falls back.
//
// Fault-free, a node sends 2·⌊log2 N⌋ messages (plus one folded), half of
// them three words long, and every node returns R with no certificate and
// no broadcast.
//
// NewChunked builds the same machine on another first pass, recursive
// halving and doubling, for large vectors: each member sends about twice
// its vector in all instead of log2 N times; see NewChunked for what it
// gives up.
package exchange

import (
	"fmt"
	"iter"
	"math"
	"math/bits"
	"slices"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/rdb"
	"github.com/gossipreduce/gossipreduce/rhd"
	"github.com/gossipreduce/gossipreduce/ring"
)

// Tag flags, above every step number (rdb's step tags are below 1<<21).
const (
	flagAsk    = 1 << 40 // send me your message of this step (again)
	flagEmpty  = 1 << 41 // this message carries no partial, only the ask
	flagVouch  = 1 << 42 // a step of the second pass: the hash of the result, no partial
	flagChosen = 1 << 43 // a result (fold-out) from a node that finished the second pass
	stepMask   = 1<<40 - 1

	// lenShift is where a chunked exchange's tags carry the length of its
	// vectors (lenTag, 20 bits from here, lenMask): two members whose
	// vectors differ in length may cut halves of the same length, which
	// must never be added. Plain exchange leaves these bits zero.
	lenShift = 44
	lenMask  = 1<<20 - 1
)

// alternateFrom is the ask from which a waiting node turns to nodes other
// than its partner: the partner has let two asks go unanswered.
const alternateFrom = 2

// maxBackoff caps the doubling of the resend timeout, in driver calls.
const maxBackoff = 8

// Counters are what the machine did beyond the schedule itself.
type Counters struct {
	// Resends counts step messages (or empty asks) sent again after a
	// timeout, asking the partner for its own.
	Resends int
	// Answers counts stored step messages sent again because a partner
	// asked for them.
	Answers int
	// Corrupt counts received messages whose hash did not match: dropped,
	// and their sender asked again.
	Corrupt int
	// Repairs counts times the state failed its hash and was rebuilt from
	// the input and the partials received.
	Repairs int
	// Duplicates counts partials received for a step already held, and
	// results that this node could not use.
	Duplicates int
	// Skipped counts steps of the second pass that went on without a
	// vouch for the partner's subcube, after asking it around.
	Skipped int
	// Conflicts counts results offered to a node that refused, which
	// differ from the first one offered, the one it keeps (see Offered):
	// only a corruption that escaped the hash, or a forged message, makes
	// two.
	Conflicts int
}

// Machine is one node of dimension exchange.
type Machine struct {
	id    gossip.NodeID
	n     int
	k     int // value components
	e     int // extremes, after the weight in the state and the partials
	epoch uint64
	plan  []rdb.Step
	rng   [][2][2]int // chunked (NewChunked): per step the words sent and received, [lo, hi); nil: whole vectors
	wtag  uint64      // chunked: the vector's length in every tag from lenShift (lenTag), never 0
	cut   bool        // built by NewChunked, whether or not its vectors were long enough to cut
	p1    int         // index into plan where the first pass ends (-1: a folded rank, which never accepts)
	p2    int         // index into plan where the second pass ends: from here on the result is chosen

	input []float64 // x…, w, e… as given, to rebuild the state from
	y     []float64 // partial sums x…, w and maxima e… after the steps done so far
	yHash uint64    // hashWords(y), to tell a flipped state: the sum of sh
	cuts  []int     // the slices the state's hash is kept by: slice j is y[cuts[j]:cuts[j+1]] (chunked: the ranks' slices; else one)
	sh    []uint64  // per slice, its words' share of yHash (hashWords adds over words)

	next    int         // index into plan of the step under way
	sent    [][]float64 // per step: what this node sent (a vouch, the fold-out), sentPartial for a partial of the first pass (see sentPayload), nil before
	got     [][]float64 // per step: the partner's verified partial or vouch, nil before
	jump    []float64   // the result, taken from another node instead of the steps left
	started bool

	accepted bool      // the first pass ended here: y is the result R, which this node vouches for
	rHash    uint64    // hashWords(R), what the second pass compares
	vouched  int       // hypercube nodes known to have accepted R, in this node's subcube so far
	short    bool      // the second pass ended with fewer than a majority vouched for
	refused  bool      // Refuse was called: never accept from now on
	offered  []float64 // a result R sent by a node that accepted it, to this node that refused (see Offered)
	final    bool      // the second pass ended (or a chosen result came): R is chosen
	mismatch bool      // a node vouched for another result than this node's
	progress int

	rank    int // this node's rank in the hypercube (rdb.Rank; -1: it folds in)
	ticks   int // driver calls spent waiting in this step
	backoff int // half the calls to wait before the next resend
	tries   int // asks sent in this step
	cnt     Counters
}

// New builds the exchange machine of node cfg.ID among cfg.Overlay.Len()
// nodes. As for rdb, the overlay's edges are not used: only the node count
// matters.
func New(cfg gossip.Config) (*Machine, error) { return build(cfg, false) }

// NewChunked builds the chunked exchange machine of node cfg.ID: the first
// pass runs recursive halving and doubling (package rhd) instead of
// recursive doubling, so each rank adds the partners' terms of one slice
// of the vector only and the all-gather copies the slices' sums. A node
// sends about 2 (N−1)/N of its vector in 2 log2 N messages instead of
// log2 N whole vectors: the ring's bytes, for large vectors.
//
// The hashes, the state's repair, the stored messages, the resends and the
// second pass are exchange's. What chunking gives up is the asking around:
// a rank's partial of a step is held by that rank alone (the members of a
// subcube hold different slices), so a silent partner is asked again, and
// in between the other nodes are asked for the result, but a partner that
// died after the reduce-scatter began stalls the first pass, and the
// runtime falls back as it does for an input lost with its node.
//
// Vectors (components, weight and extremes) of fewer words than the
// hypercube's 2^⌊log2 N⌋ ranks have nothing to cut: the machine then runs
// the plain schedule of New, which every node of the group decides alike.
func NewChunked(cfg gossip.Config) (*Machine, error) { return build(cfg, true) }

func build(cfg gossip.Config, chunked bool) (*Machine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := cfg.Overlay.Len()
	w := len(cfg.Value) + 1 + len(cfg.Extremes)
	var plan []rdb.Step
	var rng [][2][2]int
	if chunked && w >= 1<<(bits.Len(uint(n))-1) {
		plan, rng = chunkedPlan(int(cfg.ID), n, w)
	} else {
		plan = rdb.Schedule(int(cfg.ID), n)
	}
	rank := rdb.Rank(int(cfg.ID), n)
	p1, p2 := -1, len(plan)
	if rank >= 0 {
		// The second pass runs the hypercube steps again, before the
		// fold-out a folded neighbour waits for.
		p1 = len(plan)
		if p1 > 0 && plan[p1-1].Tag == rdb.TagFoldOut {
			p1--
		}
		var vouch []rdb.Step
		for k := range bits.Len(uint(n)) - 1 {
			peer := rdb.Node(rank^1<<k, n)
			vouch = append(vouch, rdb.Step{Tag: flagVouch | uint64(k+1), SendTo: peer, RecvFrom: peer})
		}
		plan = slices.Insert(plan, p1, vouch...)
		if rng != nil {
			rng = slices.Insert(rng, p1, make([][2][2]int, len(vouch))...)
		}
		p2 = p1 + len(vouch)
	}
	input := append(append(append([]float64(nil), cfg.Value...), cfg.Weight()), cfg.Extremes...)
	m := &Machine{
		id: cfg.ID, n: n, k: len(cfg.Value), e: len(cfg.Extremes), epoch: cfg.Epoch, plan: plan, rng: rng, p1: p1, p2: p2,
		input: input, y: append([]float64(nil), input...),
		sent: make([][]float64, len(plan)), got: make([][]float64, len(plan)),
		backoff: 1, rank: rank,
	}
	m.cuts, m.cut = []int{0, w}, chunked
	if rng != nil {
		m.wtag = lenTag(w)
		p := 1 << (bits.Len(uint(n)) - 1)
		m.cuts = make([]int, p+1)
		for j := range p {
			m.cuts[j], m.cuts[j+1] = ring.Slice(j, w, p)
		}
	}
	m.sh = make([]uint64, len(m.cuts)-1)
	m.rehash(0, w)
	return m, nil
}

// chunkedPlan is rhd's schedule of node id among n nodes for vectors of w
// words, as steps of the exchange (the fold steps keep rdb's tags) and the
// ranges each sends and receives.
func chunkedPlan(id, n, w int) ([]rdb.Step, [][2][2]int) {
	last := 2*(bits.Len(uint(n))-1) + 1 // rhd's fold-out
	var plan []rdb.Step
	var rng [][2][2]int
	for _, s := range rhd.Schedule(id, n, w) {
		st := rdb.Step{Tag: uint64(s.Tag), SendTo: -1, RecvFrom: -1, Replace: s.Replace}
		if s.Tag == last {
			st.Tag = rdb.TagFoldOut
		}
		if s.Send[1] > s.Send[0] {
			st.SendTo = s.Peer
		}
		if s.Recv[1] > s.Recv[0] {
			st.RecvFrom = s.Peer
		}
		plan = append(plan, st)
		rng = append(rng, [2][2]int{s.Send, s.Recv})
	}
	return plan, rng
}

// lenTag is what a chunked exchange's tags say of its vectors of w words:
// w modulo 2^20−1, plus one, so that it is never the zero of plain
// exchange's tags (vectors whose lengths differ by a multiple of 2^20−1
// are told apart by their messages' payload lengths instead, which then
// differ by at least (2^20−1)/2^⌊log2 N⌋ words: by one at a million
// ranks).
func lenTag(w int) uint64 { return uint64(w)%lenMask + 1 }

// partnerOnly reports whether only the partner holds what a step with tag
// carries: a partial of a chunked first pass.
func (m *Machine) partnerOnly(tag uint64) bool {
	return m.rng != nil && tag&flagVouch == 0 && cubeStep(tag) >= 0
}

// cubeStep returns the hypercube step (0 …) that tag names, in either
// pass, or -1 for the fold steps.
func cubeStep(tag uint64) int {
	if tag == rdb.TagFoldIn || tag == rdb.TagFoldOut {
		return -1
	}
	return int(tag&stepMask) - 1
}

// width is the number of words a step's message carries before its hash:
// a partial (values, weight and extremes; in a chunked first pass the
// range this node receives in the step, in, or sends, !in), or the
// result's hash in the second pass. A partner's send is this node's
// receive, so both ends agree, empty asks included.
func (m *Machine) width(tag uint64, in bool) int {
	if tag&flagVouch != 0 {
		return 3
	}
	if m.partnerOnly(tag) {
		if i := m.stepOf(tag); i >= 0 {
			r := m.rng[i][0]
			if in {
				r = m.rng[i][1]
			}
			return r[1] - r[0]
		}
	}
	return m.k + 1 + m.e
}

// at returns where in the state the words received in step i go.
func (m *Machine) at(i int) int { return m.recvRange(i)[0] }

// stepOf returns the index into the plan of the step with tag, or -1.
func (m *Machine) stepOf(tag uint64) int {
	for i, s := range m.plan {
		if s.Tag == tag {
			return i
		}
	}
	return -1
}

// supplies reports whether node from holds the partial this node needs in
// step k of the hypercube: it is in the partner's subcube of 2^k ranks.
func (m *Machine) supplies(from, k int) bool {
	r := rdb.Rank(from, m.n)
	return r >= 0 && m.rank >= 0 && r>>k == (m.rank>>k)^1
}

// ID returns the node this machine runs.
func (m *Machine) ID() gossip.NodeID { return m.id }

// Counters returns what the machine has done so far beyond the schedule.
func (m *Machine) Counters() Counters { return m.cnt }

// Tick starts the exchange; later ticks count time waited in a step, and
// the second one spent waiting sends the step's message again with an ask,
// then the 4th, 8th and every 16th after that (a simulator ticks
// periodically, about every two message latencies, so a partner merely a
// step behind is not asked). A node told of another result asks for
// nothing; one refused before its first pass ended asks the other nodes in
// turn, at the longest timeout, for the chosen result only (its runtime has
// fallen back, and a result chosen meanwhile is the one the fallback must
// end with).
func (m *Machine) Tick(out []gossip.Message) []gossip.Message {
	if !m.started {
		m.started = true
		return m.advance(out)
	}
	if m.final || m.mismatch {
		return out
	}
	m.ticks++
	if m.ticks < 2*m.backoff {
		return out
	}
	m.ticks = 0
	if m.refused && !m.accepted {
		m.backoff = maxBackoff
	}
	if m.short || m.refused && !m.accepted {
		// Every step is done, with too few vouched for, or the node will
		// not go on: only a node that is done can end its wait, with the
		// chosen result.
		m.backoff = min(2*m.backoff, maxBackoff)
		m.tries++
		m.cnt.Resends++
		return append(out, m.message(m.other(m.tries), rdb.TagFoldOut|flagAsk|flagEmpty, nil))
	}
	s := m.plan[m.next]
	if k := cubeStep(s.Tag); s.Tag&flagVouch != 0 && m.got[m.next] == nil && m.tries >= skipAfter(k) {
		// Nobody vouches for the partner's subcube: count none of it.
		m.got[m.next] = []float64{float64(m.rHash >> 32), float64(m.rHash & 0xffffffff), 0}
		m.cnt.Skipped++
		return m.advance(out)
	}
	return m.resend(out)
}

// skipAfter is the number of asks after which the second pass's step k
// goes on without a vouch for the partner's subcube: the partner has been
// asked twice and up to three of its subcube's other members once each,
// about 30 to 90 driver calls of waiting. A node that skips vouches for
// fewer nodes, never for more, so skipping is always safe; if too few are
// left, no node finishes and the runtime falls back (see Accepted).
func skipAfter(k int) int { return alternateFrom + 2*min(1<<k-1, 3) + 2 }

// Idle is the live runtime's idle step, taken when this node has sent
// nothing for a while (Idle, 4 ms by default). The second idle step spent
// waiting asks, then the 4th, 8th and every 16th after that. Asking on the
// first cost more than it saved: at 256 members in one process a step
// often waits longer than 4 ms for a partner that is merely behind, and
// every ask is answered (bench, 256 members, hypercube: 10.6–11.2 messages
// per member against 9.6–9.7, 70 ms against 58 ms), while under 5 % loss
// at 64 members waiting one idle step more costs 4 ms (18 ms against 22).
//
// The rule is Tick's, so Idle is Tick: it exists to say so, and so that the
// runtime's idle step (gossip machines that implement Idle are asked for
// it instead of Tick) is documented here.
func (m *Machine) Idle(out []gossip.Message) []gossip.Message { return m.Tick(out) }

// resend asks for what the step under way waits for, sending this node's
// own message of the step with it when there is one (an alternate in a
// hypercube step needs it as much as the partner does), and doubles the
// timeout.
func (m *Machine) resend(out []gossip.Message) []gossip.Message {
	m.backoff = min(2*m.backoff, maxBackoff)
	s := m.plan[m.next]
	to, tag := m.askee(s, m.tries)
	m.tries++
	m.cnt.Resends++
	if p := m.sent[m.next]; p != nil && s.SendTo == s.RecvFrom && tag == s.Tag {
		return append(out, m.message(to, tag|flagAsk, m.sentPayload(m.next)))
	}
	return append(out, m.message(to, tag|flagAsk|flagEmpty, nil))
}

// askee returns the node the try-th ask of step s goes to, and the tag
// to ask with: the partner for the first alternateFrom asks, then every
// other ask one of the other members of the partner's subcube in turn (a
// hypercube step of either pass; they hold the same partial, and have
// vouched for the same subcube) and, between them, one of the other nodes
// in turn for the result, which any node past its first pass has (when the
// whole subcube is dead, or a partial its members held died with them, a
// node that got it some other way may have gone on). A folded rank waiting
// for the result asks every other node in turn; a fold-in partial is only
// ever at the node that folds in.
func (m *Machine) askee(s rdb.Step, try int) (int, uint64) {
	if try < alternateFrom {
		return s.RecvFrom, s.Tag
	}
	t := try - alternateFrom
	switch k := cubeStep(s.Tag); {
	case m.partnerOnly(s.Tag) && t%2 == 0:
		return s.RecvFrom, s.Tag
	case k >= 0 && t%2 == 0:
		return rdb.Node(rdb.Rank(s.RecvFrom, m.n)^(t/2+1)%(1<<k), m.n), s.Tag
	case k >= 0:
		return m.other(t/2 + 1), rdb.TagFoldOut
	case s.Tag == rdb.TagFoldOut:
		return m.other(t + 1), s.Tag
	}
	return s.RecvFrom, s.Tag
}

// other returns the j-th node in turn of every node but this one.
func (m *Machine) other(j int) int { return (int(m.id) + 1 + j%(m.n-1)) % m.n }

// Step takes a partner's message. Partials may arrive before the step they
// belong to; they wait. A message whose hash does not match is dropped and
// its sender asked again. A message that is not part of this node's
// schedule (another kind, epoch, recipient, a partner or step it does not
// have) is rejected with an error and changes nothing.
func (m *Machine) Step(msg gossip.Message, out []gossip.Message) ([]gossip.Message, error) {
	if err := gossip.CheckHeader(msg, gossip.KindExchange, m.epoch, m.id); err != nil {
		return out, fmt.Errorf("exchange: %w", err)
	}
	mt := msg.Tag // the tag without a chunked exchange's length
	if m.cut {
		mt &^= lenMask << lenShift
	}
	tag := mt & (stepMask | flagVouch)
	ask, carries, chosen := mt&flagAsk != 0, mt&flagEmpty == 0, mt&flagChosen != 0
	switch {
	case int64(msg.From) >= int64(m.n) || msg.From == m.id:
		return out, fmt.Errorf("exchange: %w: node %d", gossip.ErrUnknownPeer, msg.From)
	case mt&^(stepMask|flagAsk|flagEmpty|flagVouch|flagChosen) != 0 || !carries && !ask ||
		chosen && (tag != rdb.TagFoldOut || ask) || tag&flagVouch != 0 && cubeStep(tag) < 0:
		return out, fmt.Errorf("exchange: %w: tag %#x", gossip.ErrForeignMessage, msg.Tag)
	case m.cut && msg.Tag>>lenShift != m.wtag:
		// A chunked exchange's vectors, of another length (0: one too
		// short to cut, which runs the plain schedule).
		return out, fmt.Errorf("exchange: %w: node %d's vectors are of another length than this node's %d words (length tags %d and %d)", gossip.ErrLength, msg.From, len(m.y), msg.Tag>>lenShift, m.wtag)
	case len(msg.Payload) != m.width(tag, true)+2:
		return out, fmt.Errorf("exchange: %w: payload has %d words, want %d", gossip.ErrLength, len(msg.Payload), m.width(tag, true)+2)
	}
	from := int(msg.From)
	idx := m.stepOf(tag)
	recv := -1 // the step whose partial or vouch the message carries
	if carries && idx >= 0 && m.plan[idx].RecvFrom >= 0 && m.takesFrom(idx, from) {
		recv = idx
	}
	result := carries && tag == rdb.TagFoldOut // the result: a fold-out, or an answer for it
	if carries && recv < 0 && !result || ask && !m.answers(idx, tag, from) {
		return out, fmt.Errorf("exchange: %w: step %#x from %d is not in node %d's schedule", gossip.ErrForeignMessage, tag, from, m.id)
	}
	if !m.verify(msg) {
		m.cnt.Corrupt++
		if recv >= 0 && m.got[recv] == nil {
			out = append(out, m.message(from, tag|flagAsk|flagEmpty, nil))
		}
		return out, nil
	}
	if c := msg.Payload[2]; tag&flagVouch != 0 && carries && !(c >= 0 && c <= float64(int(1)<<cubeStep(tag)) && c == math.Trunc(c)) {
		return out, fmt.Errorf("exchange: %w: a vouch for %v nodes of %d", gossip.ErrForeignMessage, c, 1<<cubeStep(tag))
	}
	m.started = true
	switch {
	case result:
		m.takeResult(msg.Payload[:m.k+1+m.e], chosen)
	case recv >= 0 && (m.got[recv] != nil || recv < m.next):
		m.cnt.Duplicates++
	case recv >= 0:
		m.got[recv] = append([]float64(nil), msg.Payload[:m.width(tag, true)]...)
	}
	if ask {
		out = m.answer(out, idx, tag, from)
	}
	return m.advance(out), nil
}

// takeResult takes the result from another node. A chosen one ends the
// operation here (after the fold-out this node still owes its folded
// neighbour); one that is not chosen yet (its sender has only finished
// the first pass) replaces a first pass this node could not finish, and
// the second pass follows. A folded rank, which does not vouch, waits for
// a chosen one. A result that differs from the one this node holds is a
// disagreement that only a corrupted state escaping its hash can cause:
// this node stops (see Mismatch).
func (m *Machine) takeResult(p []float64, chosen bool) {
	switch {
	case !m.final && !chosen && (m.refused && !m.accepted || m.p1 < 0):
		// Not for this node to accept (it refused, or it is a folded
		// rank, which never accepts), but for its runtime to know (see
		// Offered): a folded rank whose runtime fell back but has not
		// refused yet keeps it too. The first one stays: two different
		// ones take a corruption that escaped the hash.
		switch {
		case m.offered == nil:
			m.offered = append([]float64(nil), p...)
		case !gossip.SameBits(m.offered, p):
			m.cnt.Conflicts++
		}
		return
	case m.final, !chosen && (m.p1 < 0 || m.accepted || m.refused):
		m.cnt.Duplicates++
		return
	}
	m.check() // a flipped state is no disagreement
	if m.accepted && !gossip.SameBits(p, m.y) {
		m.mismatch = true
		return
	}
	m.jump = append([]float64(nil), p...)
	copy(m.y, m.jump)
	m.rehash(0, len(m.y))
	m.progress++
	if !chosen {
		m.next = m.p1
		m.ticks, m.backoff, m.tries = 0, 1, 0
		return
	}
	if !m.refused && m.p1 >= 0 && !m.accepted {
		m.accepted, m.rHash = true, m.yHash
	}
	m.final, m.short = true, false
	// Skip to the end, or to the fold-out this node still owes its folded
	// neighbour (advance sends it).
	m.next = len(m.plan)
	if last := len(m.plan) - 1; last >= 0 && m.plan[last].Tag == rdb.TagFoldOut && m.plan[last].SendTo >= 0 && m.sent[last] == nil {
		m.next = last
	}
	m.ticks, m.backoff, m.tries = 0, 1, 0
}

// answer sends what node from asked for: the stored message of step idx,
// or the result (chosen or not) when this node has one.
func (m *Machine) answer(out []gossip.Message, idx int, tag uint64, from int) []gossip.Message {
	switch {
	case tag == rdb.TagFoldOut && m.final:
		m.check()
		m.cnt.Answers++
		return append(out, m.message(from, tag|flagChosen, m.y))
	case tag == rdb.TagFoldOut && m.accepted:
		m.check()
		m.cnt.Answers++
		return append(out, m.message(from, tag, m.y))
	case tag != rdb.TagFoldOut && m.sent[idx] != nil:
		m.cnt.Answers++
		return append(out, m.message(from, tag, m.sentPayload(idx)))
	}
	return out
}

// takesFrom reports whether node from may supply the partial of step idx:
// in a hypercube step any member of the partner's subcube holds it (and in
// the second pass has vouched for the same nodes), the fold-in's only the
// node that folds in.
func (m *Machine) takesFrom(idx, from int) bool {
	s := m.plan[idx]
	if k := cubeStep(s.Tag); k >= 0 && !m.partnerOnly(s.Tag) {
		return m.supplies(from, k)
	}
	return from == s.RecvFrom
}

// answers reports whether node from may ask this node for its message of
// the step with tag (idx in the plan, or -1): the nodes it may supply in a
// hypercube step, its fold-in partner, and anybody for the result.
func (m *Machine) answers(idx int, tag uint64, from int) bool {
	switch k := cubeStep(tag); {
	case tag == rdb.TagFoldOut:
		return true
	case idx < 0:
		return false
	case k >= 0 && !m.partnerOnly(tag):
		return m.supplies(from, k)
	}
	return m.plan[idx].SendTo == from
}

// advance runs the schedule as far as the received partials allow. The
// send of a step goes out before its receive is awaited, which is what
// makes an exchange. At the end of the first pass the node takes its sums
// as the result R (unless Refuse came first, when it stops there); the
// second pass sends hash(R) over the same hypercube steps, and a node
// whose partner vouches for another hash stops.
func (m *Machine) advance(out []gossip.Message) []gossip.Message {
	for {
		if m.next == m.p1 && !m.accepted {
			if m.refused {
				return out
			}
			m.check()
			m.accepted, m.rHash, m.vouched = true, m.yHash, 1
		}
		if m.next >= len(m.plan) {
			break
		}
		if m.next == m.p2 && m.p1 >= 0 && !m.final {
			if m.vouched < m.n/2+1 {
				m.short = true
				return out
			}
			m.final = true
		}
		s := m.plan[m.next]
		if s.SendTo >= 0 && m.sent[m.next] == nil {
			tag := s.Tag
			var p []float64
			switch {
			case s.Tag&flagVouch != 0:
				p = []float64{float64(m.rHash >> 32), float64(m.rHash & 0xffffffff), float64(m.vouched)}
				m.sent[m.next] = p
			case s.Tag == rdb.TagFoldOut, m.jump != nil:
				m.check()
				if s.Tag == rdb.TagFoldOut {
					tag |= flagChosen
				}
				p = append([]float64(nil), m.y...)
				m.sent[m.next] = p
			default:
				// The words sent as they are now, after the check, are
				// what the input and the partials received so far
				// rebuild: keep a mark, not a copy (see sentPayload),
				// and send them as checked (sentPayload would hash them
				// again).
				r := m.sendRange(m.next)
				m.checkRange(r)
				m.sent[m.next] = sentPartial
				p = m.y[r[0]:r[1]]
			}
			out = append(out, m.message(s.SendTo, tag, p))
		}
		if s.RecvFrom >= 0 {
			got := m.got[m.next]
			if got == nil {
				return out
			}
			if s.Tag&flagVouch != 0 {
				if uint64(got[0])<<32|uint64(got[1]) != m.rHash {
					m.mismatch = true
					return out
				}
				m.vouched += int(got[2])
			} else {
				r := m.recvRange(m.next)
				if !s.Replace {
					m.checkRange(r) // the words added to; replaced ones need none
				}
				m.apply(m.y, got, r[0], s.Replace)
				m.rehash(r[0], r[1])
			}
		}
		m.next++
		m.progress++
		m.ticks, m.backoff, m.tries = 0, 1, 0
	}
	if m.p1 < 0 && m.jump == nil {
		return out // a folded rank that has not had its result yet
	}
	if m.p1 >= 0 && !m.final && m.vouched < m.n/2+1 {
		m.short = true
		return out
	}
	m.final = true
	return out
}

// apply takes a partner's partial, the words of y from at on, into the
// state y: it replaces them (the fold-out's result, a chunked all-gather),
// or adds the sums and takes the maxima. Both partners compute the same
// bits: IEEE addition is commutative, and so is math.Max on finite
// numbers, signed zeros included (+0 over -0 either way round).
func (m *Machine) apply(y, got []float64, at int, replace bool) {
	dst := y[at : at+len(got)]
	if replace {
		copy(dst, got)
		return
	}
	sums := min(max(m.k+1-at, 0), len(dst)) // the words before the extremes
	for c := range sums {
		dst[c] += got[c]
	}
	for c := sums; c < len(dst); c++ {
		dst[c] = math.Max(dst[c], got[c])
	}
}

// check rebuilds the state from the input and the partials received if it
// no longer matches its hash: a flip of the state is repaired before it is
// sent or returned.
func (m *Machine) check() {
	if hashWords(m.y) != m.yHash {
		m.repair()
	}
}

// checkRange is check for the words of r only, the ones a step is about to
// send or add to: a chunked step costs its range, not the vector. A flip
// elsewhere is found when those words are used, or by the full check
// before the result is taken or sent.
func (m *Machine) checkRange(r [2]int) {
	if !m.rangeOK(r) {
		m.repair()
	}
}

// rangeOK reports whether the words of r match their hash.
func (m *Machine) rangeOK(r [2]int) bool {
	var want uint64
	for _, h := range m.sh[m.sliceIndex(r[0]):m.sliceIndex(r[1])] {
		want += h
	}
	return hashRange(m.y, r[0], r[1]) == want
}

// sliceIndex returns j with cuts[j] = at: ranges are whole slices.
func (m *Machine) sliceIndex(at int) int {
	j, _ := slices.BinarySearch(m.cuts, at)
	return j
}

// rehash recomputes the hash of the slices of y[lo:hi] (whole slices) and
// yHash with them.
func (m *Machine) rehash(lo, hi int) {
	for j := m.sliceIndex(lo); j < len(m.sh) && m.cuts[j] < hi; j++ {
		h := hashRange(m.y, m.cuts[j], m.cuts[j+1])
		m.yHash += h - m.sh[j]
		m.sh[j] = h
	}
}

// repair rebuilds the state from the input and the partials received (or
// the result taken), and its hashes.
func (m *Machine) repair() {
	m.cnt.Repairs++
	if m.jump != nil {
		copy(m.y, m.jump)
	} else {
		copy(m.y, m.input)
		for i := range min(m.next, m.p1max()) {
			if s := m.plan[i]; s.RecvFrom >= 0 && s.Tag&flagVouch == 0 {
				m.apply(m.y, m.got[i], m.at(i), s.Replace)
			}
		}
	}
	m.rehash(0, len(m.y))
}

// sendRange and recvRange return the words step i sends and receives:
// the whole vector but in a chunked first pass.
func (m *Machine) sendRange(i int) [2]int {
	if m.rng == nil || cubeStep(m.plan[i].Tag) < 0 {
		return [2]int{0, len(m.y)}
	}
	return m.rng[i][0]
}

func (m *Machine) recvRange(i int) [2]int {
	if m.rng == nil || cubeStep(m.plan[i].Tag) < 0 {
		return [2]int{0, len(m.y)}
	}
	return m.rng[i][1]
}

// sentPartial marks a partial of the first pass this node sent, which it
// does not keep (a vector per step; 16 members of a million components
// kept 512 MB of them): sentPayload rebuilds it.
var sentPartial = []float64{}

// sentPayload returns what this node sent in step i: what it kept, or, for
// a partial of the first pass, the state it sent then (in a chunked pass,
// the range it sent of it), rebuilt from the input and the partials of the
// steps before i in the order check applies them, which gives the same
// bits (the state is checked against its hash before every send, so it
// was that rebuild). Only the state y is ever corrupted (Words); the input
// and the partials received are not.
func (m *Machine) sentPayload(i int) []float64 {
	if p := m.sent[i]; len(p) > 0 || p == nil {
		return p
	}
	y := m.y // the step under way: the state is the partial
	if i != m.next || !m.rangeOK(m.sendRange(i)) {
		y = slices.Clone(m.input)
		for j := range i {
			if s := m.plan[j]; s.RecvFrom >= 0 && s.Tag&flagVouch == 0 {
				m.apply(y, m.got[j], m.at(j), s.Replace)
			}
		}
	}
	r := m.sendRange(i)
	return y[r[0]:r[1]]
}

// p1max is the end of the first pass for check: the whole plan for a
// folded rank, whose partials all come in the first pass.
func (m *Machine) p1max() int {
	if m.p1 < 0 {
		return len(m.plan)
	}
	return m.p1
}

// message builds a message to node to carrying p (a partial, a vouch, or
// nil: an empty ask), sealed with its hash.
func (m *Machine) message(to int, tag uint64, p []float64) gossip.Message {
	w := m.width(tag&(stepMask|flagVouch), false)
	msg := gossip.Message{From: m.id, To: gossip.NodeID(to), Kind: gossip.KindExchange, Epoch: m.epoch, Tag: tag | m.wtag<<lenShift,
		Payload: make([]float64, w+2)}
	copy(msg.Payload, p)
	h := hashMessage(msg)
	msg.Payload[w], msg.Payload[w+1] = float64(h>>32), float64(h&0xffffffff)
	return msg
}

// verify reports whether msg's hash words match its header and partial.
func (m *Machine) verify(msg gossip.Message) bool {
	h := hashMessage(msg)
	n := len(msg.Payload)
	return msg.Payload[n-2] == float64(h>>32) && msg.Payload[n-1] == float64(h&0xffffffff)
}

// Done reports whether the node holds the chosen result: the second pass
// ended here, or a node that had finished it sent the result. Every node
// that vouched in the second pass then holds the same bits (see Accepted).
func (m *Machine) Done() bool { return m.final }

// Accepted reports whether this node finished the first pass (itself, or
// with the result of a node that had) before Refuse was called: it then
// holds the result R, which Estimate returns, and vouches for it in the
// second pass. A folded rank never accepts.
//
// The two passes make dimension exchange the lowest ballot of a Paxos
// round that the runtime (package member) can fall back on: a node that
// finished the second pass knows that every node of the hypercube (2^⌊log2
// N⌋ nodes, a majority of the group) accepted R, so R is chosen, and a
// later proposer, whose majority of promises meets the hypercube, hears
// of R and proposes it. The runtime calls Refuse before this node promises
// anything, so an acceptance here never follows a promise.
func (m *Machine) Accepted() bool { return m.accepted }

// ResultHash returns the hash of the result R this node accepted, the one
// its second pass vouches for (ok false if it accepted none, see
// Accepted). A runtime passes it on when it leaves having returned R, so
// that a node still waiting for vouches, which it can no longer get once
// every other node has left, learns that R is chosen (see Choose).
func (m *Machine) ResultHash() (h uint64, ok bool) { return m.rHash, m.accepted }

// Choose tells a node that accepted R that R is chosen by other means (a
// runtime's fallback decided it): the node is done, and answers the nodes
// that ask for the result with R marked chosen, as a node whose second
// pass ended does. It does nothing at a node that has not accepted.
func (m *Machine) Choose() {
	if !m.accepted || m.mismatch {
		return
	}
	m.check()
	m.final, m.short = true, false
}

// Refuse stops this node from accepting a result: if its first pass has
// not ended, it never will (it stops there, and asks for nothing more);
// if it has, the second pass goes on, for the result is accepted already.
// The machine still answers other nodes' asks from what it sent.
func (m *Machine) Refuse() { m.refused = true }

// Offered appends to est[:0] and ext[:0] the values and the maxima of a
// result R that a node which accepted it (in its first pass) sent to this
// node after Refuse, in answer to its asks; ok is false when none came.
// This node will not accept R at ballot 0, having refused, but it may
// have to vote for R at a later ballot: a runtime's proposer that hears of
// R in a promise must propose it (R may have been chosen), and a node
// whose own state does not confirm R (it left out an input that R covers,
// of a member that died after contributing) would otherwise never vote,
// and if enough such nodes are needed for a majority, nothing is decided.
// R comes with its hash checked, as any result taken from another node.
func (m *Machine) Offered(est, ext []float64) ([]float64, []float64, bool) {
	if m.offered == nil {
		return est[:0], ext[:0], false
	}
	return gossip.AppendRatios(est[:0], m.offered[:m.k+1]), append(ext[:0], m.offered[m.k+1:]...), true
}

// Short reports whether this node's second pass ended with fewer than a
// majority vouching for R: vouches that were skipped as lost, or members
// that did not accept R. The node cannot tell whether R is chosen; it
// asks the other nodes for the result, and a runtime that falls back may
// decide R by other means (see Choose): every node that accepted R did so
// at the lowest ballot.
func (m *Machine) Short() bool { return m.short }

// Vouches reports whether node j takes part in the second pass: a rank
// of the hypercube, which accepts R when its first pass ends. A node
// folded into its odd neighbour (N not a power of two) never accepts.
func (m *Machine) Vouches(j gossip.NodeID) bool { return rdb.Rank(int(j), m.n) >= 0 }

// Mismatch reports whether another node vouched for, or sent as chosen, a
// result other than this node's: the exchange cannot end here, and the
// runtime must fall back to another algorithm. It takes a corruption that
// escaped the hashes (about 2^-64 per corrupted message).
func (m *Machine) Mismatch() bool { return m.mismatch }

// Progress counts the steps this node has finished and the results it has
// taken: a runtime that sees it unchanged for long knows that the exchange
// is stuck (an input that never left a dead node).
func (m *Machine) Progress() int { return m.progress }

// Awaiting returns the node whose message of the step under way this node
// waits for, and false when it waits for no step (before its first tick,
// once done, stopped by a mismatch, short of vouches or refused, when it
// asks around for the result only). A runtime uses it to tell a partner
// that has not started from one that has gone quiet.
func (m *Machine) Awaiting() (gossip.NodeID, bool) {
	if !m.started || m.final || m.mismatch || m.short || m.refused || m.next >= len(m.plan) {
		return 0, false
	}
	s := m.plan[m.next]
	if s.RecvFrom < 0 {
		return 0, false
	}
	return gossip.NodeID(s.RecvFrom), true
}

// Estimate appends the node's current partial aggregate Σx/Σw to dst[:0],
// after repairing a flipped state; it is the result R once Accepted
// reports true, the same bits at every node once Done does.
func (m *Machine) Estimate(dst []float64) []float64 {
	m.check()
	return gossip.AppendRatios(dst, m.y[:m.k+1])
}

// Extremes appends the element-wise maxima of the extremes (Config.Extremes)
// reduced so far to dst[:0], after repairing a flipped state: the maxima
// over the nodes that R covers once Accepted reports true, the same bits at
// every node once Done does.
func (m *Machine) Extremes(dst []float64) []float64 {
	m.check()
	return append(dst[:0], m.y[m.k+1:]...)
}

// Exclude does nothing: a dead partner is asked around (see the package
// documentation), and an input lost with its node is the runtime's to
// handle.
func (m *Machine) Exclude(gossip.NodeID) {}

// Words yields the partial sums, value[c] and weight, then the maxima of
// the extremes (as values, components k …): the state an SDC injector may
// flip (and the hash check repairs).
func (m *Machine) Words() iter.Seq[gossip.Word] {
	return func(yield func(gossip.Word) bool) {
		for w := range gossip.SumWords(m.y[:m.k+1]) {
			if !yield(w) {
				return
			}
		}
		for c := m.k + 1; c < len(m.y); c++ {
			if !yield(gossip.Word{Place: gossip.PlaceState, Part: gossip.PartValue, Component: c - 1, Ptr: &m.y[c]}) {
				return
			}
		}
	}
}

// hashMessage hashes what a message says: its header and every payload
// word but the two that carry the hash.
func hashMessage(msg gossip.Message) uint64 {
	h := mix(msg.Epoch ^ 0x6a09e667f3bcc909)
	h += mix(msg.Tag ^ 0xbb67ae8584caa73b)
	h += mix(uint64(msg.From)<<32 | uint64(msg.To) ^ 0x3c6ef372fe94f82b)
	h += mix(uint64(msg.Kind) ^ 0xa54ff53a5f1d36f1)
	return h + hashWords(msg.Payload[:len(msg.Payload)-2])
}

// hashWords adds up a bijective mix of every word's bits salted with its
// index: a change to any one word changes the sum.
func hashWords(ws []float64) uint64 { return hashRange(ws, 0, len(ws)) }

// hashRange is hashWords's share of the words ws[lo:hi]: the shares of
// disjoint ranges add up to hashWords(ws).
func hashRange(ws []float64, lo, hi int) uint64 {
	var h uint64
	for i, w := range ws[lo:hi] {
		h += mix(math.Float64bits(w) + uint64(lo+i+1)*0x9e3779b97f4a7c15)
	}
	return h
}

// mix is SplitMix64's finaliser, a bijection on 64-bit words.
func mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
