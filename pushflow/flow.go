package pushflow

import (
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// Correction selects how a checked flow machine reacts to a failed checksum.
type Correction uint8

const (
	// Local is PFLC (Algorithm 5): a corrupted local flow is set to zero and
	// a corrupted received flow is dropped.
	Local Correction = iota + 1
	// Cooperative is PFCC (Algorithm 6): a corrupted local flow is sent to
	// its neighbour, whose answer overwrites it; a corrupted received flow is
	// answered with the local one, which is zeroed first only if it is
	// corrupted too.
	Cooperative
)

// String returns "local" or "cooperative".
func (c Correction) String() string {
	switch c {
	case Local:
		return "local"
	case Cooperative:
		return "cooperative"
	}
	return fmt.Sprintf("Correction(%d)", uint8(c))
}

// Counters report what a flow machine did besides gossiping, for tests and
// experiments.
type Counters struct {
	// Stale counts received flows dropped because a newer one from the same
	// peer had arrived already.
	Stale int
	// Merged counts received flows sent before the peer saw all of this
	// node's pushes (concurrent or lost messages), merged with them.
	Merged int
	// Rejected counts received flows whose checksum failed.
	Rejected int
	// Zeroed counts local flows reset to zero after a failed checksum.
	Zeroed int
	// Requests counts flows sent to a neighbour to have it repair them
	// (PFCC, Algorithm 6 line 6), Replies the answers to corrupted flows
	// received (line 16). Both are extra messages.
	Requests, Replies int
	// InputRepairs counts repairs of the input (x, w, c) from the last
	// verified estimate (thesis 3.3); InputLost counts corrupted inputs that
	// could not be repaired because the estimate was not verified.
	InputRepairs, InputLost int
	// HeldBack counts pushes not made: by Push-Cancel-Flow because every
	// neighbour it could send to had not answered its last message yet, by
	// PFCC while it waited for the repair of a corrupted flow.
	HeldBack int
	// Resends counts flows sent again because a push went unacknowledged
	// for Config.Resend steps.
	Resends int
	// Revived counts pushes made in place of pushes that never arrived:
	// a later message from their sender showed them lost (see Step).
	Revived int
	// Restarted counts received flows that acknowledged more pushes than
	// this machine has made to their sender: the sender heard them from
	// an earlier incarnation of this node (a process killed and started
	// again within the operation). See Machine.Step.
	Restarted int
}

// Machine is one node of Push-Flow, PFLC or PFCC. Build it with New,
// NewPublished, or through packages pflc and pfcc. Not safe for concurrent
// use.
type Machine struct {
	id     gossip.NodeID
	epoch  uint64
	rng    *rand.Rand
	k      int // value components
	width  int // words per flow: k+1, or k+2 with a checksum
	kind   gossip.Kind
	tagged bool       // acknowledged flows (the concurrency fix)
	corr   Correction // 0: no checksum
	tau    float64
	input  []float64
	nbr    []gossip.NodeID
	index  peerIndex
	flows  []float64 // len(nbr)*width
	nb     []peer    // by position in nbr
	live   int
	// Checked machines only.
	last   []float64 // the estimate at the end of the last step, if verified
	lastOK bool      // last was verified and the flows have not changed since
	e      []float64 // scratch
	// tot caches input + Σ live flows, the numerator and weight of the
	// estimate, while totOK: every path that can change a flow, the input
	// or the live set clears totOK (flow, Exclude, repairInput, Words), so
	// the cached words are bitwise what a fresh sum gives. For a vector of k
	// components over d neighbours a sum costs k·d, and a step used to do
	// it three or four times (issue 13).
	tot    []float64
	totOK  bool
	cnt    Counters
	steps  uint64 // Tick and Step calls: the machine's clock
	resend uint64 // Config.Resend
	// waitOn counts the live neighbours with a push unacknowledged, so
	// that Pending costs no pass over them: a runtime asks it before
	// every idle wait, and at 65,536 simulated members the pass, a cache
	// miss for each neighbour's pending pushes, was 9 % of the time.
	waitOn int
	// resendAt is a step count before which resendOld has nothing to
	// send: no later than the earliest step at which a neighbour's oldest
	// unacknowledged push is due again. Pushes are acknowledged within a
	// few steps and Resend is dozens, so resendOld finds nothing on nearly
	// every step, and its pass over the neighbours was 4 % of a large
	// simulated group's time.
	resendAt uint64
	owed     int // PFCC: pushes held back while waiting for a repair
	// The push the last idle step asked about: neighbour askN's pending
	// push askSeq (0: none). See Unanswered.
	askN   int
	askSeq uint32
	// quiet and hushed: see Quiet and Hush.
	quiet, hushed bool
	// stale and wasAsk: see Stale and Asked.
	stale, wasAsk bool
	// lost is the number of pushes the last Step's message showed never
	// came from its sender (see revive). covered reports that the message
	// was a push pushed on for already: overtaken by a later message,
	// which counted it among those, or a duplicate of one taken in.
	lost    int
	covered bool
	revives bool // Config.Revive
	// The round trip of asks (see SetClock and AskWait): now is the
	// caller's clock, clocked whether SetClock was called (peer.askedT is
	// kept only then); rtts the last round trips (see sample), rttN how
	// many were taken.
	now           int64
	clocked       bool
	rtts, rttSort [rttKeep]int64
	rttN          int
	askWait       int64
}

// peer is the machine's state of one neighbour, in one place: a message
// from a neighbour, and a push to it, read most of it, and kept in a dozen
// arrays by neighbour it was a dozen cache misses an event in a large
// simulated group, whose members' state is mostly out of cache.
type peer struct {
	sent uint32 // sequence number of the last message sent
	recv uint32 // sequence number of the last message received
	// pushed and got count the pushes made to the neighbour and taken
	// in from it, modulo 4: every message carries its sender's pushed,
	// so that the receiver of a later message can tell pushes that never
	// came (see revive).
	pushed, got uint8
	// seen has bit i set when the message numbered recv-i came: a stale
	// message whose bit is clear was overtaken, not duplicated. credit
	// counts the pushes pushed on for as missing that have not come
	// since: an overtaken push is one of them (see covered) only while
	// there is credit, for four or more overtaken at once are counted as
	// none (the count is modulo 4), and they must be pushed on when they
	// come.
	seen   uint64
	credit uint32
	gone   bool // excluded
	// suspect (PFCC): its flow was found corrupted, and this node waits
	// for the neighbour's.
	suspect bool
	// pendNaN: see pendLo.
	pendNaN bool
	resent  uint64 // steps at the last resend
	asked   uint64 // PFCC: steps at the last repair request
	// askedT is the clock at the first ask still unanswered, -1 for none
	// (kept once the machine has a clock, see SetClock).
	askedT int64
	// The unacknowledged pushes: their sequence numbers, the steps at
	// which each was made, and their width words each.
	pendSeq []uint32
	pendAt  []uint64
	pendVal []float64
	// pendLo and pendHi bound, per value component, the ratios
	// (component over weight) of the unacknowledged pushes, and pendNaN
	// marks a ratio that is NaN, so that Settled costs O(degree) however
	// many pushes a silent neighbour has not acknowledged (thousands
	// before it is declared dead, which made every step quadratic). They
	// exist only while the neighbour has more than boundsAfter pending
	// pushes: for fewer, Settled reads the pushes themselves at the same
	// cost, and a vector of k components does not hold 2k more words for
	// every neighbour (issue 13).
	pendLo, pendHi []float64
}

// tagRepair marks PFCC's repair requests and replies (thesis Algorithm 6,
// lines 6 and 16). They are extra messages: a receiver takes the flow in but
// does not push in answer, so they never become tokens that circulate for
// good (every node answers each ordinary push with exactly one push).
const tagRepair = 1 << 63

// tagAsk marks a flow sent again because a push went unacknowledged for
// Config.Resend steps: the receiver takes it in and answers with its own
// flow (marked tagRepair), which acknowledges it.
const tagAsk = 1 << 62

// A flow's Tag holds, from the top: tagRepair, tagAsk, the sequence
// number (28 bits: 268 million messages on one edge in one operation) at
// seqShift, its sender's count of pushes on the edge (modulo 4, see
// peer.pushed) at pushShift, and the acknowledgement (the low 32 bits).
// The count sits low so that a push's Tag stays short as a uvarint.
const (
	seqShift  = 34
	pushShift = 32
	seqMask   = 1<<28 - 1
)

// seqOf is the sequence number of a flow's Tag.
func seqOf(tag uint64) uint32 { return uint32(tag>>seqShift) & seqMask }

// repairResend is how many steps a PFCC node waits for the answer to a
// repair request before it asks again (the request or the answer may have
// been lost).
const repairResend = 8

// New returns Push-Flow (thesis Algorithm 3) with acknowledged flows, which
// keep flow conservation under concurrent, lost and reordered messages (see
// the package documentation).
func New(cfg gossip.Config) (*Machine, error) {
	return build(cfg, true, 0)
}

// NewPublished returns Push-Flow exactly as Algorithm 3: a received flow
// always overwrites the local one, so concurrent messages violate flow
// conservation until a later message repairs it (thesis 2.2.2, table 2.1).
func NewPublished(cfg gossip.Config) (*Machine, error) {
	return build(cfg, false, 0)
}

// NewChecked returns the checksum-protected Push-Flow with the given
// correction: Local is PFLC (Algorithm 5), Cooperative is PFCC (Algorithm 6).
// cfg.Tau is the relative threshold; zero selects defaultTau. Packages pflc
// and pfcc call it; most callers want those.
func NewChecked(cfg gossip.Config, c Correction, defaultTau float64) (*Machine, error) {
	return checked(cfg, c, defaultTau, true)
}

// NewCheckedPublished returns PFLC or PFCC as the thesis wrote them: the
// checksums and corrections of NewChecked on top of Algorithm 3's flows
// (NewPublished), where a received flow always overwrites the local one. A
// lost push is then repaired by the next message on the edge in either
// direction, as in the thesis's loss experiments (4.2), but concurrent
// messages break flow conservation until a later message repairs it, and
// Settled is always true since no push is tracked. docs/sdc.md measures the
// trade-off; the live runtime keeps the acknowledged engine of NewChecked.
func NewCheckedPublished(cfg gossip.Config, c Correction, defaultTau float64) (*Machine, error) {
	return checked(cfg, c, defaultTau, false)
}

func checked(cfg gossip.Config, c Correction, defaultTau float64, tagged bool) (*Machine, error) {
	if c != Local && c != Cooperative {
		return nil, fmt.Errorf("pushflow: %w: correction %d", gossip.ErrInvalidConfig, c)
	}
	if !(defaultTau > 0) || math.IsInf(defaultTau, 0) {
		return nil, fmt.Errorf("pushflow: %w: default tau %v", gossip.ErrInvalidConfig, defaultTau)
	}
	if cfg.Tau == 0 {
		cfg.Tau = defaultTau
	}
	return build(cfg, tagged, c)
}

func build(cfg gossip.Config, tagged bool, c Correction) (*Machine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("pushflow: %w", err)
	}
	k := len(cfg.Value)
	m := &Machine{
		id: cfg.ID, epoch: cfg.Epoch, rng: rand.New(cfg.Source()),
		k: k, width: k + 1, kind: gossip.KindFlow, tagged: tagged,
		corr: c, tau: cfg.Tau,
	}
	if c != 0 {
		m.width = k + 2
		m.kind = gossip.KindCheckedFlow
	}
	m.input = make([]float64, m.width)
	copy(m.input, cfg.Value)
	m.input[k] = cfg.Weight()
	if c != 0 {
		m.input[k+1] = checksum(m.input[:k+1])
	}
	deg := cfg.Overlay.Degree(cfg.ID)
	m.nbr = make([]gossip.NodeID, 0, deg)
	for n := range deg {
		m.nbr = append(m.nbr, cfg.Overlay.Neighbor(cfg.ID, n))
	}
	var ok bool
	var j gossip.NodeID
	if m.index, j, ok = newPeerIndex(m.nbr, cfg.ID); !ok {
		return nil, fmt.Errorf("pushflow: %w: node %d lists neighbour %d twice or itself", gossip.ErrInvalidConfig, cfg.ID, j)
	}
	m.live = deg
	m.flows = make([]float64, deg*m.width)
	m.nb = make([]peer, deg)
	m.resend = uint64(cfg.Resend)
	m.revives = cfg.Revive
	m.e = make([]float64, m.width)
	if c != 0 {
		m.last = append([]float64(nil), m.input...)
		m.lastOK = true
	}
	return m, nil
}

