// Package simnet is a deterministic network of member machines: it drives
// the runtime protocol of package member — the same code the live runtime
// runs over NATS — in simulated time, with the faults a real deployment
// meets: latency and reordering, loss, duplication, crashes at any moment,
// members that pause (a starved or SIGSTOPped process) or run slowly,
// partitions that heal or not, and forged or replayed messages. Every run
// is determined by its Config (the seed included), so a failing schedule
// replays exactly.
//
// It starts no goroutine and reads no clock: time is an event queue.
package simnet

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gossipreduce/gossipreduce/algo"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/eventq"
	"github.com/gossipreduce/gossipreduce/member"
	"github.com/gossipreduce/gossipreduce/topology"
)

// Config describes a simulated group and its network.
type Config struct {
	// Nodes is the group size.
	Nodes int
	// Topology is the overlay (topology.Parse); default "complete".
	Topology string
	// Algorithm is an algo name; default the library's, "exchange".
	Algorithm string
	// Epsilon is the target accuracy; default 1e-9.
	Epsilon float64
	// Tick, Idle and Suspect are the members' timings (as in
	// aggregate.Config); defaults 1 ms, 4 ms and 1 s.
	Tick, Idle, Suspect time.Duration
	// Latency is the one-way delay of every message; default 50 µs (NATS
	// on loopback). Jitter adds a uniform extra delay in [0, Jitter), which
	// reorders messages.
	Latency, Jitter time.Duration
	// Overhead is the processing time of one event (a message or a tick) at
	// a member, LogP's o; default 5 µs. A slow member's is multiplied.
	Overhead time.Duration
	// Loss and Dup are the probabilities that a message is dropped, or
	// delivered twice.
	Loss, Dup float64
	// Seed seeds the network's draws and the members' machines.
	Seed uint64
	// Extremes makes every member reduce its input vector a second time,
	// as extremes (element-wise maxima), so that member.CheckExtremes can
	// check them.
	Extremes bool
	// EveryTick ticks every member every Tick, as the live driver does.
	// By default a member that runs at full speed (not slowed, paused or
	// made late) is ticked only when member.Machine.NextTick says a tick
	// has something to do: members waiting out a silent neighbour's
	// Suspect made two thirds of the events with ticks that did nothing.
	EveryTick bool
}

func (c *Config) defaults() {
	d := member.Defaults{Topology: c.Topology, Algorithm: c.Algorithm, Epsilon: c.Epsilon, Tick: c.Tick, Idle: c.Idle, Suspect: c.Suspect}
	d.Fill()
	c.Topology, c.Algorithm, c.Epsilon, c.Tick, c.Idle, c.Suspect = d.Topology, d.Algorithm, d.Epsilon, d.Tick, d.Idle, d.Suspect
	if c.Latency == 0 {
		c.Latency = 50 * time.Microsecond
	}
	if c.Overhead == 0 {
		c.Overhead = 5 * time.Microsecond
	}
}

type evKind uint8

const (
	evDeliver evKind = iota
	evTick
	evWake
	evBegin
	evCrash
	evProcess // take the next message from the member's inbox
	evForeign // the member learns that member msg runs another configuration (see Misconfigure)
)

// event is what the queue holds. A message in flight waits in Net.flight,
// and the event holds its slot: the queue moves its events on every push
// and pop, and an event of 12 bytes moves much faster than one that carries
// the message's 80 (a large group has millions of messages in flight).
type event struct {
	kind evKind
	to   gossip.NodeID
	msg  int32 // evDeliver: the message's slot in Net.flight; evForeign: the other member
}

