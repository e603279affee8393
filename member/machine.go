package member

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gossipreduce/gossipreduce/broadcast"
	"github.com/gossipreduce/gossipreduce/gossip"
)

// BroadcastUnit is the LogP time unit of the result broadcast: the
// broadcast machine's clock is the member's time divided by it.
const BroadcastUnit = 100 * time.Microsecond

func broadcastSpec(n int) broadcast.Spec {
	sch, _ := broadcast.ParseScheme("tree:binomial")
	cor, _ := broadcast.ParseCorrection("checked-overlapped")
	return broadcast.Spec{Nodes: n, Scheme: sch, Correction: cor, Model: broadcast.LogP{L: 2, O: 1}}
}

// plans caches the result broadcast's plan by group size. A plan is
// immutable and the same for every member of a group, and building one
// costs O(N log N); a process that holds many members (the run verb, the
// simulator) builds it once instead of once per member, which made joining
// a group of N members in one process O(N² log N).
var plans struct {
	sync.Mutex
	bySize map[int]*broadcast.Plan
}

// maxPlans bounds the cache: a process rarely holds groups of more than a
// few sizes at once, and a plan of N members holds O(N) memory.
const maxPlans = 8

func planFor(n int) (*broadcast.Plan, error) {
	plans.Lock()
	defer plans.Unlock()
	if p, ok := plans.bySize[n]; ok {
		return p, nil
	}
	p, err := broadcast.NewPlan(broadcastSpec(n))
	if err != nil {
		return nil, err
	}
	if plans.bySize == nil || len(plans.bySize) >= maxPlans {
		plans.bySize = map[int]*broadcast.Plan{}
	}
	plans.bySize[n] = p
	return p, nil
}

// Tags of KindControl messages. A result carries its root (< 2^32) as Tag.
// Membership announcements (hello, leave) use epoch 0, which no operation
// has.
const (
	tagAbort    = ^uint64(0)     // the members disagree: stop
	tagPing     = ^uint64(0) - 1 // are you there?
	tagPong     = ^uint64(0) - 2 // yes
	tagExcluded = ^uint64(0) - 3 // you were declared dead: stop
	tagHello    = ^uint64(0) - 4 // I am a member (again)
	tagLeave    = ^uint64(0) - 5 // I am leaving
)

const (
	// MaxFuture bounds the messages kept for operations not started yet;
	// more are dropped and counted in Stats.Overflow.
	MaxFuture = 4096
	// MaxSilence bounds how far the silences of live neighbours widen the
	// time to declare a member dead: at most this many times
	// Config.Suspect (see Config.Suspect).
	MaxSilence = 8
	// keepFinished is how many finished operations answer late members.
	keepFinished = 4
)

// Op is one operation: what this member contributes.
type Op struct {
	// Epoch numbers the operation; zero takes the next after this member's
	// last operation. It must be larger than the last one.
	Epoch uint64
	// Values are averaged element-wise over the live members.
	Values []float64
	// Extremes are reduced element-wise to their maximum.
	Extremes []float64
	// Sum asks for the sum (the average times the live count) instead of
	// the average.
	Sum bool
	// Idle, if positive, replaces Config.Idle for this operation: the
	// driver knows what the machine cannot, how many members share the
	// process's cores (see aggregate.Config.Idle).
	Idle time.Duration
}

// Outcome is how an operation ended.
type Outcome struct {
	Result Result
	Err    error
}

// Stats counts what a member did over its life.
type Stats struct {
	Operations int // operations started
	Results    int // operations that ended with a result
	Sent       int // messages handed to the driver to send
	Received   int // messages stepped in
	// Rejected counts messages refused (foreign epoch or kind, malformed
	// payload or certificate, a result that fails its checks) and Buffered
	// the messages of a later operation kept until it starts; Overflow
	// those dropped because that buffer was full.
	Rejected, Buffered, Overflow int
	// Excluded counts neighbours this member declared dead or found absent.
	Excluded int
	// EstimateAsks counts neighbours this member asked for their estimate
	// because their latest one disagreed and held up its certificate.
	EstimateAsks int
	// ResultAsks counts neighbours this member asked for the result
	// because it had heard one from a single source and needed a second
	// (see askOverdue).
	ResultAsks int
	// Stalls counts ticks that came so late that this member must have
	// been stalled (starved of CPU, or stopped): its neighbours' silence
	// over the stall was not held against them. LongestStall is the
	// longest such gap between ticks.
	Stalls       int
	LongestStall time.Duration
	// Probes counts the pings sent to neighbours gone silent, and
	// Heartbeats the pongs nobody asked for, sent to neighbours this
	// member had sent nothing for a while (see Config.Suspect).
	Probes, Heartbeats int
	// Slowest is the longest silence after which a neighbour was heard
	// again: twice it is the least time to declare a neighbour dead (see
	// Config.Suspect).
	Slowest time.Duration
	// Isolations counts stretches over which this member heard no
	// neighbour at all (see tickOp), ended by a message: that silence was
	// not held against the neighbours either.
	Isolations int
	// Unconfirmed counts results (distinct payloads) heard from a single
	// source that this member had not accepted itself: it waits for a
	// second source before it takes one (see the package documentation).
	Unconfirmed int
	// Fallbacks counts operations this member handed from a finite
	// algorithm to its fallback (see fallback.go).
	Fallbacks int
	// Foreign counts members found running another configuration of the
	// group (see Machine.Foreign).
	Foreign int
	// Joins and Leaves count the membership announcements heard: members
	// that joined or came back, and members that left.
	Joins, Leaves int
	// Late counts the messages of operations this member had finished:
	// from members still at them, which it answers (the result, or what
	// the exchange stored). While it grows, a member that leaves takes
	// with it what they may still need (see aggregate.Node.Leave).
	Late int
}

// op is one operation: under way, or finished and kept for a while to
// answer members that are late.
type op struct {
	req        Op
	epoch      uint64
	m          gossip.Machine
	x          twoPass         // a finite machine with a fallback (see fallback.go); nil otherwise
	progress   int             // x.Progress() when last seen to change
	progressAt time.Duration   // and when
	xGaps      []time.Duration // the waits for the exchange's steps after its first (which includes the partners' start), sorted
	xPace      time.Duration   // their lower quartile: what a step takes here, the exchange's pace (see opIdle)
	xTickAt    time.Duration   // when the exchange was last ticked after a fallback
	xResult    []float64       // the exchange's result R as a result payload, once accepted
	cert       *certificate
	ext        []float64 // the extremes known so far (max-merged)
	inj        gossip.Injector
	injRand    *rand.Rand
	start      time.Duration
	lastSend   time.Duration
	idleAt     time.Duration // when the last idle step was taken (see idleFrom)
	idleShift  uint          // idle steps wait Idle << idleShift (see tickOp)
	idleFloor  uint          // and idleShift starts again from here after an answer (see step)
	calm       uint          // and Idle << calm while calmVer is the certificate's (see idleWait)
	calmVer    uint64        // the certificate's ver at the last idle step
	// nbr holds the failure detector's view of each neighbour, in the
	// order of Machine.nbrs: a slice searched by id costs a few compares
	// where a map per operation cost a hash and, at a large simulated
	// group, cache misses on every message.
	nbr       []nbrState
	told      map[gossip.NodeID]time.Duration // members: when last sent a result, abort or exclusion
	lastHeard time.Duration                   // when any neighbour was last heard from
	sent      int
	px        paxos // deciding one value (see commit.go)
	done      bool
	result    []float64 // the result payload (see resultPayload)
	root      gossip.NodeID
	heardOnce []heardResult   // results heard from one source only (see deliver)
	abort     error           // the group disagrees: tell the members still gossiping
	hello     []gossip.NodeID // members that announced themselves during the operation
	left      []gossip.NodeID // members that left during the operation
	startDead int             // members known dead when the certificate began (away from the start)
	// outcast is set once this member learns that a member declared it
	// dead, by outcastBy at outcastAt; it then only waits for the result
	// (see outcast), pinging its neighbours at outcastPing.
	outcast                bool
	outcastBy              gossip.NodeID
	outcastAt, outcastPing time.Duration
	// awaitAt is when this member last heard a result from one source
	// alone, and resultAskAt when it last asked a neighbour for it since;
	// resultNext is the neighbour it asks next (see askOverdue).
	awaitAt, resultAskAt time.Duration
	resultNext           int
}

// nbrState is what an operation knows of one neighbour.
type nbrState struct {
	heard  time.Duration // when last heard from, while watched
	pinged time.Duration // when last probed
	sentAt time.Duration // when last sent anything (see tickOp's heartbeats)
	watch  bool          // watched by the failure detector: from certify until excluded
	ever   bool          // heard from in this operation
	// disagrees is set while the latest observation of its estimate
	// disagreed with this member's (see certificate.block).
	disagrees bool
	askedAt   time.Duration // when last asked for its estimate (see askBlocking)
	// certVer is the highest ver of its certificate's sets merged (see
	// the attachment's format): sets of a ver no higher hold nothing new.
	certVer uint64
}

// Machine is one member of a group: the runtime protocol around the gossip
// algorithm — failure detection (probe, suspect, declare), the convergence
// certificate, the root and its take-over, exclusion and rejoin, the result
// broadcast and the answers to late members. It is a pure state machine in
// the manner of etcd-io/raft's RawNode: time enters as the now argument of
// every call (any monotonic clock, real or simulated), messages to send
// accumulate in an outbox the caller drains, and an operation's outcome is
// taken with TakeOutcome. It starts no goroutine and reads no clock, so a
// simulator and the live runtime drive the same code, and a run is
// determined by its inputs. Not safe for concurrent use.
type Machine struct {
	r     *resolved
	log   interface{ Debug(string, ...any) }
	nbrs  []gossip.NodeID // the overlay neighbours, sorted, without repeats
	bnode *broadcast.Node
	// bsent is set once a broadcast message or a broadcast of its own
	// was handed to bnode, which until then has nothing open: Wake, Poll
	// and Deliveries then need no look at it (a cache miss on nearly
	// every event of a large simulated group, 2.5 % of its time).
	bsent    bool
	epoch    uint64 // the last operation started
	ops      int    // operations started
	cur      *op
	finished []*op           // the last few finished operations, newest last
	absent   bitset          // members not counted from the start of the next operation; nil while none is (see setAbsent)
	agreed   []gossip.NodeID // members heard from under this member's configuration, and not found foreign since, in order (see agree)
	foreign  bitset          // members found running another configuration (nil until the first; see Foreign)
	why      map[gossip.NodeID]string
	future   []gossip.Message
	// early notes the neighbours whose pong for operation epoch came in
	// before it began (see notePong); nil while none did.
	early struct {
		epoch uint64
		from  []bool // by position in nbrs
	}
	est      []float64
	peer     peerCert
	out      []gossip.Message
	scratch  []gossip.Message
	outcome  *Outcome
	stats    Stats
	lastTick time.Duration // when Tick was last called
	now      time.Duration // the time of the call under way, for send
	ticked   bool
	// skipTo is the time the last NextTick named: the driver may leave
	// out its ticks before it, and the ticks it leaves out are not a
	// stall (see Tick). Zero when the driver ticks regularly.
	skipTo time.Duration
	// slowest is the longest silence after which a watched neighbour was
	// heard again, and slowStep the longest wait for a step of the
	// exchange that came, less a quarter at each operation begun (see
	// limit and stepLimit).
	slowest, slowStep time.Duration
	// backlog is how many received messages the driver said wait behind
	// the next Step (see Backlog).
	backlog int
	// hard is the HardState last returned, restored the one Restore gave
	// (see durable.go).
	hard, restored HardState
}