// checksum is Σ x + w in a fixed order, so that recomputing it reproduces
// the same bits.
func checksum(xw []float64) float64 {
	s := 0.0
	for _, v := range xw {
		s += v
	}
	return s
}

// ID returns the node this machine runs.
func (m *Machine) ID() gossip.NodeID { return m.id }

// Counters returns what the machine has done so far besides gossiping.
func (m *Machine) Counters() Counters { return m.cnt }

// Tau returns the relative checksum threshold, zero for unchecked machines.
func (m *Machine) Tau() float64 {
	if m.corr == 0 {
		return 0
	}
	return m.tau
}

// It clears the cached total, since the caller may write the flow.
func (m *Machine) flow(n int) []float64 {
	m.totOK = false
	return m.flows[n*m.width : (n+1)*m.width]
}

// Tick verifies the local state (checked machines) and pushes half of the
// estimate to a random neighbour.
func (m *Machine) Tick(out []gossip.Message) []gossip.Message {
	m.steps++
	out = m.verify(out)
	out = m.resendOld(out)
	out = m.push(out, false)
	m.settle()
	return out
}

// Idle is a runtime's idle step, taken when the node has sent nothing for
// a while (simulations call Tick instead). It verifies and resends as Tick
// does; then it pushes, as Tick does, only if every push it made has been
// acknowledged. Otherwise it sends its flow again to the neighbour whose
// push has waited longest, asking for an answer as resendOld does. Every
// push received is answered with a push, so a push made while earlier ones
// are in flight adds a message that circulates for good: a node whose
// messages are slow rather than lost would add one every idle period. The
// answer to the ask acknowledges the pushes (a lost one's mass travels in
// the ask), so a lost message is replaced one idle period later than by a
// push, and pushes left unacknowledged by loss stop holding up Settled
// sooner.
func (m *Machine) Idle(out []gossip.Message) []gossip.Message {
	m.steps++
	out = m.verify(out)
	out = m.resendOld(out)
	n, waiting := m.oldestInFlight()
	switch {
	case (!m.tagged || !waiting) && m.quiet:
	case !m.tagged || !waiting:
		out = m.push(out, false)
	case m.nb[n].resent != m.steps: // else resendOld has just asked it
		m.askN, m.askSeq = n, m.nb[n].pendSeq[0]
		m.nb[n].resent = m.steps
		m.cnt.Resends++
		out = m.ask(n, out)
	}
	m.settle()
	return out
}