type node struct {
	m       *member.Machine
	crashed bool
	slow    float64       // processing-time factor, ≥ 1
	late    time.Duration // how late each of its ticks comes (see Late)
	pauses  []pause       // see Pause
	// tickGen numbers the member's tick events: only the one that
	// carries the current number is live, the others were replaced by an
	// earlier one (see schedule). tickAt is when the live one is due
	// (never: none is queued), lastTick when the member was last ticked.
	tickGen  int32
	tickAt   time.Duration
	lastTick time.Duration
	promised time.Duration // with checkTicks: what NextTick said after its last event (never: no tick needed)
	busy     time.Duration // busy until then
	wakeAt   time.Duration // the earliest wake event queued, 0 if none
	inbox    []gossip.Message
	head     int  // next message of inbox to process
	waiting  bool // an evProcess event is queued
	op       member.Op
	sent     int
	exit     bool // exit abruptly on a result (ExitOnResult)
	exitKeep int  // messages of the last outbox that get out then
}

// Net is a simulated group.
type Net struct {
	cfg   Config
	graph topology.Graph
	nodes []*node
	q     eventq.Queue[event]
	// flight holds the messages in flight, free its unused slots.
	flight []gossip.Message
	free   []int32
	out    []gossip.Message // flush's buffer
	now    time.Duration
	rng    *rand.Rand
	cut    []int // partition side of each member; members on different sides cannot talk
	// outcomes of the operation under way
	epoch    uint64
	outcomes map[gossip.NodeID]member.Outcome
	waiting  int // members not crashed and without an outcome of epoch
	parts    []partition
	record   bool
	recorded []gossip.Message
	odd      []bool // members that run another configuration (Misconfigure); nil: none
	// Messages counts the messages sent, Dropped those the network lost,
	// Events the events members handled.
	Messages, Dropped, Events int
	// MaxEvents, if positive, bounds the events one Run handles: past it
	// the members still at the operation give up as at the time limit (a
	// group that cannot decide keeps gossiping at full speed, and a chaos
	// campaign need not simulate all of it). Truncated counts such runs,
	// and the runs Stop ended.
	MaxEvents, Truncated int
	// Stop, if not nil, ends Run early once it is closed, as MaxEvents
	// does. It is looked at whenever Events reaches a multiple of 4,096.
	// Measure sets it to its context's Done channel, so that an operation
	// of 65,536 members (tens of minutes) can be interrupted.
	Stop <-chan struct{}

	checking bool // see checkTicks
}

// New builds the group: every member's machine, joined, nothing sent yet.
func New(cfg Config) (*Net, error) {
	cfg.defaults()
	if cfg.Nodes < 1 {
		return nil, fmt.Errorf("simnet: %w: %d nodes", gossip.ErrInvalidConfig, cfg.Nodes)
	}
	if !(cfg.Loss >= 0 && cfg.Loss < 1) || !(cfg.Dup >= 0 && cfg.Dup <= 1) {
		return nil, fmt.Errorf("simnet: %w: loss %v, dup %v", gossip.ErrInvalidConfig, cfg.Loss, cfg.Dup)
	}
	spec, err := algo.Lookup(cfg.Algorithm)
	if err != nil {
		return nil, err
	}
	g, err := member.Overlay(cfg.Topology, cfg.Nodes, spec)
	if err != nil {
		return nil, err
	}
	diam := 0
	if spec.UsesGossip() {
		if diam, err = topology.Diameter(g); err != nil {
			return nil, err
		}
	}
	n := &Net{cfg: cfg, graph: g, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5eed)), cut: make([]int, cfg.Nodes), checking: checkTicks != nil}
	for i := range cfg.Nodes {
		m, err := member.New(member.Config{ID: gossip.NodeID(i), Graph: g, Algorithm: spec, Diameter: diam,
			Epsilon: cfg.Epsilon, Idle: cfg.Idle, Suspect: cfg.Suspect, Tick: cfg.Tick, Seed: cfg.Seed})
		if err != nil {
			return nil, err
		}
		at := n.jitterStart()
		n.nodes = append(n.nodes, &node{m: m, slow: 1, tickAt: at})
		n.q.Push(float64(at), event{kind: evTick, to: gossip.NodeID(i)})
	}
	return n, nil
}

func (n *Net) jitterStart() time.Duration { return time.Duration(n.rng.Int64N(int64(n.cfg.Tick))) }

// Now returns the simulated time.
func (n *Net) Now() time.Duration { return n.now }