// New returns member cfg.ID's machine.
func New(cfg Config) (*Machine, error) {
	r, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	plan, err := planFor(r.n)
	if err != nil {
		return nil, fmt.Errorf("result broadcast: %w", err)
	}
	bn, err := broadcast.NewNode(plan, broadcast.NodeConfig{ID: r.ID, Clock: broadcast.ClockFromMessages, OncePerEpoch: true, Window: keepFinished})
	if err != nil {
		return nil, fmt.Errorf("result broadcast: %w", err)
	}
	nbrs := make([]gossip.NodeID, 0, r.Graph.Degree(r.ID))
	for k := range r.Graph.Degree(r.ID) {
		nbrs = append(nbrs, r.Graph.Neighbor(r.ID, k))
	}
	slices.Sort(nbrs)
	nbrs = slices.Compact(nbrs)
	return &Machine{r: r, log: r.Logger.With("node", r.ID), nbrs: nbrs, bnode: bn}, nil
}

// agree records that member j was heard from under this member's
// configuration. A sorted list, not a set of N bits: a member hears from
// a few dozen others (the root from half the group), and N bits for each
// of N simulated members is a large simulation's memory again.
func (m *Machine) agree(j gossip.NodeID) {
	if i, found := slices.BinarySearch(m.agreed, j); !found {
		m.agreed = slices.Insert(m.agreed, i, j)
	}
}

// setAbsent adds member j to the members away. The set is made on the
// first: nearly always none is away, and a set of N bits for each of N
// members was an eighth of a large simulation's memory.
func (m *Machine) setAbsent(j int) {
	if m.absent == nil {
		m.absent = newBitset(m.r.n)
	}
	m.absent.set(j)
}

// nbrIndex returns neighbour j's position in m.nbrs; ok is false when j is
// not a neighbour.
func (m *Machine) nbrIndex(j gossip.NodeID) (int, bool) {
	return slices.BinarySearch(m.nbrs, j)
}

// watched returns operation o's state of neighbour j if the failure
// detector watches it, nil otherwise.
func (m *Machine) watched(o *op, j gossip.NodeID) *nbrState {
	k, ok := m.nbrIndex(j)
	if !ok || k >= len(o.nbr) || !o.nbr[k].watch {
		return nil
	}
	return &o.nbr[k]
}

// ID returns the member's id.
func (m *Machine) ID() gossip.NodeID { return m.r.ID }

// Active reports whether an operation is under way.
func (m *Machine) Active() bool { return m.cur != nil && !m.cur.done }

// Epoch returns the epoch of the last operation started.
func (m *Machine) Epoch() uint64 { return m.epoch }

// Stats returns the member's counts so far.
func (m *Machine) Stats() Stats { return m.stats }

// Outbox returns the messages to send, in order, and empties the outbox.
// The messages belong to the caller, but their payloads and attachments
// are read-only: messages may share them (every message carries the same
// certificate until its sets change, every proposal the same value).
func (m *Machine) Outbox() []gossip.Message {
	out := m.out
	m.out = nil
	return out
}

// AppendOutbox appends the messages to send to dst, in order, and empties
// the outbox as Outbox does, but keeps its storage for the next messages: a
// driver that is done with the messages before it calls the machine again
// (a simulator) allocates no outbox per call. The messages' payloads and
// attachments are read-only, as with Outbox.
func (m *Machine) AppendOutbox(dst []gossip.Message) []gossip.Message {
	dst = append(dst, m.out...)
	clear(m.out)
	m.out = m.out[:0]
	return dst
}

// TakeOutcome returns the outcome of the operation that has just ended, once.
func (m *Machine) TakeOutcome() (Outcome, bool) {
	if m.outcome == nil {
		return Outcome{}, false
	}
	o := *m.outcome
	m.outcome = nil
	return o, true
}

// Pending returns the lowest epoch after the last one started for which a
// message is waiting, so that an idle member can join an operation another
// member started; ok is false when none is.
func (m *Machine) Pending() (epoch uint64, ok bool) {
	for _, msg := range m.future {
		if msg.Epoch > m.epoch && (!ok || msg.Epoch < epoch) {
			epoch, ok = msg.Epoch, true
		}
	}
	return epoch, ok
}

// Wake returns the time at which the machine next wants to be called (its
// result broadcast's next send) even if nothing arrives; ok is false when
// only the regular tick is needed.
func (m *Machine) Wake() (at time.Duration, ok bool) {
	if !m.bsent {
		return 0, false
	}
	w := m.bnode.Wake()
	if w == broadcast.Never {
		return 0, false
	}
	return time.Duration(w) * BroadcastUnit, true
}

// Announce tells every other member that this one is here (hello: it
// joined, or came back) — best effort, in the outbox.
func (m *Machine) Announce() { m.announce(tagHello, nil) }

// Leave ends any operation under way with ErrClosed and tells every other
// member this one leaves, so they stop counting it from their next
// operation without waiting for it to fall silent. When its last
// operation ended with the exchange's result, chosen, the notice says so
// (see leaveProof).
func (m *Machine) Leave(now time.Duration) {
	m.now = now
	if m.Active() {
		m.finish(now, Result{}, ErrClosed)
	}
	m.announce(tagLeave, m.leaveProof())
}

// leaveProof is what a member that leaves tells the others about its last
// operation: if that ended with the exchange's result R, chosen (its
// second pass ended, or the fallback decided R), the epoch and R's hash
// as three words (the epoch, and the hash's high and low 32 bits); nil
// otherwise. A member still at that operation that accepted the same R
// may then return it (see chosenElsewhere): a straggler of the second
// pass, waiting for vouches, had no one left to ask once every other
// member had its result and left, and gave up (ten groups of 16
// processes beside six busy loops, one group of 500, the straggler
// holding the right estimate; docs/live.md, fourteenth session).
func (m *Machine) leaveProof() []float64 {
	o := m.cur // the last operation begun, finished here (see Leave)
	if o == nil || o.x == nil || !o.x.Done() || o.abort != nil || o.result == nil {
		return nil
	}
	h, ok := o.x.ResultHash()
	if !ok {
		return nil
	}
	return []float64{float64(o.epoch), float64(h >> 32), float64(h & 0xffffffff)}
}

// chosenElsewhere takes the proof a leaving member sent (see leaveProof):
// if it names operation o and the result o's exchange accepted, that
// result is chosen (the leaver returned it), and this member returns it
// as its own second pass would have. A proof for another result is
// ignored and counted as rejected: the member goes on as it would
// without it.
func (m *Machine) chosenElsewhere(now time.Duration, o *op, msg gossip.Message) {
	p := msg.Payload
	if len(p) != 3 || o.x == nil || o.done {
		return
	}
	if p[0] != float64(o.epoch) || !word32(p[1]) || !word32(p[2]) {
		return
	}
	mine, ok := o.x.ResultHash()
	if !ok {
		return // it holds no result to return
	}
	if uint64(p[1])<<32|uint64(p[2]) != mine {
		m.reject("leave", msg, fmt.Errorf("%w: the leaving member's result differs from this member's", gossip.ErrForeignMessage))
		return
	}
	m.log.Debug("the exchange's result chosen, as a leaving member says", "by", msg.From, "at", now)
	o.x.Choose()
	m.checkDone(now)
}

// word32 reports whether v is a whole number in [0, 2³²).
func word32(v float64) bool { return v >= 0 && v < 1<<32 && v == math.Trunc(v) }

// Fail ends the operation under way, if any, with err (the driver lost its
// endpoint, say).
func (m *Machine) Fail(now time.Duration, err error) {
	m.now = now
	if m.Active() {
		m.finish(now, Result{}, err)
	}
}

// GiveUp ends the operation under way with ErrNotConverged (wrapping
// cause) and this member's own estimate.
func (m *Machine) GiveUp(now time.Duration, cause error) {
	m.now = now
	if !m.Active() {
		return
	}
	o := m.cur
	state := ""
	if c := o.cert; c != nil {
		state = fmt.Sprintf(", %d of %d members certified stable in generation %d, %d known dead, root %d", c.stable.count(), c.n, c.gen, c.dead.count(), c.root())
		// Isolated (see tickOp): the likely causes are not the ones of a
		// group that is merely slow, so say so.
		if quiet := now - o.lastHeard; quiet > m.r.Suspect/2 {
			state += fmt.Sprintf(", nothing heard from any neighbour for %v: cut off from the group (a partition, its neighbours down, or the group done without it)", quiet.Round(time.Millisecond))
		}
	}
	// The time is the operation's own: a caller's deadline may also have
	// covered connecting and joining, so "after 47ms" read as a deadline of
	// 47 ms (a helper's finding, with `node --timeout 30s`).
	err := fmt.Errorf("%w %v into the operation (epoch %d%s): %w", ErrNotConverged, (now - o.start).Round(time.Millisecond), o.epoch, state, cause)
	m.finish(now, m.best(), err)
}

func (m *Machine) announce(tag uint64, payload []float64) {
	for j := range m.r.n {
		if j != int(m.r.ID) {
			m.send(gossip.Message{From: m.r.ID, To: gossip.NodeID(j), Kind: gossip.KindControl, Tag: tag, Payload: payload})
		}
	}
}

func (m *Machine) send(msg gossip.Message) {
	m.out = append(m.out, msg)
	m.stats.Sent++
	if o := m.cur; o != nil && !o.done && msg.Epoch == o.epoch {
		if k, ok := m.nbrIndex(msg.To); ok && k < len(o.nbr) {
			o.nbr[k].sentAt = m.now
		}
	}
}

// notePong notes a pong of an operation not begun yet: proof of life and
// nothing more, so Begin counts its sender as heard from (see limit). It
// is not kept with the other early messages: on a complete overlay every
// member's start pong would take a place there, and beyond MaxFuture
// members they would crowd out the pushes that must be kept.
func (m *Machine) notePong(msg gossip.Message) {
	k, ok := m.nbrIndex(msg.From)
	if !ok {
		return
	}
	if m.early.from == nil || m.early.epoch != msg.Epoch {
		m.early.epoch, m.early.from = msg.Epoch, make([]bool, len(m.nbrs))
	}
	m.early.from[k] = true
}