// SetClock gives the machine the time of the calls that follow, in the
// caller's unit (a runtime passes its nanoseconds), never decreasing. The
// time from an ask to the acknowledgement it draws feeds AskWait's
// estimate. A machine never given a clock has none, and behaves the same:
// the clock decides nothing here.
func (m *Machine) SetClock(now int64) {
	if !m.clocked {
		m.clocked = true
		for n := range m.nb {
			m.nb[n].askedT = -1
		}
	}
	m.now = max(m.now, now)
}

// sample takes one round trip d into the last rttKeep, and AskWait's
// estimate from them.
func (m *Machine) sample(d int64) {
	m.rtts[m.rttN%rttKeep] = d
	m.rttN++
	k := min(m.rttN, rttKeep)
	s := m.rttSort[:k]
	copy(s, m.rtts[:k])
	slices.Sort(s)
	m.askWait = 2 * s[(k-1)/4]
}

// rttKeep is how many of the latest round trips AskWait looks at, and
// rttFirst how many it needs first. The round trip of an ask that was
// lost and made again includes the wait between the two; a first one of
// those alone made 64 simulated members under 20 % loss send 3 to 9 %
// more messages (an estimate of several Idle periods where the network's
// round trip is a tenth of one), and three in a row are rarer: 376, 369
// and 381 messages a member against 387, 374 and 376 without an estimate
// (seeds 100, 300, 500, ten runs each).
const (
	rttKeep  = 16
	rttFirst = 3
)