// Machine returns member id's machine, for inspection.
func (n *Net) Machine(id gossip.NodeID) *member.Machine { return n.nodes[id].m }

// Crash stops member id at time at for good: it sends and receives nothing
// from then on (crash-stop; what it returned before counts).
func (n *Net) Crash(id gossip.NodeID, at time.Duration) {
	n.q.Push(float64(at), event{kind: evCrash, to: id})
}

// Crashed reports whether member id has crashed.
func (n *Net) Crashed(id gossip.NodeID) bool { return n.nodes[id].crashed }

// Pause stops member id from at for d: messages to it wait, its timers do
// not fire, and at the end it takes in everything that waited, as a
// process resumed after SIGSTOP does.
func (n *Net) Pause(id gossip.NodeID, at, d time.Duration) {
	nd := n.nodes[id]
	was := n.elides(nd)
	nd.pauses = append(nd.pauses, pause{at, at + d})
	n.rearm(id, was)
}

type pause struct{ from, to time.Duration }

// ExitOnResult makes member id exit abruptly the moment it returns a
// result with a nil error, as a process that prints its result and exits
// without flushing its connection: only the first keep messages of what it
// was sending at that moment get out, and it is crashed from then on.
func (n *Net) ExitOnResult(id gossip.NodeID, keep int) {
	n.nodes[id].exit, n.nodes[id].exitKeep = true, keep
}

// Late makes every tick of member id come d after it was due, as a
// process that shares its cores with much other work wakes late every
// time (its messages are still taken in as they come).
func (n *Net) Late(id gossip.NodeID, d time.Duration) {
	was := n.elides(n.nodes[id])
	n.nodes[id].late = max(d, 0)
	n.rearm(id, was)
}

// Slow makes member id process every event factor times slower.
func (n *Net) Slow(id gossip.NodeID, factor float64) {
	was := n.elides(n.nodes[id])
	n.nodes[id].slow = max(factor, 1)
	n.rearm(id, was)
}

// Partition splits the group from at: side[i] names member i's side, and
// members on different sides cannot talk until heal (never when heal ≤ at).
func (n *Net) Partition(side []int, at, heal time.Duration) {
	n.parts = append(n.parts, partition{slices.Clone(side), at, heal})
}

type partition struct {
	side     []int
	at, heal time.Duration
}

// Misconfigure makes member id run another configuration of the group
// than the others (every member so marked shares the same one): as the
// live transport does, the receiving end drops every message between
// differently configured members, and both ends learn of it
// (member.Machine.Foreign), the receiver when the message arrives and the
// sender one latency later, from the receiver's notice.
func (n *Net) Misconfigure(id gossip.NodeID) {
	if n.odd == nil {
		n.odd = make([]bool, len(n.nodes))
	}
	n.odd[id] = true
}

// foreignPair reports whether a and b run different configurations.
func (n *Net) foreignPair(a, b gossip.NodeID) bool { return n.odd != nil && n.odd[a] != n.odd[b] }

// Inject delivers msg to msg.To at time at, as if the network carried it: a
// forged message, or a replay of recorded traffic.
func (n *Net) Inject(msg gossip.Message, at time.Duration) {
	n.deliverAt(at, msg)
}

// deliverAt queues the delivery of msg to msg.To at time at.
func (n *Net) deliverAt(at time.Duration, msg gossip.Message) {
	var slot int32
	if k := len(n.free); k > 0 {
		slot = n.free[k-1]
		n.free = n.free[:k-1]
		n.flight[slot] = msg
	} else {
		slot = int32(len(n.flight))
		n.flight = append(n.flight, msg)
	}
	n.q.Push(float64(at), event{kind: evDeliver, to: msg.To, msg: slot})
}

// landed takes the message of slot out of flight.
func (n *Net) landed(slot int32) gossip.Message {
	msg := n.flight[slot]
	n.flight[slot] = gossip.Message{}
	n.free = append(n.free, slot)
	return msg
}

// Record makes the network keep a copy of every message it carries, for
// replays (see Recorded).
func (n *Net) Record(on bool) { n.record = on }