// Begin starts an operation; its outcome comes from TakeOutcome. An epoch
// not after the last one ends at once with an error wrapping
// gossip.ErrInvalidConfig. Begin fails, changing nothing, while another
// operation is under way.
func (m *Machine) Begin(now time.Duration, req Op) error {
	m.now = now
	if m.Active() {
		return fmt.Errorf("member: %w: operation %d is under way", gossip.ErrInvalidConfig, m.cur.epoch)
	}
	if a := m.r.Algorithm; len(req.Extremes) > 0 && a.Finite && !a.Extremes {
		return fmt.Errorf("member: %w: %s takes no extremes", gossip.ErrInvalidConfig, a.Name)
	}
	// The member runs now: local health measures the next tick's lateness
	// from here, not from a tick before the operation (a driver need not
	// tick an idle member, and the idle time is no stall).
	m.lastTick, m.ticked, m.skipTo = now, true, 0
	if m.cur != nil {
		m.finished = append(m.finished, m.cur)
		if len(m.finished) > keepFinished {
			m.finished = m.finished[1:]
		}
	}
	epoch := req.Epoch
	if epoch == 0 {
		epoch = m.epoch + 1
	}
	if epoch <= m.epoch {
		m.cur = &op{req: req, epoch: epoch, done: true}
		m.outcome = &Outcome{Result: Result{Epoch: epoch}, Err: fmt.Errorf("member: %w: epoch %d is not after this member's last, %d", gossip.ErrInvalidConfig, epoch, m.epoch)}
		return nil
	}
	m.epoch = epoch
	m.slowest -= m.slowest / 4
	m.slowStep -= m.slowStep / 4
	m.ops++
	m.stats.Operations++
	r := m.r
	gm, err := r.Algorithm.New(m.gossipConfig(req, epoch))
	o := &op{req: req, epoch: epoch, m: gm, start: now, lastSend: now, progressAt: now,
		ext: slices.Clone(req.Extremes), nbr: make([]nbrState, len(m.nbrs)),
		told: map[gossip.NodeID]time.Duration{}}
	for k := range o.nbr {
		o.nbr[k].sentAt = now
	}
	m.cur = o
	if !m.restore(o) {
		return nil
	}
	if err == nil {
		err = m.misconfigured()
	}
	if err != nil {
		m.finish(now, Result{Epoch: epoch}, err)
		return nil
	}
	if !r.Algorithm.Finite {
		m.certify(now, o)
	}
	if x, ok := gm.(twoPass); ok && r.Algorithm.Fallback != "" {
		o.x = x
	}
	if r.Injector != nil {
		o.inj = r.Injector(epoch)
		o.injRand = rand.New(rand.NewPCG(r.Seed^0x1ec7, epoch<<32|uint64(r.ID)))
		o.inj.InjectState(m.point(now, o), gm)
	}
	if m.early.epoch == epoch {
		for k, heard := range m.early.from {
			o.nbr[k].ever = o.nbr[k].ever || heard
		}
	}
	m.early.from = nil
	m.emit(now, gm.Tick(m.scratch[:0]))
	if o.cert != nil && m.ops == 1 {
		// Tell every neighbour that this member has started. A neighbour
		// never heard from gets four times Suspect in a first operation
		// (see limit), for it may not have started yet; one that crashed
		// just after it started is told apart by this. Without it a
		// member heard only by the neighbour its first push went to was
		// as good as never heard once that neighbour crashed too: at
		// 65,536 simulated members with 1 % crashes one such member (its
		// push went out at 0, it crashed at 43 µs, the neighbour at 8.5
		// ms) held the whole group for 3 s more, and cost it a third
		// convergence. One message a neighbour (not to those known to be
		// away), in the first operation of each Machine: again after a
		// restart, and in each view of an elastic group.
		for k, j := range m.nbrs {
			if o.nbr[k].watch {
				m.control(o, j, tagPong, nil)
			}
		}
	}
	if o.x != nil && o.epoch == m.restored.Epoch {
		// Its votes before the restart may include a promise, after which
		// the exchange must never accept: refused at once (see pledge).
		m.fallback(now, o, "restarted with votes in this operation")
		m.pledge(o)
	}
	if o.x != nil && m.absent.count() > 0 {
		// The exchange needs every member's input, and this member knows
		// of members that are away (the last result left them out): it
		// would only stall for Suspect and then fall back, and it cannot
		// end, so it is refused at once rather than left asking.
		m.fallback(now, o, "members known to be away")
		m.pledge(o)
	}
	// Messages that arrived before this operation started.
	pending := m.future
	m.future = nil
	for _, msg := range pending {
		m.step(now, msg)
	}
	m.checkDone(now)
	m.pollBroadcast(now)
	return nil
}

func (m *Machine) point(now time.Duration, o *op) gossip.InjectPoint {
	return gossip.InjectPoint{Node: m.r.ID, Time: (now - o.start).Seconds(), Sent: o.sent, MaxSent: o.sent, Rand: o.injRand}
}

// emit queues the output of the current operation's gossip machine, with
// this member's certificate if it has one.
func (m *Machine) emit(now time.Duration, out []gossip.Message) {
	m.emitFor(now, m.cur, out, m.cur.cert != nil)
}

// emitFor queues machine output of operation o, which may have finished,
// with o's certificate if certified: the output of o's gossip machine
// once o has a certificate, never an exchange's (a member that fell back
// still answers the exchange, whose messages carry no certificate).
func (m *Machine) emitFor(now time.Duration, o *op, out []gossip.Message, certified bool) {
	if len(out) == 0 {
		return
	}
	var attach []byte
	if certified {
		m.est = o.m.Estimate(m.est[:0])
		attach = o.cert.attachment(len(m.est), len(o.ext))
	}
	for i := range out {
		msg := out[i]
		if o.inj != nil {
			o.inj.InjectMessage(m.point(now, o), &msg)
		}
		if certified {
			// After the injector: a message's faults are the algorithm's.
			msg.Payload = appendEstimate(msg.Payload, m.est, o.ext)
			msg.Attach = attach
		}
		o.sent++
		m.send(msg)
	}
	o.lastSend = now
	m.scratch = out[:0]
}

// control queues a control message of operation o, counting it.
func (m *Machine) control(o *op, to gossip.NodeID, tag uint64, payload []float64) {
	o.sent++
	m.send(gossip.Message{From: m.r.ID, To: to, Kind: gossip.KindControl, Epoch: o.epoch, Tag: tag, Payload: payload})
}

// opFor returns the operation of an epoch: the current one or a recently
// finished one; nil if it is long gone.
func (m *Machine) opFor(epoch uint64) *op {
	if m.cur != nil && m.cur.epoch == epoch {
		return m.cur
	}
	for _, o := range m.finished {
		if o.epoch == epoch {
			return o
		}
	}
	return nil
}

// Step takes in one message addressed to this member.
func (m *Machine) Step(now time.Duration, msg gossip.Message) {
	m.now = now
	m.step(now, msg)
	m.pollBroadcast(now)
}

func (m *Machine) step(now time.Duration, msg gossip.Message) {
	m.stats.Received++
	if int64(msg.From) >= int64(m.r.n) || msg.From == m.r.ID || msg.To != m.r.ID {
		m.reject("address", msg, gossip.ErrForeignMessage)
		return
	}
	m.agree(msg.From)
	if m.foreign != nil {
		m.foreign.clear1(int(msg.From))
	}
	if msg.Kind == gossip.KindControl && msg.Epoch == 0 {
		m.membership(now, msg)
		return
	}
	if m.cur == nil || msg.Epoch > m.epoch {
		if msg.Kind == gossip.KindControl && msg.Tag == tagPing {
			// Not started yet, but alive: say so, or the caller would
			// declare this member dead for being late.
			m.send(gossip.Message{From: m.r.ID, To: msg.From, Kind: gossip.KindControl, Epoch: msg.Epoch, Tag: tagPong})
			return
		}
		if msg.Kind == gossip.KindControl && msg.Tag == tagPong {
			m.notePong(msg)
			return
		}
		if len(m.future) >= MaxFuture {
			m.stats.Overflow++
			return
		}
		m.future = append(m.future, msg)
		m.stats.Buffered++
		return
	}
	if msg.Kind == gossip.KindBroadcast {
		m.bsent = true
		if err := m.bnode.Step(m.bnow(now), msg); err != nil {
			m.reject("broadcast", msg, err)
		}
		m.collect(now)
		return
	}
	o := m.opFor(msg.Epoch)
	if o == nil {
		return // long finished; its result went out then
	}
	if o.done {
		m.stats.Late++
	}
	var nb *nbrState // the sender's, if it is a neighbour
	if k, ok := m.nbrIndex(msg.From); ok && k < len(o.nbr) && !o.done {
		// Heard from in this operation, watched or not: a finite
		// algorithm's partners are not watched until it falls back, and
		// at the fallback a partner that took part and then crashed is no
		// neighbour that may not have started (see limit).
		nb = &o.nbr[k]
		wasHeard := nb.ever
		nb.ever = true
		if nb.watch {
			if gap := now - o.lastHeard; o.cert != nil && gap > m.r.Suspect/2 {
				// Back from isolation (see tickOp): the others were as
				// silent as this one because the network was gone. Keep
				// their silence before it, not the gap, or the first
				// neighbour heard again would have every other declared
				// dead before it could speak.
				m.forgive(now, gap)
				m.stats.Isolations++
			}
			if gap := now - nb.heard; wasHeard && gap > m.slowest {
				// A live neighbour was silent this long: so may the next
				// be, before it is declared dead (see limit).
				m.slowest = gap
				m.stats.Slowest = max(m.stats.Slowest, gap)
				m.log.Debug("neighbour heard again after its longest silence yet", "peer", msg.From, "silent", gap, "at", now)
			}
			nb.heard = now
			o.lastHeard = now
		}
	}
	if msg.Kind == gossip.KindControl {
		m.onControl(now, o, msg)
		return
	}
	if o.outcast && !o.done && msg.Kind != gossip.KindExchange {
		// Out of the operation (see outcast). The exchange still takes
		// its messages, fallen back or not: it may yet end with the
		// exchange's result, which covers every member.
		return
	}
	if o.done {
		if fm := o.finite(); o.abort == nil && fm != nil && (o.x == nil || msg.Kind == gossip.KindExchange) {
			m.answerFinished(now, o, msg)
			return
		}
		m.answerLate(now, o, msg.From)
		return
	}
	if o.x != nil {
		if msg.Kind == gossip.KindExchange {
			m.stepExchange(now, o, msg)
			return
		}
		if o.cert == nil {
			// Another member has fallen back: so does this one.
			m.fallback(now, o, fmt.Sprintf("%s of %s", msg.Kind, m.sender(msg.From)))
		}
	}
	if o.cert != nil {
		if o.cert.isDead(int(msg.From)) {
			// It was declared dead (or absent) but is alive: it misses this
			// operation and is counted again from the next.
			m.absent.clear1(int(msg.From))
			m.tell(now, o, msg.From, tagExcluded, nil)
			return
		}
		rc := receiver{own: o.cert.own(), gen: o.cert.gen}
		if nb != nil {
			rc.known = nb.certVer // the sender's sets merged so far
		}
		payload, err := decodeCertAgainst(msg.Attach, msg.Payload, m.r.n, len(o.req.Values), len(o.ext), rc, &m.peer)
		if err != nil {
			if le := (*lengthError)(nil); errors.As(err, &le) {
				m.mismatch(now, fmt.Errorf("%w: %s has vectors of %d components, this member %d", ErrGroupMismatch, m.sender(msg.From), le.theirs, le.ours))
				return
			}
			if errors.Is(err, gossip.ErrLength) {
				m.mismatch(now, fmt.Errorf("%w: %s sent vectors of other lengths than this member's %d components: %w", ErrGroupMismatch, m.sender(msg.From), len(o.req.Values), err))
				return
			}
			m.reject("certificate", msg, err)
			return
		}
		msg.Payload = payload
		for _, j := range o.cert.mergeWire(m.peer.gen, m.peer.stable, m.peer.dead) {
			m.excluded(gossip.NodeID(j))
		}
		if nb != nil {
			nb.certVer = max(nb.certVer, m.peer.ver)
		}
		if o.cert.isDead(int(m.r.ID)) {
			m.outcast(now, o, msg.From)
			return
		}
		mergeMax(o.ext, m.peer.ext)
	}
	m.quiet(o, true)
	if c, ok := o.m.(clocked); ok {
		c.SetClock(int64(now))
	}
	out, err := o.m.Step(msg, m.scratch[:0])
	if id, ok := o.m.(idler); ok && o.idleShift > 0 && !id.Unanswered() {
		// Answered after the idle steps had spaced out to Idle << k: the
		// next wait starts from one doubling below that, not from Idle,
		// and an answer that comes at that pace lowers it by one more.
		// A network slower than Idle is not asked again every Idle for
		// each new push (16 simulated PFCC members, messages 30 to 300
		// ms on their way: 14 to 30 % fewer messages, most of them asks
		// and their answers); a loss answered at once keeps it at Idle.
		o.idleFloor = o.idleShift - 1
		o.idleShift = o.idleFloor
	}
	if err != nil {
		if errors.Is(err, gossip.ErrLength) {
			m.mismatch(now, fmt.Errorf("%w: %s sent a message that does not fit this member's %d components: %w", ErrGroupMismatch, m.sender(msg.From), len(o.req.Values), err))
			return
		}
		m.reject("machine", msg, err)
	}
	if o.inj != nil {
		o.inj.InjectState(m.point(now, o), o.m)
	}
	last, _ := o.m.(lastStep)
	if o.cert != nil && err == nil && (last == nil || !last.Stale()) {
		m.est = o.m.Estimate(m.est[:0])
		// Estimates that agree extend the streak only if nothing in transit
		// can still change the aggregate: mass this member sent earlier, at
		// a ratio its estimate has since left and not yet acknowledged, is
		// missing from both. Either failing withdraws the certificate, so
		// settled, a pass over every push in flight (5 % of the CPU of a
		// 65,536-member simulation), is asked only when the estimates
		// agree, which they seldom do while the group converges.
		near := o.cert.agrees(m.est, m.peer.est, o.ext, m.peer.ext)
		if nb != nil && nb.watch {
			o.cert.block(&nb.disagrees, !near)
		}
		switch {
		case !near:
			o.cert.unsettle()
		case last != nil && last.Asked():
			// An ask (see askBlocking) says where the asker is, but a
			// member that called itself stable on it would tell only the
			// asker, in its answer, which goes no further: 8 members
			// whose ticks came 60 ms late were all stable 4.7 ms in and
			// their root heard it 306 ms in (trace late_ticks.txt).
		case settled(o.m, o.cert.theta):
			o.cert.agreed()
		default:
			o.cert.unsettle()
		}
	}
	m.emit(now, out)
	if o.cert != nil && err == nil {
		m.askBlocking(now, o)
	}
	m.checkDone(now)
}