// AskWait returns how long, in SetClock's unit, to wait for the answer to
// an ask before asking again: twice the lower quartile of the last 16
// round trips of asks, from the first ask about a neighbour's pushes to
// the acknowledgement that followed. A neighbour answers an ask at once,
// so that is the network's round trip; an ask lost and made again adds
// the wait between the two, which the lower quartile leaves out unless
// most are lost. On a network that is slow rather than lossy (a server
// starved of CPU) asking sooner only asks for an answer already on its
// way, and every ask and answer waits in the same queue. ok is false
// until rttFirst round trips were taken.
//
// Tried on 2026-11-29 and not kept: Karn's rule (an ask made again not
// timed once three round trips were). Under loss it kept the estimate
// from growing on its own lost asks (16 simulated members under 20 % loss
// with up to 20 ms of jitter: 3.0 to 3.7 s against 4.2 to 5.5 s), but an
// acknowledgement often comes on a push already on its way, so the round
// trips it kept were short, the estimate fell below the network's round
// trip, every ask was made again and none was timed after: 16 members on
// a ring behind a server that forwards a message every 500 µs took 37.5
// to 53 s against 10.8 to 16.7 s (a review's finding; docs/live.md).
func (m *Machine) AskWait() (d int64, ok bool) {
	return m.askWait, m.rttN >= rttFirst
}

// Stale reports whether the message the last Step took in was older than
// one already taken in from the same neighbour (a resend or a duplicate
// overtaken by a newer message): its flow was not applied, and what it
// says of its sender is out of date.
func (m *Machine) Stale() bool { return m.stale }

// Asked reports whether the message the last Step took in was an ask (see
// Ask), which this node answered at once and does not push on from.
func (m *Machine) Asked() bool { return m.wasAsk }

// Ask sends neighbour peer this node's flow to it again, marked as an
// ask, so that the neighbour answers at once with its own (and with it,
// in a runtime, its current estimate). It is not an ask about a push, and
// AskWait does not time it: with no push to acknowledge, the clock would
// run on to the acknowledgement of a later one. Nothing is sent to a
// neighbour excluded or unknown.
func (m *Machine) Ask(peer gossip.NodeID, out []gossip.Message) []gossip.Message {
	n, ok := m.index.lookup(peer)
	if !ok || m.nb[n].gone {
		return out
	}
	return m.sendAsk(int(n), out)
}

// Pending reports whether a push to a live neighbour is unacknowledged,
// so that Idle would ask about it rather than push.
func (m *Machine) Pending() bool {
	return m.waitOn > 0 && m.tagged
}

// Unanswered reports whether the push that this node's last idle step
// asked about is still unacknowledged, so that another idle step would ask
// again. A runtime uses it to space out its idle steps while answers are
// slow rather than lost.
func (m *Machine) Unanswered() bool {
	if m.askSeq == 0 || m.nb[m.askN].gone {
		return false
	}
	p := m.nb[m.askN].pendSeq
	return len(p) > 0 && p[0] == m.askSeq
}

// oldestInFlight returns the live neighbour with the oldest push not
// acknowledged yet; ok is false when every push has been.
func (m *Machine) oldestInFlight() (n int, ok bool) {
	if m.waitOn == 0 {
		return 0, false
	}
	var at uint64
	for j := range m.nbr {
		if m.nb[j].gone || len(m.nb[j].pendAt) == 0 {
			continue
		}
		if !ok || m.nb[j].pendAt[0] < at {
			n, at, ok = j, m.nb[j].pendAt[0], true
		}
	}
	return n, ok
}

// Step applies a received flow and pushes once. Messages of another kind,
// epoch or recipient, with a payload of the wrong length, acknowledging a
// message never sent, or from a node that is not a live neighbour are
// rejected with an error and change nothing.
func (m *Machine) Step(msg gossip.Message, out []gossip.Message) ([]gossip.Message, error) {
	m.stale, m.wasAsk, m.lost, m.covered = false, false, 0, false
	n, err := m.check(msg)
	if err != nil {
		return out, err
	}
	m.steps++
	m.wasAsk = msg.Tag&tagAsk != 0
	out = m.verify(out)
	before := len(out)
	out = m.receive(n, msg, out)
	answered := len(out) > before // receive answered the sender already
	out = m.resendOld(out)
	out = m.revive(out)
	switch {
	case msg.Tag&tagRepair != 0:
	case m.covered:
		// A newer message from the sender came first and counted this
		// push as missing, and it was pushed on then (revive); or it is a
		// duplicate, and the push it copies was pushed on.
	case !m.quiet:
		out = m.push(out, true)
	case !answered:
		// Quiet: acknowledge the push with the flow, which the sender takes
		// in without pushing again, so the push stops circulating here. One
		// push is owed, paid when the node pushes again, so that the group
		// regains its circulation if it has to agree once more.
		out = m.sendRepair(n, out)
		if !m.hushed {
			m.owed = max(m.owed, 1)
		}
	}
	m.settle()
	return out, nil
}