// Recorded returns the messages carried while recording.
func (n *Net) Recorded() []gossip.Message { return n.recorded }

// Run runs one operation: member i begins epoch with inputs[i] at
// starts[i] (all at the current time when starts is nil), and the
// simulation runs until every member that has not crashed has an outcome,
// or until the operation has lasted limit, when the members still at it
// give up (ErrNotConverged). It returns the outcome of every member that
// ended the operation, the crashed ones' included.
func (n *Net) Run(epoch uint64, inputs [][]float64, starts []time.Duration, limit time.Duration) map[gossip.NodeID]member.Outcome {
	n.epoch = epoch
	n.outcomes = map[gossip.NodeID]member.Outcome{}
	n.waiting = 0
	for _, nd := range n.nodes {
		if !nd.crashed {
			n.waiting++
		}
	}
	t0, e0 := n.now, n.Events
	for i, nd := range n.nodes {
		nd.op = member.Op{Epoch: epoch, Values: inputs[i]}
		if n.cfg.Extremes {
			nd.op.Extremes = inputs[i]
		}
		at := t0
		if starts != nil {
			at = t0 + starts[i]
		}
		n.q.Push(float64(at), event{kind: evBegin, to: gossip.NodeID(i)})
	}
	for {
		if n.finished() {
			break
		}
		at, ev, ok := n.q.Pop()
		if !ok {
			break
		}
		t := time.Duration(at)
		if t-t0 > limit {
			n.q.Push(at, ev)
			n.now = t0 + limit
			break
		}
		if n.MaxEvents > 0 && n.Events-e0 >= n.MaxEvents || n.stopped() {
			n.q.Push(at, ev)
			n.Truncated++
			break
		}
		n.now = max(n.now, t)
		n.handle(ev)
	}
	for i, nd := range n.nodes {
		if nd.crashed || !nd.m.Active() || nd.m.Epoch() != epoch {
			continue
		}
		nd.m.GiveUp(n.now, context.DeadlineExceeded)
		n.flush(gossip.NodeID(i))
	}
	return n.outcomes
}

func (n *Net) finished() bool { return n.waiting == 0 }

// stopped reports whether Stop is closed, looking when Events is a
// multiple of 4,096.
func (n *Net) stopped() bool {
	if n.Stop == nil || n.Events&0xfff != 0 {
		return false
	}
	select {
	case <-n.Stop:
		return true
	default:
		return false
	}
}

// record keeps member id's outcome of the operation under way.
func (n *Net) record1(id gossip.NodeID, out member.Outcome) {
	if _, ok := n.outcomes[id]; !ok && !n.nodes[id].crashed {
		n.waiting--
	}
	n.outcomes[id] = out
}

// crash stops member id.
func (n *Net) crash(id gossip.NodeID) {
	nd := n.nodes[id]
	if nd.crashed {
		return
	}
	nd.crashed = true
	if _, ok := n.outcomes[id]; !ok && n.outcomes != nil {
		n.waiting--
	}
}

// delay returns when an event for member id that is due now can be handled:
// after the member's pauses and its processing backlog.
func (n *Net) delay(id gossip.NodeID) time.Duration {
	nd := n.nodes[id]
	t := max(n.now, nd.busy)
	for _, p := range nd.pauses {
		if t >= p.from && t < p.to {
			t = p.to
		}
	}
	return t
}