func (m *Machine) bnow(now time.Duration) int64 { return int64(now / BroadcastUnit) }

// settled reports whether the machine has nothing in transit that could
// still change the aggregate (see gossip.Settler); machines that cannot tell
// count as settled.
func settled(m gossip.Machine, tol float64) bool {
	s, ok := m.(gossip.Settler)
	return !ok || s.Settled(tol)
}

// membership handles hello and leave announcements.
func (m *Machine) membership(now time.Duration, msg gossip.Message) {
	j := int(msg.From)
	o := m.cur
	switch msg.Tag {
	case tagHello:
		m.stats.Joins++
		m.absent.clear1(j)
		if m.Active() {
			o.hello = append(o.hello, msg.From)
		}
	case tagLeave:
		m.stats.Leaves++
		m.setAbsent(j)
		if m.Active() {
			m.chosenElsewhere(now, o, msg)
		}
		if m.Active() {
			if !slices.Contains(o.left, msg.From) {
				o.left = append(o.left, msg.From)
			}
			if o.cert != nil && o.cert.markDead(j) {
				m.excluded(msg.From)
			}
			if len(o.left) == m.r.n-1 {
				// Nobody is left to decide with, or to say what was
				// decided (a member stopped until the others had their
				// result and left): waiting for the deadline cannot help.
				m.GiveUp(now, errEveryoneLeft)
			}
		}
	default:
		m.reject("membership", msg, gossip.ErrForeignMessage)
	}
}

func (m *Machine) onControl(now time.Duration, o *op, msg gossip.Message) {
	switch msg.Tag {
	case tagAbort:
		// A member this one has declared dead is out of the operation:
		// its word cannot stop the others, who may be deciding without
		// it (it could have the other length, and be the one to fail).
		if !o.done && (o.cert == nil || !o.cert.isDead(int(msg.From))) {
			m.mismatch(now, fmt.Errorf("%w: %s found that the members' vectors differ in length (this member has %d components)", ErrGroupMismatch, m.sender(msg.From), len(o.req.Values)))
		}
	case tagExcluded:
		if !o.done {
			m.outcast(now, o, msg.From)
		}
	case tagPing:
		switch {
		case o.done:
			m.answerLate(now, o, msg.From)
		case o.cert != nil && o.cert.isDead(int(msg.From)):
			m.absent.clear1(int(msg.From))
			m.tell(now, o, msg.From, tagExcluded, nil)
		default:
			m.control(o, msg.From, tagPong, nil)
		}
	case tagPong:
		// Proof of life, answered or (at the start of a member's first
		// operation, see Begin) not; heard was updated above. (One for an
		// operation not begun yet is noted by notePong.)
	case tagPrepare, tagPromise, tagPropose, tagAccepted, tagNack:
		switch {
		case o.outcast && !o.done:
			// Out of the operation: it votes no more (see outcast).
		case o.done:
			if msg.Tag == tagPrepare || msg.Tag == tagPropose {
				m.answerLate(now, o, msg.From)
			}
		case o.cert == nil && o.x != nil:
			m.fallback(now, o, fmt.Sprintf("Paxos from %s", m.sender(msg.From)))
			m.paxosStep(now, o, msg)
		case o.cert != nil:
			m.paxosStep(now, o, msg)
		default:
			m.reject("paxos", msg, gossip.ErrForeignMessage)
		}
	default:
		if msg.Tag >= uint64(m.r.n) {
			m.reject("control", msg, gossip.ErrForeignMessage)
			return
		}
		if !o.done {
			m.deliver(now, msg.Payload, gossip.NodeID(msg.Tag), int(msg.From))
		}
	}
}

// outcast takes this member out of operation o: member by declared it
// dead. That need not mean that the result leaves it out: the root may
// have decided with it before the declaration, made by a member that had
// not heard the result yet (ten groups of 16 member processes on 2 cores:
// members told so returned ErrExcluded while every other member returned
// the average of all 16 inputs, theirs included). So it stops taking part
// (no gossip, no votes, no failure detection) and waits for the result as
// long as it would for a silent neighbour (Suspect, or longer after slow
// ones: see patience), asking its neighbours for it every Suspect/8 (a
// member that has finished answers with it): a result that covers it is
// its result, taken with the checks of any other (see deliver); one that
// leaves it out, or none by then, ends the operation with ErrExcluded.
// An exchange goes on meanwhile, and one fallen back still asks for its
// result (see askExchange): the members that finished it answer its
// messages from what they stored, and its result covers every member.
func (m *Machine) outcast(now time.Duration, o *op, by gossip.NodeID) {
	if o.outcast {
		return
	}
	o.outcast, o.outcastBy, o.outcastAt = true, by, now
	m.log.Debug("declared dead by a member; waiting for the result", "by", by)
	if o.cert != nil {
		m.askResult(now, o)
	}
}

// askResult pings every neighbour of an outcast member: one that has
// finished answers with the result (see answerLate).
func (m *Machine) askResult(now time.Duration, o *op) {
	o.outcastPing = now
	for _, j := range m.nbrs {
		m.control(o, j, tagPing, nil)
	}
}

// excludedSelf ends the operation because the group declared this member
// dead; it announces itself again so that it is counted from the next
// operation on.
func (m *Machine) excludedSelf(now time.Duration, o *op, by gossip.NodeID) {
	m.finish(now, m.best(), fmt.Errorf("%w (told by %s, epoch %d)", ErrExcluded, m.sender(by), o.epoch))
	m.announce(tagHello, nil)
}

// sender names the member a message comes from, for an error that blames
// it: without authentication, only as the message claims.
func (m *Machine) sender(j gossip.NodeID) string {
	if m.r.Authenticated {
		return "node " + strconv.Itoa(int(j))
	}
	return "node " + strconv.Itoa(int(j)) + " (as the message claims: without a group key the sender is not authenticated)"
}

func (m *Machine) reject(what string, msg gossip.Message, err error) {
	m.stats.Rejected++
	m.log.Debug("message rejected", "what", what, "from", msg.From, "kind", msg.Kind, "err", err)
}

// excluded applies a death learned from the group or detected here: a dead
// neighbour's share is removed from this member's state, which changes its
// estimate, so its certificate is withdrawn.
func (m *Machine) excluded(j gossip.NodeID) {
	o := m.cur
	nb := m.watched(o, j)
	if nb == nil {
		return
	}
	o.m.Exclude(j)
	nb.watch = false
	o.cert.block(&nb.disagrees, false)
	o.cert.unsettle()
	m.stats.Excluded++
	m.log.Debug("excluded", "peer", j)
}

// lastStep is implemented by machines that tell what the message their
// last Step took in was (see pushflow.Machine.Stale and Asked): one older
// than one already taken in from its sender, whose estimate is not
// observed (see certificate.block), or an ask (see asker).
type lastStep interface {
	Stale() bool
	Asked() bool
}

// asker is implemented by machines that can ask a neighbour for an
// answer at once (see pushflow.Machine.Ask).
type asker interface {
	Ask(peer gossip.NodeID, out []gossip.Message) []gossip.Message
}

// askBlocking asks the neighbours whose latest estimate disagreed for
// their current one, once this member would otherwise be stable: it
// waits on them alone (see certificate.block), and a neighbour that has
// calmed down sends seldom. Each is asked at most once an idle period.
func (m *Machine) askBlocking(now time.Duration, o *op) {
	c := o.cert
	a, ok := o.m.(asker)
	if !ok || c.blocked == 0 || c.streak < c.need || c.stable.has(c.self) {
		return
	}
	wait := m.opIdle(o)
	if cl, ok := o.m.(clocked); ok {
		if d, ok := cl.AskWait(); ok {
			wait = max(wait, time.Duration(d))
		}
	}
	out := m.scratch[:0]
	for k := range o.nbr {
		nb := &o.nbr[k]
		if nb.disagrees && nb.watch && now-nb.askedAt >= wait {
			nb.askedAt = now
			out = a.Ask(m.nbrs[k], out)
			m.stats.EstimateAsks++
		}
	}
	m.emit(now, out)
}