// revive pushes on in place of the pushes the last message showed never
// came (Step): each was one of the pushes in circulation, since every push
// received is answered with one, and a lost push ended its circulation for
// good, as a push merely late does not. Under 1 % loss a group of 4,096
// simulated members had lost nearly all of its circulation a few
// milliseconds in, and converged at the pace of idle steps from then on.
// A quiet node owes them as it owes the pushes it answers (see Step), and
// a hushed one lets them end.
func (m *Machine) revive(out []gossip.Message) []gossip.Message {
	switch {
	case m.lost == 0:
	case !m.quiet:
		for range m.lost {
			m.cnt.Revived++
			out = m.push(out, true)
		}
	case !m.hushed:
		m.owed = max(m.owed, 1)
	}
	return out
}

// Quiet turns quiet mode on or off. A quiet node answers a push with its
// flow alone, marked as a repair answer, instead of pushing in turn, and its
// idle step asks about unacknowledged pushes but makes no new one: the
// pushes in circulation end at quiet nodes, and every push still gets an
// answer, so its sender hears from the node and learns it was received. A
// runtime makes a node quiet while there is nothing left to agree on (the
// live runtime: while the node's convergence certificate is complete and
// the commit is under way), so that the group stops exchanging at full speed
// while it waits. Quiet changes which messages are sent, never the mass
// they carry: every flow stays conserved.
func (m *Machine) Quiet(on bool) { m.quiet, m.hushed = on, false }

// Hush turns hushed mode on or off: quiet (see Quiet), except that the
// pushes it ends are not owed, so the circulation they made ends for
// good. Once it is no longer hushed the node pushes again, at its next
// idle step or on the next push it receives, one push each time. A
// runtime hushes a node while its estimate has settled and the group
// waits for something other than agreement (the live runtime: a member
// that is stable in a certificate that has not changed for a while),
// where paying the pushes back would put as many in circulation again the
// moment the wait ends.
func (m *Machine) Hush(on bool) { m.quiet, m.hushed = on, on }

func (m *Machine) check(msg gossip.Message) (int, error) {
	switch {
	case msg.Kind != m.kind:
		return 0, fmt.Errorf("pushflow: %w: kind %s, want %s", gossip.ErrForeignMessage, msg.Kind, m.kind)
	case msg.Epoch != m.epoch:
		return 0, fmt.Errorf("pushflow: %w: epoch %d, want %d", gossip.ErrForeignMessage, msg.Epoch, m.epoch)
	case msg.To != m.id:
		return 0, fmt.Errorf("pushflow: %w: addressed to %d, this is %d", gossip.ErrForeignMessage, msg.To, m.id)
	case len(msg.Payload) != m.width:
		return 0, fmt.Errorf("pushflow: %w: payload has %d words, want %d", gossip.ErrLength, len(msg.Payload), m.width)
	}
	n, ok := m.index.lookup(msg.From)
	if !ok || m.nb[n].gone {
		return 0, fmt.Errorf("pushflow: %w: %d is not a live neighbour of %d", gossip.ErrUnknownPeer, msg.From, m.id)
	}
	if m.tagged {
		if ack := uint32(msg.Tag); ack > m.nb[n].sent && ack > seqMask {
			return 0, fmt.Errorf("pushflow: %w: %d acknowledges message %d, which no node numbers", gossip.ErrForeignMessage, msg.From, ack)
		}
	}
	return int(n), nil
}