func (n *Net) handle(ev event) {
	nd := n.nodes[ev.to]
	if ev.kind == evCrash {
		n.crash(ev.to)
		return
	}
	var msg gossip.Message
	if ev.kind == evDeliver {
		msg = n.landed(ev.msg)
	}
	if nd.crashed {
		return
	}
	if ev.kind == evTick && !n.tickDue(ev, nd) {
		return
	}
	if ev.kind == evDeliver {
		// Messages queue at the member and are taken in one at a time, as
		// a process reads its socket.
		nd.inbox = append(nd.inbox, msg)
		if !nd.waiting {
			nd.waiting = true
			n.q.Push(float64(n.delay(ev.to)), event{kind: evProcess, to: ev.to})
		}
		return
	}
	if t := n.delay(ev.to); t > n.now {
		n.q.Push(float64(t), ev)
		return
	}
	nd.busy = n.now + time.Duration(float64(n.cfg.Overhead)*nd.slow)
	n.Events++
	switch ev.kind {
	case evProcess:
		msg := nd.inbox[nd.head]
		nd.inbox[nd.head] = gossip.Message{}
		nd.head++
		nd.m.Backlog(len(nd.inbox) - nd.head)
		if nd.head == len(nd.inbox) {
			nd.inbox, nd.head = nd.inbox[:0], 0
		}
		nd.m.Step(n.now, msg)
		if nd.head < len(nd.inbox) {
			n.q.Push(float64(n.delay(ev.to)), ev)
		} else {
			nd.waiting = false
		}
	case evTick:
		if n.checking && n.elides(nd) {
			n.checkTick(ev.to, nd)
		} else {
			nd.m.Tick(n.now)
		}
		nd.lastTick = n.now
		if n.elides(nd) && !n.checking {
			nd.tickAt = never // flush queues the next one (schedule)
		} else {
			nd.tickAt = n.now + n.cfg.Tick + nd.late
			n.q.Push(float64(nd.tickAt), ev)
		}
	case evWake:
		nd.wakeAt = 0
		nd.m.Tick(n.now)
		nd.lastTick = n.now
	case evBegin:
		if err := nd.m.Begin(n.now, nd.op); err != nil {
			n.record1(ev.to, member.Outcome{Err: err})
		}
	case evForeign:
		nd.m.Foreign(n.now, gossip.NodeID(ev.msg), "another configuration (simulated)")
	}
	n.flush(ev.to)
}

// checkTicks, set by tests only, makes every Net built while it is set
// tick every member every Tick and check member.Machine.NextTick against
// what each tick does: a tick before the time NextTick named after the
// member's previous event must send nothing, end nothing and change no
// count, and not bring NextTick's answer forward. It is called with what a
// tick broke, if anything.
var checkTicks func(id gossip.NodeID, now time.Duration, what string)

// checkTick ticks member id as checkTicks asks (see there).
func (n *Net) checkTick(id gossip.NodeID, nd *node) {
	promised := nd.promised
	if n.now >= promised {
		nd.m.Tick(n.now)
		return
	}
	before, active := nd.m.Stats(), nd.m.Active()
	nd.m.Tick(n.now)
	after, _ := nd.m.NextTick(n.now)
	switch {
	case nd.m.Stats() != before:
		checkTicks(id, n.now, fmt.Sprintf("a tick %v before the time promised changed the counts: %+v, then %+v", promised-n.now, before, nd.m.Stats()))
	case nd.m.Active() != active:
		checkTicks(id, n.now, fmt.Sprintf("a tick %v before the time promised ended the operation", promised-n.now))
	case after < promised:
		checkTicks(id, n.now, fmt.Sprintf("a tick %v before the time promised brought it forward to %v from now", promised-n.now, after-n.now))
	}
}

// never is the tickAt of a member with no tick queued.
const never = time.Duration(math.MaxInt64)

// elides reports whether member nd is ticked only when its machine has
// something to do (see Config.EveryTick): a member whose ticks come late
// or whose events take longer keeps a tick every Tick, so that what it
// forgives of its neighbours' silence (the local-health rule of
// member.Machine.Tick) is what the live runtime would.
func (n *Net) elides(nd *node) bool {
	return (!n.cfg.EveryTick || n.checking) && nd.slow == 1 && nd.late == 0 && len(nd.pauses) == 0
}

// tickDue reports whether the tick event ev is to be handled now. A tick
// replaced by an earlier one is dropped; one whose member has since
// found nothing to do (its NextTick moved later: a message reset a
// silence) is queued again for then.
func (n *Net) tickDue(ev event, nd *node) bool {
	if ev.msg != nd.tickGen {
		return false
	}
	if !n.elides(nd) || n.checking {
		return true
	}
	at, ok := nd.m.NextTick(n.now)
	if !ok {
		nd.tickAt = never
		return false
	}
	if at = max(at, nd.lastTick+n.cfg.Tick); at > n.now {
		nd.tickAt = at
		n.q.Push(float64(at), ev)
		return false
	}
	return true
}