// Tick is the passage of time: failure detection, the idle step that keeps
// the exchange going after lost messages, the root's decision and the
// result broadcast's timers. Drivers call it regularly (every Tick) while
// an operation is under way (Active), and at the time Wake names; an idle
// member needs no regular tick.
func (m *Machine) Tick(now time.Duration) {
	m.now = now
	if m.ticked && m.r.Tick > 0 {
		// Local health, in the manner of Lifeguard: a tick far later than
		// expected means this member was not running, and neither heard
		// nor could hear its neighbours meanwhile. Their silence over that
		// stretch is no evidence against them. Ticks the driver left out
		// because NextTick said they had nothing to do count as taken.
		//
		// A stall also teaches patience, as a live neighbour's silence
		// does (slowest, see limit): a member that was not running for
		// gap shares its cores or its broker with others that may stall
		// as long, and it waits twice that for a neighbour. Ten PFCC
		// groups of 16 processes on one server beside six busy loops, with
		// --timeout 120s, completed 14 of 30 operations, the others having
		// lost 2 to 16 of their 16 live members to exclusion one after
		// another; with this rule, in two series, 21 of 30 with 2 live
		// members excluded in all, and 12 of 30 with 47 (docs/live.md,
		// "Known limits"). It cannot help when the member declared
		// starved and the one declaring it did not. Only a stall over
		// Suspect/2 changes a limit.
		last := max(m.lastTick, m.skipTo-m.r.Tick)
		if gap := now - last; gap > 2*m.r.Tick && m.Active() {
			m.forgive(now, gap-m.r.Tick)
			m.slowest = max(m.slowest, gap)
			m.stats.Stalls++
			m.stats.LongestStall = max(m.stats.LongestStall, gap)
			if gap > m.r.Suspect/8 {
				m.log.Debug("stalled", "for", gap, "at", now)
			}
		}
	}
	m.lastTick, m.ticked, m.skipTo = now, true, 0
	if m.Active() {
		m.tickOp(now)
	}
	m.pollBroadcast(now)
}

// NextTick returns the earliest time from which a call of Tick may do
// anything: probe, declare, take an idle step, resend a commit message,
// decide after a take-over, or serve the result broadcast (Wake). Until
// then Tick would only note the time, so a driver that ticks every Tick
// may leave out its ticks before the time returned and tick at the first
// of its ticks at or after it; the ticks left out are not taken for a
// stall (the local-health rule in Tick), unlike a tick that comes later
// than that. Anything else the driver calls (Step, Begin) may bring the
// time forward: ask again after it. A member that is not running an
// operation needs a tick only at Wake's time (ok false: none at all).
//
// The simulator uses it to leave out the idle ticks of members that wait
// (for a silent neighbour to be declared dead, say), which were two thirds
// of its events.
func (m *Machine) NextTick(now time.Duration) (at time.Duration, ok bool) {
	at, ok = m.Wake()
	if !ok {
		at = math.MaxInt64
	}
	if m.Active() && m.r.Tick > 0 {
		at = min(at, m.opDue())
		ok = true
	} else if m.Active() {
		at, ok = now, true
	}
	if ok {
		at = max(at, now)
		m.skipTo = at
	}
	return at, ok
}

// opDue is the earliest time at which tickOp acts, by the same conditions
// (a strict comparison of durations, t > d, first holds at d+1).
func (m *Machine) opDue() time.Duration {
	o := m.cur
	if o.outcast && o.cert != nil {
		due := min(m.outcastEnd(o)+1, o.outcastPing+m.r.Suspect/8)
		if o.x != nil {
			due = min(due, o.xTickAt+m.opIdle(o))
		}
		return due
	}
	due := time.Duration(math.MaxInt64)
	// An isolated member (see tickOp) declares nobody dead and takes no
	// idle step until it hears from a neighbour again, and that comes as
	// a Step, after which the driver asks NextTick anew: a declaration or
	// an idle step that would fall after isolation begins is not due.
	// Counted as due, it lay in the past, and an isolated member (cut off
	// by a partition, or its every neighbour crashed) was ticked every
	// Tick for nothing until it heard from someone.
	isolated := o.lastHeard + m.r.Suspect/2 // the last moment it is not
	if o.cert != nil {
		// The shared silence is counted at the machine's last time: it can
		// only grow as time passes without a Step, and so lengthen the
		// limits, which makes the declarations counted here early, never
		// late (a Step, which may shorten them, is followed by a new ask).
		shared := m.sharedSilence(o, m.now)
		for k := range m.nbrs {
			nb := &o.nbr[k]
			if !nb.watch {
				continue
			}
			limit := m.limit(nb, shared)
			if d := nb.heard + limit + 1; d <= isolated {
				due = min(due, d)
			}
			due = min(due, max(nb.heard+limit/4, nb.pinged+m.r.Suspect/16)+1)
			due = min(due, nb.sentAt+m.beatEvery()) // as beatDue, in the same pass
		}
	}
	idle := m.opIdle(o)
	if d := o.idleFrom() + m.idleWait(o, idle); o.cert == nil || d < o.lastHeard+m.r.Suspect {
		due = min(due, d)
	}
	if o.x != nil && o.cert != nil {
		due = min(due, o.xTickAt+idle)
	}
	if o.x != nil && o.cert == nil {
		// The exchange's progress is noted as it steps (noteExchange):
		// only the fallback after Suspect without it is the tick's.
		due = min(due, m.fallbackAt(o)+1)
	}
	if px := &o.px; px.phase == 1 || px.phase == 2 {
		due = min(due, px.phaseAt+m.r.Suspect/2+1, px.resentAt+m.r.Suspect/8+1)
	}
	if m.awaiting(o) {
		due = min(due, m.overdueAt(o)) // as askOverdue
	}
	// The root's decision (checkDone) follows every step, but a member
	// found dead by other means (a Leave, a foreign configuration) can
	// complete the certificate with no step after it.
	if c := o.cert; c != nil && o.px.phase == 0 && c.complete() && c.root() == int(m.r.ID) && c.live() >= Quorum(m.r.n) {
		due = min(due, m.lastTick+m.r.Tick)
	}
	if o.outcast {
		due = min(due, m.outcastEnd(o)+1)
	}
	return due
}

// limit is how long neighbour nb may stay silent before it is declared
// dead: Suspect, or four times that in this member's first operation for
// a neighbour never heard from (the group may still be starting); and at
// least twice the longest silence after which a neighbour was heard again
// (slowest), up to MaxSilence times Suspect.
//
// The widening is learned from evidence, in the manner of a phi-accrual
// detector (Hayashibara et al.; Akka, Cassandra): a member that has seen
// live neighbours go quiet for 800 ms does not take 1 s of silence for
// death. Ten groups of 16 member processes beside six busy loops on 2
// cores failed 14 to 19 operations of 30 with a fixed Suspect of 1 s: the
// one NATS server, starved like everything else, held messages back for
// up to a second, while the senders themselves never stalled more than
// 350 ms; every member that declared another dead had first heard a live
// neighbour after 516 to 962 ms of silence (docs/live.md).
//
// A silence shared by several neighbours at once (shared, see
// sharedSilence) doubles the limit, up to MaxSilence times Suspect: one
// silent neighbour may have crashed, but several falling silent together
// are more likely held up on the way, as Lifeguard reads a member's
// trouble from many peers at once (hashicorp/memberlist). Ten groups of
// 16 member processes on one NATS server beside six busy loops showed
// it: the server, starved, held several members' messages back at once
// for a second and more while those members ran, and their neighbours
// declared them dead in bursts, one member six neighbours within 230 ms,
// each at exactly the limit of 1 s (docs/live.md, "Silences shared by
// several neighbours"). The price is paid when several neighbours do die
// together: they are declared after twice the limit. A neighbour with
// its starting allowance keeps it.
func (m *Machine) limit(nb *nbrState, shared bool) time.Duration {
	if m.starting(nb) {
		return max(4*m.r.Suspect, m.patience())
	}
	d := max(m.r.Suspect, m.patience())
	if shared {
		d = max(d, min(2*d, MaxSilence*m.r.Suspect))
	}
	return d
}

// starting reports whether neighbour nb has its starting allowance: never
// heard from, in this member's first operation (see limit).
func (m *Machine) starting(nb *nbrState) bool { return !nb.ever && m.ops == 1 }

// sharedSilence reports whether more than one neighbour that operation o
// watches has been silent for over Suspect/2 at now: a silence shared,
// which limit does not take for deaths as soon as a single one.
// Neighbours with their starting allowance are left out, and keep it (see
// limit): in a first operation they may not be running yet, which says
// nothing about the ones that are.
func (m *Machine) sharedSilence(o *op, now time.Duration) bool {
	quiet := 0
	for k := range o.nbr {
		if nb := &o.nbr[k]; nb.watch && !m.starting(nb) && now-nb.heard > m.r.Suspect/2 {
			if quiet++; quiet > 1 {
				return true
			}
		}
	}
	return false
}

// exchangeProposer is the member that proposes the exchange's result
// when its second pass ended short of vouches: the lowest one not known
// dead in operation o's certificate that takes part in the second pass.
func (m *Machine) exchangeProposer(o *op) int {
	for j := range m.r.n {
		if !o.cert.isDead(j) && o.x.Vouches(gossip.NodeID(j)) {
			return j
		}
	}
	return -1
}

// outcastEnd is when operation o's member, declared dead, stops waiting
// for the result (see outcastPatience).
func (m *Machine) outcastEnd(o *op) time.Duration {
	return max(o.outcastAt, o.progressAt) + m.outcastPatience(o)
}

// outcastPatience is how long operation o's member, declared dead by
// the group, waits for a result that covers it after it was declared, or
// after its exchange's last step if that came later (an exchange still
// making steps may yet end with its result, which covers every member).
// It is patience, or MaxSilence times Suspect once the member accepted a
// proposal that covers it (the exchange's result at ballot 0, or a
// proposal of the commit): the others may still decide it, and on a
// network slow rather than broken members declared dead gave up before
// they did (16 simulated members, messages up to 4.3 s on their way: 4
// or 5 of them, in three seeds).
func (m *Machine) outcastPatience(o *op) time.Duration {
	if o.px.hasAcc && len(o.px.accepted) > 0 {
		_, _, _, dead, ok := parseResult(o.px.accepted[1:], len(o.req.Values), len(o.ext), m.r.n)
		if ok && !dead.has(int(m.r.ID)) {
			return max(m.patience(), MaxSilence*m.r.Suspect)
		}
	}
	return m.patience()
}

// patience is how long this member waits for a neighbour it has heard
// from, or for the result once it has been declared dead (see outcast):
// Suspect, or twice the longest silence of a live neighbour, up to
// MaxSilence times Suspect (see limit).
func (m *Machine) patience() time.Duration {
	return max(m.r.Suspect, min(2*m.slowest, MaxSilence*m.r.Suspect))
}

// beatEvery is how long a member may send a watched neighbour nothing
// before it owes it a heartbeat (see tickOp).
func (m *Machine) beatEvery() time.Duration { return m.r.Suspect / 5 }