// receive applies the flow f_ji carried by msg from neighbour n.
func (m *Machine) receive(n int, msg gossip.Message, out []gossip.Message) []gossip.Message {
	if m.tagged {
		seq, ack := seqOf(msg.Tag), uint32(msg.Tag)
		restarted := ack > m.nb[n].sent
		if restarted {
			// The neighbour has taken in pushes numbered up to ack from an
			// earlier incarnation of this node, and takes pushes numbered
			// no higher for stale: it has applied none of this machine's,
			// and never will. Number on from ack, and forget those pushes
			// (acknowledge, below): their mass comes back with the flow
			// this message carries, which never counted them.
			m.nb[n].sent = ack
			m.cnt.Restarted++
		}
		if seq <= m.nb[n].recv {
			m.cnt.Stale++
			m.stale = true
			switch i := m.nb[n].recv - seq; {
			case i >= 64: // too old to tell: pushed on, as before Revive
			case m.nb[n].seen&(1<<i) == 0:
				// Overtaken: the message that overtook it counted it,
				// unless the count wrapped.
				m.nb[n].seen |= 1 << i
				if msg.Tag&tagRepair == 0 && m.nb[n].credit > 0 {
					m.nb[n].credit--
					m.covered = true
				}
			case ack != 0:
				// A duplicate. Pushed on, it added a push in circulation
				// for good: with 10 % duplicated and 5 % lost, lost
				// pushes pushed on for, the pushes multiplied, and chaos
				// campaigns cut 40 % more operations at their event
				// budget than before Revive. (A sender that has heard
				// nothing from this node, ack 0, is new in the operation:
				// restarted, numbering from 1 again, its pushes are not
				// duplicates, and they are pushed on.)
				m.covered = m.revives && msg.Tag&tagRepair == 0
			}
			m.acknowledge(n, ack)
			if msg.Tag&tagAsk != 0 {
				return m.sendRepair(n, out) // already up to date: just acknowledge
			}
			return out
		}
		d := seq - m.nb[n].recv
		if d < 64 {
			m.nb[n].seen = m.nb[n].seen<<d | 1
		} else {
			m.nb[n].seen = 1
		}
		m.nb[n].recv = seq
		m.acknowledge(n, ack)
		// The sender's count of its pushes to this node, this one
		// included, against those taken in: the difference never came.
		// No more can be missing than the messages the sequence numbers
		// skip: none after a sender restarted numbered on from this
		// node's acknowledgement (see above), its count of pushes begun
		// again, and none from a node that restarted here.
		pushed := uint8(msg.Tag>>pushShift) & 3
		if msg.Tag&tagRepair == 0 {
			m.nb[n].got++
		}
		if m.revives && !restarted {
			m.lost = int(min((pushed-m.nb[n].got)&3, uint8(min(d-1, 3))))
			m.nb[n].credit += uint32(m.lost)
		}
		m.nb[n].got = pushed
	}
	f := msg.Payload
	if m.corr != 0 && !m.consistent(f, m.ref()) {
		m.cnt.Rejected++
		if m.corr == Local {
			return out // Algorithm 5 line 12: drop it
		}
		// Algorithm 6 lines 14-16.
		if !m.consistent(m.flow(n), m.ref()) {
			m.zero(n)
		}
		m.cnt.Replies++
		return m.sendRepair(n, out)
	}
	own := m.flow(n)
	for c := range own {
		own[c] = -f[c]
	}
	if len(m.nb[n].pendSeq) > 0 {
		m.cnt.Merged++
		vals := m.nb[n].pendVal
		for p := range m.nb[n].pendSeq {
			d := vals[p*m.width : (p+1)*m.width]
			for c := range own {
				own[c] -= d[c]
			}
		}
	}
	if m.corr != 0 {
		m.seal(own)
		m.nb[n].suspect = false
	}
	if msg.Tag&tagAsk != 0 {
		out = m.sendRepair(n, out)
	}
	return out
}

// seal sets the checksum of a flow this node computed to Σx + w, so that an
// intact flow's residual is exactly zero and any residual is corruption.
func (m *Machine) seal(f []float64) { f[m.k+1] = checksum(f[:m.k+1]) }

// acknowledge forgets the pushes to neighbour n that n has seen.
func (m *Machine) acknowledge(n int, ack uint32) {
	seqs := m.nb[n].pendSeq
	drop := 0
	for drop < len(seqs) && seqs[drop] <= ack {
		drop++
	}
	if drop == 0 {
		return
	}
	m.nb[n].pendSeq = append(seqs[:0], seqs[drop:]...)
	m.nb[n].pendAt = append(m.nb[n].pendAt[:0], m.nb[n].pendAt[drop:]...)
	if len(m.nb[n].pendSeq) == 0 {
		m.waitOn--
	}
	if m.clocked && m.nb[n].askedT >= 0 {
		// Acknowledged after an ask: the neighbour answers an ask at
		// once, so this is the network's round trip (from the first ask:
		// one lost and asked again adds the wait between the two).
		m.sample(m.now - m.nb[n].askedT)
		m.nb[n].askedT = -1
	}
	vals := m.nb[n].pendVal
	m.nb[n].pendVal = append(vals[:0], vals[drop*m.width:]...)
	m.rebound(n)
}

// boundsAfter is the number of pending pushes to one neighbour beyond which
// the machine keeps that neighbour's ratio bounds (pendLo, pendHi) instead
// of reading the pushes in Settled. Acknowledged pushes are answered within
// a step or two, so a live neighbour rarely has more than a few; a silent
// one collects them until it is declared dead.
const boundsAfter = 4

// rebound recomputes neighbour n's ratio bounds from its pending pushes, or
// drops them when there are too few pushes to need them.
func (m *Machine) rebound(n int) {
	if len(m.nb[n].pendSeq) <= boundsAfter {
		m.nb[n].pendLo, m.nb[n].pendHi, m.nb[n].pendNaN = nil, nil, false
		return
	}
	if m.nb[n].pendLo == nil {
		m.nb[n].pendLo, m.nb[n].pendHi = make([]float64, m.k), make([]float64, m.k)
	}
	for c := range m.k {
		m.nb[n].pendLo[c], m.nb[n].pendHi[c] = math.Inf(1), math.Inf(-1)
	}
	m.nb[n].pendNaN = false
	vals := m.nb[n].pendVal
	for p := 0; p+m.width <= len(vals); p += m.width {
		m.bound(n, vals[p:p+m.width])
	}
}

// bound widens neighbour n's ratio bounds to take in push d.
func (m *Machine) bound(n int, d []float64) {
	lo, hi := m.nb[n].pendLo, m.nb[n].pendHi
	for c := range m.k {
		r := d[c] / d[m.k]
		if math.IsNaN(r) {
			m.nb[n].pendNaN = true
			continue
		}
		lo[c], hi[c] = min(lo[c], r), max(hi[c], r)
	}
}