// schedule brings member id's next tick forward to what its machine now
// needs (see member.Machine.NextTick), after an event other than a tick.
func (n *Net) schedule(id gossip.NodeID) {
	nd := n.nodes[id]
	if nd.crashed || !n.elides(nd) {
		return
	}
	at, ok := nd.m.NextTick(n.now)
	if !ok {
		return
	}
	if at = max(at, nd.lastTick+n.cfg.Tick, n.now); at < nd.tickAt {
		nd.tickGen++
		nd.tickAt = at
		n.q.Push(float64(at), event{kind: evTick, to: id, msg: nd.tickGen})
	}
}

// rearm gives member id a tick every Tick again, from now, when it stops
// eliding ticks (Slow, Late, Pause; was: it elided them before): the tick
// queued may be far off, or none may be.
func (n *Net) rearm(id gossip.NodeID, was bool) {
	nd := n.nodes[id]
	if !was || n.elides(nd) {
		return
	}
	nd.tickGen++
	nd.tickAt = max(n.now, nd.lastTick+n.cfg.Tick)
	n.q.Push(float64(nd.tickAt), event{kind: evTick, to: id, msg: nd.tickGen})
}

// flush sends member id's outbox through the network and takes its
// outcome.
func (n *Net) flush(id gossip.NodeID) {
	nd := n.nodes[id]
	all := nd.m.AppendOutbox(n.out[:0])
	out := all
	res, done := nd.m.TakeOutcome()
	exited := false
	if done && nd.exit && res.Err == nil {
		out = out[:min(len(out), nd.exitKeep)]
		exited = true
	}
	for _, msg := range out {
		n.Messages++
		nd.sent++
		if n.record {
			n.recorded = append(n.recorded, msg)
		}
		if n.foreignPair(msg.From, msg.To) {
			n.Dropped++
			n.q.Push(float64(n.now+n.cfg.Latency), event{kind: evForeign, to: msg.To, msg: int32(msg.From)})
			n.q.Push(float64(n.now+2*n.cfg.Latency), event{kind: evForeign, to: msg.From, msg: int32(msg.To)})
			continue
		}
		if n.separated(msg.From, msg.To) || n.rng.Float64() < n.cfg.Loss {
			n.Dropped++
			continue
		}
		copies := 1
		if n.cfg.Dup > 0 && n.rng.Float64() < n.cfg.Dup {
			copies = 2
		}
		for range copies {
			d := n.cfg.Latency
			if n.cfg.Jitter > 0 {
				d += time.Duration(n.rng.Int64N(int64(n.cfg.Jitter)))
			}
			n.deliverAt(n.now+d, msg)
		}
	}
	if done && res.Result.Epoch == n.epoch {
		n.record1(id, res)
	}
	if exited {
		n.crash(id)
	}
	clear(all) // the buffer is flush's again: let the messages go
	n.out = all[:0]
	switch {
	case n.checking && n.elides(nd):
		nd.promised = never
		if at, ok := nd.m.NextTick(n.now); ok {
			nd.promised = at
		}
	case n.elides(nd):
		n.schedule(id)
	}
	if at, ok := nd.m.Wake(); ok && (nd.wakeAt == 0 || at < nd.wakeAt) && at > n.now {
		nd.wakeAt = at
		n.q.Push(float64(at), event{kind: evWake, to: id})
	}
}

func (n *Net) separated(a, b gossip.NodeID) bool {
	for _, p := range n.parts {
		if n.now >= p.at && (p.heal <= p.at || n.now < p.heal) && p.side[a] != p.side[b] {
			return true
		}
	}
	return false
}

// Sent returns the number of messages member id has sent.
func (n *Net) Sent(id gossip.NodeID) int { return n.nodes[id].sent }