// beatDue is when operation o's member next owes a watched neighbour a
// heartbeat: beatEvery after it last sent it anything.
func (m *Machine) beatDue(o *op) time.Duration {
	due := time.Duration(math.MaxInt64)
	for k := range o.nbr {
		if nb := &o.nbr[k]; nb.watch {
			due = min(due, nb.sentAt+m.beatEvery())
		}
	}
	return due
}

// forgive moves every neighbour's last-heard time forward by d, the time
// this member itself was stalled or cut off, and so its own last send: a
// member that was not running sent nothing because it was not running,
// which is no sign that its messages were lost (see tickOp's idle step).
// Its last send to each neighbour moves too, so that a stall does not
// end in a round of heartbeats: in one process that holds many members
// they all stall together, and forgive each other the silence. Beside six
// busy loops, 256 members of a hypercube in one process sent 249 to 254
// PFCC messages a member before the heartbeats, 295 to 336 with a round
// after every stall (medians 2.1 to 2.5 s against 2.7 to 3.1 s).
func (m *Machine) forgive(now, d time.Duration) {
	o := m.cur
	for k := range o.nbr {
		if nb := &o.nbr[k]; nb.watch {
			nb.heard += d
			nb.sentAt = min(nb.sentAt+d, now)
		}
	}
	o.lastHeard += d
	o.lastSend = min(o.lastSend+d, now)
	o.idleAt = min(o.idleAt+d, now)
	o.progressAt += d
}

func (m *Machine) tickOp(now time.Duration) {
	o := m.cur
	if o.outcast {
		switch {
		case now > m.outcastEnd(o):
			m.excludedSelf(now, o, o.outcastBy)
			return
		case o.cert == nil:
			// An exchange that has not fallen back goes on, asking for
			// what it waits for (see outcast).
		default:
			if now-o.outcastPing >= m.r.Suspect/8 {
				m.askResult(now, o)
			}
			m.askExchange(now, o, m.opIdle(o))
			return
		}
	}
	// Failure detection. A neighbour silent for a quarter of Suspect is
	// probed, again every sixteenth, so about twelve probes go out before
	// it is declared dead: with 20 % loss each way a round trip fails with
	// probability 0.36, and twelve in a row with 5e-6. One silent for
	// Suspect despite the probes is declared dead. In this member's first
	// operation, a neighbour never heard from (the group may still be
	// starting) gets four times as long.
	//
	// Silence from every neighbour at once is this member's own isolation,
	// as Lifeguard reads it (hashicorp/memberlist): its server frozen with
	// its connection open, its network gone. A neighbour is declared dead
	// only while another was heard within Suspect/2; an isolated member
	// keeps probing and declares nobody. (A member whose every neighbour
	// did die cannot gossip with anyone either way.) Before this rule a
	// server stopped for 6 s made every member of 16 exclude every other.
	if o.cert != nil {
		isolated := now-o.lastHeard > m.r.Suspect/2
		shared := m.sharedSilence(o, now)
		for k, j := range m.nbrs {
			nb := &o.nbr[k]
			if !nb.watch {
				continue
			}
			limit := m.limit(nb, shared)
			quiet := now - nb.heard
			switch {
			case quiet > limit && !isolated:
				if o.cert.markDead(int(j)) {
					m.log.Debug("declaring dead", "peer", j, "silent", quiet, "limit", limit, "at", now)
					m.excluded(j)
				}
			case quiet > limit/4 && now-nb.pinged > m.r.Suspect/16:
				nb.pinged = now
				m.stats.Probes++
				m.control(o, j, tagPing, nil)
			}
		}
	}
	// Heartbeats. A member that has nothing to say to a neighbour says
	// that it is alive: every watched neighbour it has sent nothing for
	// Suspect/5 gets a pong nobody asked for, and with it every other
	// that it has sent nothing for Suspect/10, so that one tick serves
	// most of them. No neighbour then goes Suspect/4 without hearing from
	// it, unless a message is lost, and a pair probes each other only
	// after a loss. Before, a member heard from its neighbours by what
	// the algorithm happened to send: a settled member's idle pushes went
	// to a neighbour drawn at random, a quiet one (its certificate
	// complete) sent nothing, nor did one whose only push in flight went
	// to a crashed neighbour, and their neighbours probed them, each ping
	// answered, in waves every Suspect/4. At 65,536 simulated members
	// with 1 % crashes those waves were 8.7 million pings and pongs while
	// a new root took in its promises and acceptances, and the calm idle
	// pushes that kept the rest of the pairs talking (see calmCap) 15
	// million events more while the group waited out Suspect.
	if o.cert != nil && m.beatDue(o) <= now {
		for k, j := range m.nbrs {
			if nb := &o.nbr[k]; nb.watch && now-nb.sentAt >= m.beatEvery()/2 {
				m.stats.Heartbeats++
				m.control(o, j, tagPong, nil) // sets sentAt (see send)
			}
		}
	}
	// Keep the exchange going after lost messages: a member that sent
	// nothing for Idle takes a gossip step on its own, as long as somebody
	// answers (sending into silence only moves mass away; the probes above
	// find members that start late). A machine that can tell that its own
	// pushes are still in flight takes a step that adds none (see idler).
	// A finite algorithm's idle step moves no mass (exchange asks again,
	// with a backoff, for what it waits for, turning to other members when
	// its partner stays silent; rdb sends nothing), so it goes on in
	// silence too: silence is what it is asking its way around.
	idle := m.opIdle(o)
	//
	// An idle step that would ask again for the answer the last one asked
	// for doubles the wait before the next one, up to a quarter of Suspect,
	// until that answer comes: an answer that is slow rather than lost (a
	// process starved of CPU, a vector of 100,000 components taking
	// milliseconds a hop) is not asked for again every Idle, each ask and
	// its answer one more message of the vector's size in the queues that
	// made it slow. An ask lost k times in a row now waits about 2^k idle
	// periods instead of k. (Asks about a newer push are not spaced out:
	// with 100,000 components under load they are still about half of all
	// messages; issue 13.)
	if now-o.idleFrom() >= m.idleWait(o, idle) && (o.cert == nil || now-o.lastHeard < m.r.Suspect) {
		quiet := m.quiet(o, false)
		if c, ok := o.m.(clocked); ok {
			c.SetClock(int64(now))
		}
		if id, ok := o.m.(idler); ok {
			if quiet {
				o.idleAt = now
			}
			again := id.Unanswered()
			m.emit(now, id.Idle(m.scratch[:0]))
			switch {
			case !again:
				o.idleShift = o.idleFloor
			case idle<<(o.idleShift+1) <= max(idle, m.r.Suspect/4):
				o.idleShift++
			}
		} else {
			m.emit(now, o.m.Tick(m.scratch[:0]))
		}
		if o.inj != nil {
			o.inj.InjectState(m.point(now, o), o.m)
		}
		if c := o.cert; c != nil {
			if c.ver == o.calmVer && c.stable.has(c.self) {
				if idle<<o.calm < m.calmCap(idle) {
					o.calm++
				}
			} else {
				o.calm = 0
			}
			o.calmVer = c.ver
		}
		if o.calmed() {
			o.idleAt = now
		}
	}
	m.askExchange(now, o, idle)
	if o.x != nil && o.cert == nil {
		m.noteExchange(now, o)
		if now > m.fallbackAt(o) {
			m.fallback(now, o, fmt.Sprintf("no step of the exchange for %v", now-o.progressAt))
		}
	}
	m.askOverdue(now, o)
	m.paxosTick(now)
	m.checkDone(now)
}

// resultWait is how long a member that heard a result from one source
// alone waits for a second before it asks a neighbour for it, and then
// between asks (see askOverdue).
func (m *Machine) resultWait() time.Duration { return m.r.Suspect / 16 }

// askOverdue asks one neighbour, a different one each time, for the
// result, once this member has heard a result from one source alone and
// waited resultWait since (or since its last ask): a neighbour that has
// finished answers with it (see answerLate). A member that accepted no
// proposal (its proposal lost, or its estimate not yet close enough to
// confirm it) takes a result only from two sources (see corroborated),
// and the corrected-tree broadcast brings one copy to most members.
// Before, such a member waited for a finished neighbour to answer one of
// its heartbeats (every Suspect/5) or probes: at 16,384 simulated members
// under 1 % loss the group had decided and broadcast within 70 ms, and its
// last member had the result at 277 ms; now at 129 ms. A member that
// accepted a proposal asked as well at first, and three members of trace
// slow_network.txt (jitter of 6 s) were then told they had been excluded,
// by neighbours they asked: that waits for the result as before.
func (m *Machine) askOverdue(now time.Duration, o *op) {
	if !m.awaiting(o) || now < m.overdueAt(o) {
		return
	}
	for range len(m.nbrs) {
		k := o.resultNext % len(m.nbrs)
		o.resultNext++
		if o.nbr[k].watch {
			o.resultAskAt = now
			m.stats.ResultAsks++
			m.control(o, m.nbrs[k], tagPing, nil)
			return
		}
	}
}

// awaiting reports whether operation o's member waits for a second source
// of a result (see askOverdue).
func (m *Machine) awaiting(o *op) bool {
	return o.cert != nil && o.px.phase == 0 && len(o.heardOnce) > 0
}

// overdueAt is when askOverdue asks next.
func (m *Machine) overdueAt(o *op) time.Duration {
	return max(o.awaitAt, o.resultAskAt) + m.resultWait()
}

// opIdle is operation o's idle period: Config.Idle, or the operation's own;
// while its exchange runs (not fallen back), at least what one of its
// steps takes (xPace, the lower quartile of their waits), up to Suspect/4.
// The exchange asks again for what a step waits for on its second idle
// step, and a step of its second pass goes on without the partner's vouch
// after four to ten asks (see exchange.Machine.Tick): that pace supposes
// steps that take a few idle periods at most. With messages 300 ms on
// their way every member skipped vouches that were merely in flight, no
// member could finish, and all fell back to gossip, which cannot converge
// at that latency before a deadline (16 simulated members: 0 of 16 with a
// result in 30 s, 2,600 messages a member; a NATS server starved by 160
// member processes beside six busy loops held messages back that long;
// trace slow_network.txt). Paced by its steps, the exchange asks about as
// often per step wherever it runs. A low quantile, not the longest wait:
// a step that waited for an ask to recover a lost message would slow the
// asks for the next one, which would wait longer still (64 members under
// 20 % loss took 0.9 to 1.6 s instead of 0.15 to 0.25 s; 0.2 to 0.6 s
// with the median, 0.17 to 0.25 s with the lower quartile).
func (m *Machine) opIdle(o *op) time.Duration {
	idle := m.r.Idle
	if o.req.Idle > 0 {
		idle = o.req.Idle
	}
	if o.x != nil && o.cert == nil {
		idle = max(idle, min(o.xPace, m.r.Suspect/4))
	}
	return idle
}

// askExchange lets a member that has fallen back from the exchange ask,
// every idle period, for the result that members finished the exchange
// with meanwhile, which is the one the fallback must end with (see
// fallback.go). A member whose own estimate leaves out an input that R
// covers (a member that died after contributing) cannot confirm R
// otherwise, and waited out its deadline; nor can a member declared dead
// (see outcast), which no longer gossips.
func (m *Machine) askExchange(now time.Duration, o *op, idle time.Duration) {
	if o.x == nil || o.cert == nil || now-o.xTickAt < idle {
		return
	}
	o.xTickAt = now
	for _, msg := range o.x.Tick(m.scratch[:0]) {
		o.sent++
		m.send(msg)
	}
	m.scratch = m.scratch[:0]
	m.noteAccepted(o)
}