// zero resets the flow to neighbour n and forgets the pushes it held.
func (m *Machine) zero(n int) {
	clear(m.flow(n))
	if len(m.nb[n].pendSeq) > 0 {
		m.waitOn--
	}
	m.nb[n].pendSeq = m.nb[n].pendSeq[:0]
	m.nb[n].pendAt = m.nb[n].pendAt[:0]
	if m.clocked {
		m.nb[n].askedT = -1
	}
	m.nb[n].pendVal = m.nb[n].pendVal[:0]
	m.rebound(n)
	m.nb[n].suspect = false
	m.cnt.Zeroed++
}

// push sends half of the estimate to a random live neighbour (Algorithm 3
// lines 2-5). A PFCC node that waits for the repair of a corrupted flow does
// not push: its estimate is unknown until the repair arrives, and the
// request it sent keeps the exchange going. A push held back in answer to a
// received message (answer) is owed and made once the repair has arrived,
// so that waiting does not remove messages from circulation; one held back
// on a Tick is simply skipped.
func (m *Machine) push(out []gossip.Message, answer bool) []gossip.Message {
	if m.waitingRepair() {
		m.cnt.HeldBack++
		if answer {
			m.owed++ // a push owed for a message received: paid back later
		}
		return out
	}
	// Pay back the pushes held while a repair was awaited, so that the
	// number of messages in circulation stays what it was.
	for ; m.owed > 0; m.owed-- {
		out = m.pushOnce(out)
	}
	return m.pushOnce(out)
}

// pushOnce is one push: half the estimate to a random live neighbour.
func (m *Machine) pushOnce(out []gossip.Message) []gossip.Message {
	n, ok := m.pick()
	if !ok {
		return out
	}
	e := append(m.e[:0], m.total()...)
	f := m.flow(n)
	for c := range f {
		e[c] /= 2
		f[c] -= e[c]
	}
	if m.corr != 0 {
		m.seal(f)
	}
	if m.tagged {
		if len(m.nb[n].pendSeq) == 0 {
			m.waitOn++
		}
		m.nb[n].pendSeq = append(m.nb[n].pendSeq, m.nb[n].sent+1)
		m.nb[n].pushed++
		m.nb[n].pendAt = append(m.nb[n].pendAt, m.steps)
		if len(m.nb[n].pendAt) == 1 { // its oldest pending push: due sooner
			m.resendAt = min(m.resendAt, max(m.steps, m.nb[n].resent)+m.resend)
		}
		m.nb[n].pendVal = append(m.nb[n].pendVal, e...)
		if m.nb[n].pendLo == nil {
			m.rebound(n)
		} else {
			m.bound(n, e)
		}
	}
	return m.send(n, out)
}

// resendOld sends the flow again, asking for an answer, to each neighbour
// whose oldest unacknowledged push is Resend steps old, at most once every
// Resend steps per neighbour.
func (m *Machine) resendOld(out []gossip.Message) []gossip.Message {
	if m.resend == 0 || !m.tagged || m.steps < m.resendAt {
		return out
	}
	next := uint64(math.MaxUint64)
	for n := range m.nbr {
		if m.nb[n].gone || len(m.nb[n].pendAt) == 0 {
			continue
		}
		due := max(m.nb[n].pendAt[0], m.nb[n].resent) + m.resend
		if m.steps >= due {
			m.nb[n].resent = m.steps
			m.cnt.Resends++
			out = m.ask(n, out)
			due = max(m.nb[n].pendAt[0], m.steps) + m.resend
		}
		next = min(next, due)
	}
	// Until then a due step only comes later: acknowledgements, resends,
	// exclusions and zeroing move a neighbour's due step later, and a
	// push lowers resendAt when it is a neighbour's first pending one.
	m.resendAt = next
	return out
}

// Settled reports whether every unacknowledged push carries mass at a ratio
// within tol (relative, per value component) of the node's current
// estimate. See gossip.Settler.
func (m *Machine) Settled(tol float64) bool {
	if m.waitOn == 0 {
		return true // no push unacknowledged: the pass below finds none
	}
	e := m.total()
	for n := range m.nbr {
		if m.nb[n].gone || len(m.nb[n].pendSeq) == 0 {
			continue
		}
		if m.nb[n].pendLo == nil {
			vals := m.nb[n].pendVal
			for p := 0; p+m.width <= len(vals); p += m.width {
				d := vals[p : p+m.width]
				for c := range m.k {
					if !near(d[c]/d[m.k], e[c]/e[m.k], tol) {
						return false
					}
				}
			}
			continue
		}
		if m.nb[n].pendNaN {
			return false
		}
		// The ratio farthest from the estimate is the lowest or the highest.
		lo, hi := m.nb[n].pendLo, m.nb[n].pendHi
		for c := range m.k {
			want := e[c] / e[m.k]
			if !near(lo[c], want, tol) || !near(hi[c], want, tol) {
				return false
			}
		}
	}
	return true
}

// near reports whether ratio r is within relative tolerance tol of want
// (absolute when want is 0); a NaN is never near.
func near(r, want, tol float64) bool {
	diff := math.Abs(r - want)
	if want != 0 {
		diff /= math.Abs(want)
	}
	return diff <= tol
}

// ask sends the flow to neighbour n again, asking for an answer.
func (m *Machine) ask(n int, out []gossip.Message) []gossip.Message {
	if m.clocked && m.nb[n].askedT < 0 {
		m.nb[n].askedT = m.now
	}
	return m.sendAsk(n, out)
}

// sendAsk sends the current flow to neighbour n marked as an ask, which
// the neighbour answers at once.
func (m *Machine) sendAsk(n int, out []gossip.Message) []gossip.Message {
	out = m.send(n, out)
	out[len(out)-1].Tag |= tagRepair | tagAsk
	return out
}

// sendRepair sends the current flow to neighbour n as a repair request or
// answer: marked, so that the receiver does not push in turn.
func (m *Machine) sendRepair(n int, out []gossip.Message) []gossip.Message {
	out = m.send(n, out)
	out[len(out)-1].Tag |= tagRepair
	return out
}

// send appends a message carrying the current flow to neighbour n.
func (m *Machine) send(n int, out []gossip.Message) []gossip.Message {
	m.nb[n].sent++
	msg := gossip.Message{
		From: m.id, To: m.nbr[n], Kind: m.kind, Epoch: m.epoch,
		Payload: append([]float64(nil), m.flow(n)...),
	}
	if m.tagged {
		msg.Tag = uint64(m.nb[n].sent)<<seqShift | uint64(m.nb[n].pushed&3)<<pushShift | uint64(m.nb[n].recv)
	}
	return append(out, msg)
}

// pick chooses a live neighbour uniformly at random, drawing again over
// excluded ones, exactly as package pushsum does, so that Push-Flow, PFLC and
// PFCC consume the random stream identically.
func (m *Machine) pick() (int, bool) {
	if m.live == 0 {
		return 0, false
	}
	for {
		n := m.rng.IntN(len(m.nbr))
		if !m.nb[n].gone {
			return n, true
		}
	}
}

func (m *Machine) waitingRepair() bool {
	if m.corr == 0 {
		return false
	}
	for n := range m.nb {
		if m.nb[n].suspect && !m.nb[n].gone {
			return true
		}
	}
	return false
}

// total returns e = input + Σ live flows, computed again only when
// something may have changed since (see tot). The caller must not modify
// it.
func (m *Machine) total() []float64 {
	if m.totOK {
		return m.tot
	}
	dst := append(m.tot[:0], m.input...)
	for n := range m.nbr {
		if m.nb[n].gone {
			continue
		}
		for c, v := range m.flows[n*m.width : (n+1)*m.width] {
			dst[c] += v
		}
	}
	m.tot, m.totOK = dst, true
	return dst
}

// Estimate appends y_i = e_i(x)/e_i(w) to dst[:0], from the current state.
func (m *Machine) Estimate(dst []float64) []float64 {
	e := m.total()
	dst = dst[:0]
	for c := range m.k {
		dst = append(dst, e[c]/e[m.k])
	}
	return dst
}

// Exclude declares peer dead: the flow to it is set to zero, so the mass
// exchanged with it returns to this node, and it is never sent to again.
// Once every neighbour of a dead node has excluded it, the estimates
// converge to the aggregate over the survivors. Messages from it are then
// rejected with gossip.ErrUnknownPeer.
func (m *Machine) Exclude(peer gossip.NodeID) {
	n, ok := m.index.lookup(peer)
	if !ok || m.nb[n].gone {
		return
	}
	m.zero(int(n))
	m.cnt.Zeroed--
	m.nb[n].gone = true
	m.totOK = false
	m.live--
	m.settle()
}

// Words yields the input (input.value[c], input.weight and, checked,
// input.checksum), for checked machines the last verified estimate
// (value[c], weight, checksum), and every live flow (flow[j].value[c],
// flow[j].weight, flow[j].checksum).
//
// The words are the machine's own: a caller may write through Word.Ptr (a
// bit flip) until the machine's next method call. Iterating marks the
// machine's cached sums stale, so what is written is seen.
func (m *Machine) Words() iter.Seq[gossip.Word] {
	return func(yield func(gossip.Word) bool) {
		m.totOK = false
		if !m.triple(yield, gossip.PlaceInput, 0, m.input) {
			return
		}
		if m.last != nil && !m.triple(yield, gossip.PlaceState, 0, m.last) {
			return
		}
		for n, j := range m.nbr {
			if !m.nb[n].gone && !m.triple(yield, gossip.PlaceFlow, j, m.flow(n)) {
				return
			}
		}
	}
}

func (m *Machine) triple(yield func(gossip.Word) bool, place gossip.Place, peer gossip.NodeID, v []float64) bool {
	for c := range v {
		w := gossip.Word{Place: place, Peer: peer, Ptr: &v[c]}
		switch {
		case c < m.k:
			w.Part, w.Component = gossip.PartValue, c
		case c == m.k:
			w.Part = gossip.PartWeight
		default:
			w.Part = gossip.PartChecksum
		}
		if !yield(w) {
			return false
		}
	}
	return true
}

// Flow returns a copy of the flow to peer (nil if peer is not a neighbour),
// for tests and diagnostics.
func (m *Machine) Flow(peer gossip.NodeID) []float64 {
	n, ok := m.index.lookup(peer)
	if !ok {
		return nil
	}
	return append([]float64(nil), m.flow(int(n))...)
}

// Input returns a copy of the input (x…, w[, c]).
func (m *Machine) Input() []float64 { return append([]float64(nil), m.input...) }

// Kind returns the message kind the machine sends and accepts.
func (m *Machine) Kind() gossip.Kind { return m.kind }