// idleFrom is when operation o's idle wait started: its last send, or its
// last idle step if that came later and sent nothing. A quiet member whose
// pushes are all answered (its certificate complete while the root
// commits) sends nothing on an idle step; timed from its last send alone,
// the next idle step was due at once, and such a member took one on every
// tick: at 4,096 simulated members with 1 % crashes those empty steps were
// 1.4 of the 4.9 million events, the whole group ticking every
// millisecond for the 500 ms a new root then waited before it bid. Only a
// quiet idler's idle steps are noted (idleAt): the exchange counts the
// ticks it is given for its own backoff, and keeps one every tick once
// Idle has passed without a send; so does a flow member that is not
// quiet, whose idle step sends nothing only while it holds its pushes
// back for a repair, which it asks for again after a count of its steps.
//
// A calm member (see calmed) times its idle steps from the last one
// alone: the answers it sends while hushed go to the members that pushed
// to it, and timed from them its idle pushes, which are what its other
// neighbours hear from it, came later and later.
func (o *op) idleFrom() time.Duration {
	if o.calmed() {
		return o.idleAt
	}
	return max(o.lastSend, o.idleAt)
}

// calmed reports whether o's member has calmed down: it is stable, its
// last idle step was already a calm one, and its certificate has not
// changed since (see idleWait and quiet).
func (o *op) calmed() bool {
	c := o.cert
	return o.calm > 0 && c != nil && c.ver == o.calmVer && c.stable.has(c.self)
}

// idleWait is how long a member that has sent nothing waits before its
// idle step in operation o: Idle, doubled per ask left unanswered (see
// tickOp), and doubled per idle step that found nothing new while the
// member has settled.
//
// A settled member (its estimate agrees with its neighbours', so it is in
// its certificate's stable set) whose certificate did not change since
// its last idle step has nothing to tell: the group is waiting, usually
// for a silent member to be declared dead after Suspect. Its idle steps
// only start pushes that wander until a member waiting for a repair
// holds them: at 4,096 simulated members with 1 % crashes they were 40 %
// of all messages. Such a member's idle steps slow down, to at most
// calmCap apart, and return to Idle as soon as the certificate changes
// (an exclusion, a member newly stable, a withdrawal) or the member
// leaves the stable set.
func (m *Machine) idleWait(o *op, idle time.Duration) time.Duration {
	w := idle << o.idleShift
	if c, ok := o.m.(clocked); ok && c.Pending() {
		w = max(w, m.askWait(c))
	}
	if o.calmed() {
		w = max(w, min(idle<<o.calm, m.calmCap(idle)))
	}
	return w
}

// askWait is how long a member whose machine has a push unacknowledged
// waits after its last send before its idle step asks about it: at least
// the machine's AskWait (twice the lower quartile of its asks' recent
// round trips), up to Suspect; no longer than before while the machine
// has no estimate.
//
// Until 2026-11-25 the idle step asked after Idle, doubling while the
// same push stayed unanswered and starting again from Idle for the next.
// On a server too slow for the group's traffic (member/simnet's Server,
// as a server starved of CPU) every push then drew asks and answers while
// its acknowledgement queued behind them: 16 simulated PFCC members of a
// hypercube whose server forwards a message every 500 µs sent 584
// messages a member, three quarters of them asks and their answers, and
// took 4.6 s; at one every 2 ms none converged within 30 s (978 messages
// a member, the server busy all along). Trace congested_server.txt.
func (m *Machine) askWait(c clocked) time.Duration {
	d, ok := c.AskWait()
	if !ok {
		return 0
	}
	return min(time.Duration(d), m.r.Suspect)
}

// calmCap bounds a settled member's idle period to Suspect/16. Its
// neighbours hear from it by its heartbeats (see tickOp), not by these
// pushes. Until the heartbeats the cap was Suspect/(4 × degree), so that
// each neighbour got an idle push every Suspect/4 on average: at 65,536
// simulated members with 1 % crashes those pushes, their answers and the
// ticks that made them were 15 million events while the group waited out
// Suspect. A longer cap sends fewer still and settles again more slowly
// once the wait ends: with Suspect/4, 256 members of a hypercube with one
// crashed (TestCalmMembersEndTheCirculation) sent 682 to 708 messages a
// member against 742 to 762 with Suspect/16, and took 1 to 2 % longer.
func (m *Machine) calmCap(idle time.Duration) time.Duration {
	return max(idle, m.r.Suspect/16)
}

// idler is implemented by machines that know whether their own pushes
// have been answered (the flow machines, see pushflow.Machine.Idle): while
// a push of theirs is unacknowledged their idle step asks for its answer
// instead of pushing again. Every push received is answered with one
// push, so each idle push adds a message that circulates until the
// operation ends. Tick pushes
// whenever it is called, and a member whose messages are merely slow (a
// process starved of CPU, a loaded broker: silences longer than Idle with
// nothing lost) added one every Idle: under CPU contention 16 members over
// NATS added 3,000 to 4,300 in one operation, members ended with hundreds
// of pushes unacknowledged (up to 1,000), estimates and acknowledgements
// were seconds old and the certificate kept being withdrawn until the
// deadline (TestOverEmbeddedNATS).
type idler interface {
	Idle(out []gossip.Message) []gossip.Message
	// Unanswered reports whether Idle would ask again for the answer
	// the last idle step asked for.
	Unanswered() bool
}

// clocked is implemented by machines that time their pushes' round trips
// (see pushflow.Machine.AskWait).
type clocked interface {
	SetClock(now int64)
	AskWait() (int64, bool)
	Pending() bool
}

// quieter is implemented by machines that can stop answering pushes with
// pushes (see pushflow.Machine.Quiet). A member is quiet while its
// certificate is complete: every member's estimate has settled and the
// root is committing one, so more exchanges only cost messages. Without
// it, the exchanges went on at full speed while the root handled its
// commit's N replies: at 4,096 simulated members, 37 % of all messages
// were sent in that wait, and the share grew with N.
//
// Hush is Quiet without paying the ended pushes back (see
// pushflow.Machine.Hush): a member that has calmed down is hushed (see
// quiet).
type quieter interface {
	Quiet(on bool)
	Hush(on bool)
}

// quiet makes o's machine quiet for the step (calm true) or the idle step
// (calm false) about to be taken while o's certificate is complete, and
// while this member is behind on its messages (see Backlog), and reports
// whether it is.
//
// For its steps, not its idle steps, a member that has calmed down is
// hushed (see pushflow.Machine.Hush): it is stable, its last idle step
// was already a calm one (see idleWait), and its certificate has not
// changed since. It answers the pushes it receives and pushes none on,
// while its idle pushes go on at the calm pace (its neighbours hear from
// it by its heartbeats, see tickOp). A group waits so for its certificate
// to complete, usually for a silent member to be declared dead, up to
// four times Suspect in a first operation, and the pushes made since the
// operation began circulated all that time: at 65,536 simulated members
// with 1 % crashes, one of them never heard from, 1.8 to 4.4 million
// messages every 100 ms from 1.4 s (the other crashes declared at 1 s) to
// 4 s, 67 of the run's 143 million. Any change of the certificate (an
// exclusion, a new generation, a member newly stable) ends the calm of
// every member it reaches, and with it the hush. Hushed rather than quiet,
// the member owes no push for those it ends: with the debt, every member
// put one back into circulation as its calm ended, and at 4,096 members
// with 1 % crashes (one of them never heard from) the first exclusions set
// off 8.2 million messages where 1.4 million had been enough.
func (m *Machine) quiet(o *op, calm bool) bool {
	q, ok := o.m.(quieter)
	if !ok || o.cert == nil {
		return false
	}
	c := o.cert
	if c.complete() || m.behind() {
		q.Quiet(true)
		return true
	}
	hush := calm && o.calmed()
	q.Hush(hush)
	return hush
}

// behind reports whether more messages wait to be stepped than this
// member has neighbours (see Backlog).
func (m *Machine) behind() bool { return m.backlog > len(m.nbrs) }

// Backlog tells the machine how many received messages wait to be stepped
// after the next call of Step: a driver that reads from a queue passes its
// length before each Step. It holds until the next call; a driver that
// never calls it leaves it at zero, and nothing changes.
//
// A member with more messages waiting than it has neighbours is behind: a
// process starved of CPU, or back from a pause. The pushes its neighbours
// made meanwhile sit in its queue, and in a flow algorithm every push
// taken in is answered with a push, so all of them would go back into
// circulation at once: at 4,096 simulated members, 205 of them paused for
// 200 ms, the group then exchanged at full speed (2,700 pushes in
// circulation, 950,000 messages every 20 ms) until the certificate
// completed, 7 of its 8 million events. While behind, a member is quiet
// (see pushflow.Machine.Quiet): it answers each push to its sender with
// its flow and does not push on, so the pushes that queued end with it.
// Quiet moves no mass; the member pushes again once it has caught up.
func (m *Machine) Backlog(n int) { m.backlog = max(n, 0) }

// checkDone finishes a finite algorithm, or lets the root broadcast once
// the group's certificate is complete.
func (m *Machine) checkDone(now time.Duration) {
	if !m.Active() {
		return
	}
	o := m.cur
	if m.r.Algorithm.Lossy && o.cert != nil && o.cert.nDead > o.startDead {
		m.finish(now, m.best(), fmt.Errorf("%w: %s cannot leave out what a member that died during operation %d held", ErrInputLost, m.r.Algorithm.Name, o.epoch))
		return
	}
	if m.r.n == 1 {
		// A group of one has its answer at once (no message will ever come
		// to certify it).
		m.est = o.m.Estimate(m.est[:0])
		m.deliver(now, resultPayload(m.est, o.ext, 1, newBitset(1)), m.r.ID, fromSelf)
		return
	}
	if fm := o.finite(); fm != nil {
		if f, ok := fm.(gossip.Finisher); ok && f.Done() {
			m.est = fm.Estimate(m.est[:0])
			m.deliver(now, resultPayload(m.est, extremesOf(fm), m.r.n, newBitset(m.r.n)), m.r.ID, fromSelf)
			return
		}
		if o.cert == nil {
			return
		}
		// The exchange's second pass ended here short of vouches, with R
		// accepted: the lowest member not known dead that can accept R
		// proposes it (ballot 0's value, which its promises adopt unless
		// a higher ballot's came), without waiting for the gossip's
		// certificate (see fallback.go). Not the root: with N not a power
		// of two member 0 is folded, never accepts, and nobody proposed
		// (13 simulated members, every one of the 8 that vouch accepted
		// R, all short, PFCC not converging in 40 Suspect).
		if o.x != nil && o.x.Short() && o.px.phase == 0 && !o.outcast && o.px.hasAcc && o.px.accB == 0 && m.exchangeProposer(o) == int(m.r.ID) {
			m.propose(now, o.px.accepted[1:])
			return
		}
	}
	// A side without a majority of the group never decides: it cannot tell
	// the others' silence from a partition, and the other side may decide.
	// A member declared dead does not either (see outcast).
	if o.outcast || o.px.phase != 0 || !o.cert.complete() || o.cert.root() != int(m.r.ID) || o.cert.live() < Quorum(m.r.n) {
		return
	}
	// A member that became root because the previous one died proposes
	// at once. It used to wait Suspect/2 for a result the dead root might
	// have started to spread, from before results were chosen by Paxos:
	// now its prepare learns any value a majority accepted, members that
	// finished answer it with their result (answerLate), and the wait cost
	// every member Suspect/2 of heartbeats (40 messages a member with 16
	// neighbours) where a prepare round costs the group 2(N−1).
	m.est = o.m.Estimate(m.est[:0])
	m.propose(now, resultPayload(m.est, o.ext, o.cert.live(), o.cert.dead))
}

// pollBroadcast queues what the result broadcast wants to send now.
func (m *Machine) pollBroadcast(now time.Duration) {
	if !m.bsent {
		return
	}
	for {
		m.scratch = m.bnode.Poll(m.bnow(now), m.scratch[:0])
		if len(m.scratch) == 0 {
			break
		}
		for _, msg := range m.scratch {
			if o := m.opFor(msg.Epoch); o != nil {
				o.sent++
			}
			m.send(msg)
		}
	}
	m.collect(now)
}

// collect takes the broadcast's deliveries.
func (m *Machine) collect(now time.Duration) {
	if !m.bsent {
		return
	}
	for _, dv := range m.bnode.Deliveries(nil) {
		if m.Active() && dv.Epoch == m.cur.epoch {
			// The members that relay a broadcast have not checked it: its
			// source is the root it names.
			m.deliver(now, dv.Value, dv.Root, int(dv.Root))
		}
	}
}

// answerLate tells a member still gossiping in an operation this member
// has finished how it ended: the result, or that the group disagrees.
func (m *Machine) answerLate(now time.Duration, o *op, to gossip.NodeID) {
	switch {
	case o.abort != nil:
		m.tell(now, o, to, tagAbort, nil)
	case o.result != nil:
		m.tell(now, o, to, uint64(o.root), slices.Clone(o.result))
	}
}

// answerFinished hands a message of a finished operation to its finite
// machine, which may answer from what it stored: package exchange sends its
// step message again to a partner that lost it, after it has its own
// result. The machine refuses anything else (rdb refuses everything late),
// and what it refuses is dropped and counted.
func (m *Machine) answerFinished(now time.Duration, o *op, msg gossip.Message) {
	out, err := o.finite().Step(msg, m.scratch[:0])
	if err != nil {
		m.reject("machine", msg, err)
	}
	m.emitFor(now, o, out, false)
}

// tell sends a control message at most once per Suspect/8 to each member,
// so that a member that keeps gossiping is not answered for every message.
func (m *Machine) tell(now time.Duration, o *op, to gossip.NodeID, tag uint64, payload []float64) {
	if t, ok := o.told[to]; ok && now-t < m.r.Suspect/8 {
		return
	}
	o.told[to] = now
	m.control(o, to, tag, payload)
}

// mismatch ends the operation because the members disagree, and tells
// the members this one exchanges with at once (and later any member that
// still sends to it, see answerLate), so that none of them mistakes the
// silence of the members that noticed for a crash and carries on, nor
// waits for a step message that will not come: a finite algorithm's
// partners may be any member, so those are all told.
func (m *Machine) mismatch(now time.Duration, err error) {
	o := m.cur
	o.abort = err
	m.finish(now, m.best(), err)
	if m.r.Algorithm.Finite {
		// (a finite algorithm's fallback included)
		for j := range m.r.n {
			if j != int(m.r.ID) {
				m.tell(now, o, gossip.NodeID(j), tagAbort, nil)
			}
		}
		return
	}
	for k := range m.r.Graph.Degree(m.r.ID) {
		m.tell(now, o, m.r.Graph.Neighbor(m.r.ID, k), tagAbort, nil)
	}
}

// deliver ends the operation with the group's result, after checking it:
// it must have the operation's shape, cover a majority of the group and
// cover this member; a result that leaves this member out ends the
// operation with ErrExcluded, never with someone else's aggregate.
//
// from is the member the result comes from (a broadcast's root, a late
// answer's sender), or fromSelf for this member's own decision. A result
// this member did not itself accept in the commit (see commit.go) is
// taken only once two sources sent it bit for bit and its own estimate
// confirms it: one message, forged or from a faulty member, cannot decide
// what a member returns.
func (m *Machine) deliver(now time.Duration, payload []float64, root gossip.NodeID, from int) {
	o := m.cur
	values, ext, live, dead, ok := parseResult(payload, len(o.req.Values), len(o.ext), m.r.n)
	if !ok {
		m.stats.Rejected++
		m.log.Debug("result of the wrong shape ignored", "root", root, "words", len(payload))
		return
	}
	if m.r.n > 1 && live < Quorum(m.r.n) {
		m.stats.Rejected++
		m.log.Debug("result without a majority ignored", "root", root, "live", live, "quorum", Quorum(m.r.n))
		return
	}
	if dead.has(int(m.r.ID)) {
		m.finish(now, m.best(), fmt.Errorf("%w (the result of epoch %d from root %d does not cover this member)", ErrExcluded, o.epoch, root))
		m.announce(tagHello, nil)
		return
	}
	accepted := o.px.hasAcc && gossip.SameBits(o.px.accepted[1:], payload)
	if from != fromSelf && !accepted && o.x != nil && o.cert == nil {
		// An exchange under way has no estimate to check a result
		// against: it takes the result through the exchange (hashed, from
		// the members that hold it), or checks it once it has fallen back.
		m.stats.Rejected++
		m.log.Debug("result during the exchange ignored", "root", root)
		return
	}
	if from != fromSelf && !accepted {
		if o.cert != nil && !m.confirmsAbsent(o, dead) {
			// Without a key the absent set is as forgeable as the value:
			// a true average labelled with fewer members would claim to be
			// the average of inputs it is not. Wait until this member's
			// own certificate knows of every member the result leaves out.
			m.stats.Rejected++
			m.log.Debug("result whose absent members this member does not know dead ignored", "root", root)
			return
		}
		if o.cert != nil && !m.plausible(o, values, ext) {
			// Without a group key anybody can send a result: take only one
			// that this member's own state confirms. A genuine result is
			// within ε/2 of every certified estimate (see checkDone), and
			// estimates only move closer after certification unless a
			// member is excluded late, when this member refuses and runs
			// out its time (ErrNotConverged) rather than return a value it
			// cannot confirm.
			m.stats.Rejected++
			m.log.Debug("result that this member's estimate does not confirm ignored", "root", root)
			return
		}
		if !m.corroborated(o, payload, from) {
			return
		}
	}
	values = slices.Clone(values)
	if o.req.Sum {
		for i := range values {
			values[i] *= float64(live)
		}
	}
	o.result = slices.Clone(payload)
	o.root = root
	if o.x != nil && o.xResult != nil && gossip.SameBits(o.xResult, payload) {
		// The fallback decided the exchange's result R: R is chosen, and
		// the exchange says so to members that ask it for the result (a
		// member that fell back before its first pass ended cannot confirm
		// R from its own estimate when R covers a member that died after
		// contributing; see tickOp).
		o.x.Choose()
	}
	// The group's view of who is away holds from the next operation on,
	// except for members that announced themselves since.
	if m.absent != nil || dead.count() > 0 {
		m.absent = append(m.absent[:0], dead...)
	}
	m.absent.clear1(int(m.r.ID))
	for _, j := range o.hello {
		m.absent.clear1(int(j))
	}
	for _, j := range o.left {
		m.setAbsent(int(j))
	}
	m.finish(now, Result{Value: values, Extremes: slices.Clone(ext), Epoch: o.epoch, Live: live, Root: root, Absent: dead.members(m.r.n)}, nil)
}

// errEveryoneLeft ends an operation in which every other member has left.
var errEveryoneLeft = errors.New("every other member has left the group")

// Sources of a result other than a member.
const fromSelf = -1 // this member's own decision

// maxHeardOnce bounds the results an operation keeps while it waits for a
// second source: a flood of distinct forgeries evicts the oldest, and a
// genuine result keeps coming (late answers repeat every Suspect/8).
const maxHeardOnce = 16

// heardResult is a result payload heard from one source.
type heardResult struct {
	payload []float64
	from    int
}

// corroborated records that from sent payload and reports whether another
// source sent the same bits before.
func (m *Machine) corroborated(o *op, payload []float64, from int) bool {
	for _, h := range o.heardOnce {
		if gossip.SameBits(h.payload, payload) {
			return h.from != from
		}
	}
	if len(o.heardOnce) == maxHeardOnce {
		o.heardOnce = slices.Delete(o.heardOnce, 0, 1)
	}
	o.heardOnce = append(o.heardOnce, heardResult{payload: slices.Clone(payload), from: from})
	o.awaitAt = m.now
	m.stats.Unconfirmed++
	m.log.Debug("result heard from one source; waiting for a second", "from", from)
	return false
}

// confirmsAbsent reports whether this member's certificate knows of every
// member a result leaves out. With authenticated messages the result's
// absent set comes from a member and is taken as it is.
func (m *Machine) confirmsAbsent(o *op, dead bitset) bool {
	if m.r.Authenticated {
		return true
	}
	for w := range dead {
		if dead[w]&^o.cert.dead[w] != 0 {
			return false
		}
	}
	return true
}

// plausible reports whether a result agrees with this member's own state:
// its estimate within ε of the values, and extremes no lower than its own.
func (m *Machine) plausible(o *op, values, ext []float64) bool {
	m.est = o.m.Estimate(m.est[:0])
	if relDiff(m.est, values) > m.r.Epsilon {
		return false
	}
	for i := range o.ext {
		if !(ext[i] >= o.ext[i]) {
			return false
		}
	}
	return true
}

// best is this member's own estimate, for an operation that gives up; its
// Value is nil when the estimate is not finite.
func (m *Machine) best() Result {
	o := m.cur
	if o.m == nil {
		return Result{Epoch: o.epoch}
	}
	m.est = o.m.Estimate(m.est[:0])
	live := m.r.n
	if o.cert != nil {
		live = o.cert.live()
	}
	if gossip.CheckFinite(m.est) != nil {
		// A weight that is momentarily zero (all of it sent away) or a
		// corrupted state has no estimate to offer: no value beats NaN.
		return Result{Extremes: slices.Clone(o.ext), Epoch: o.epoch, Live: live, Root: m.r.ID}
	}
	v := slices.Clone(m.est)
	if o.req.Sum {
		for i := range v {
			v[i] *= float64(live)
		}
	}
	return Result{Value: v, Extremes: slices.Clone(o.ext), Epoch: o.epoch, Live: live, Root: m.r.ID}
}

func (m *Machine) finish(now time.Duration, res Result, err error) {
	o := m.cur
	if o.done {
		return
	}
	o.done = true
	res.Messages = o.sent
	res.Elapsed = now - o.start
	if err == nil {
		m.stats.Results++
	}
	m.outcome = &Outcome{Result: res, Err: err}
}
