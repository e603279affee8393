// Package simnet is a deterministic network of member machines: it drives
// the runtime protocol of package member — the same code the live runtime
// runs over NATS — in simulated time, with the faults a real deployment
// meets: latency and reordering, loss, duplication, crashes at any moment,
// members that pause (a starved or SIGSTOPped process) or run slowly,
// partitions that heal or not, and forged or replayed messages. Every run
// is determined by its Config (the seed included), so a failing schedule
// replays exactly.
//
// It reads no clock: time is an event queue. A large group is simulated
// in shards, one goroutine each (Config.Workers), in windows of one
// message latency: nothing a member does inside a window can reach another
// member before the window ends, so the shards need not wait for each
// other inside it. What a run does never depends on the number of shards.
package simnet

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
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
	// Server, if positive, passes every message through one simulated
	// NATS server that takes Server to forward a message, one at a time,
	// in the order they reach it: a server starved of CPU, whose queue,
	// and so every message's delay, grows with the whole group's traffic.
	// A message leaves its sender for the server at once, waits its turn,
	// and then takes Latency (and Jitter) to its receiver. Zero: no
	// server, every message takes Latency alone. The queue is one, so a
	// group with a server runs in one shard (Workers is then 1).
	Server time.Duration
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
	// Workers is the number of shards the group is simulated in, each on
	// a goroutine of its own: 0 picks runtime.GOMAXPROCS for groups of
	// 4,096 members or more and 1 for smaller ones, whose windows hold too
	// few events to be worth sharing out. A run's outcome, messages and
	// events are the same for every number of workers.
	Workers int
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
	if c.Workers == 0 {
		c.Workers = 1
		if c.Nodes >= 4096 {
			c.Workers = runtime.GOMAXPROCS(0)
		}
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
	evRestart // the member starts again with a new machine (see Restart)
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
	sh      *shard     // the shard that simulates it
	rng     *rand.Rand // the network's draws for what it sends: loss, duplication, jitter
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
	inbox    []int32       // the messages queued at it, by their slots in its shard's flight
	head     int           // next message of inbox to process
	waiting  bool          // an evProcess event is queued
	op       member.Op
	sent     int
	exit     bool             // exit abruptly on a result (ExitOnResult)
	exitKeep int              // messages of the last outbox that get out then
	leave    bool             // leave the group on a result (LeaveOnResult)
	posts    []posted         // what it sent in the window under way, in order (see Net.post)
	disk     member.HardState // what its storage holds (see Restart)
}

// Net is a simulated group.
type Net struct {
	cfg    Config
	mcfg   func(id gossip.NodeID) member.Config // a member's configuration (see Restart)
	graph  topology.Graph
	nodes  []node // by id, in one array: an event's first read of its member's node is then no pointer away
	shards []*shard
	now    time.Duration
	rng    *rand.Rand // the set-up's draws (start times)
	// outcomes of the last operation
	epoch    uint64
	outcomes map[gossip.NodeID]member.Outcome
	parts    []partition
	holds    []hold
	record   bool
	recorded []gossip.Message
	odd      []bool // members that run another configuration (Misconfigure); nil: none
	// Messages counts the messages sent, Dropped those the network lost,
	// Events the events members handled.
	Messages, Dropped, Events int
	// MaxEvents, if positive, bounds the events one Run handles: past it
	// the members still at the operation give up as at the time limit (a
	// group that cannot decide keeps gossiping at full speed, and a chaos
	// campaign need not simulate all of it). The bound is looked at
	// between windows, so a run may pass it by one window's events.
	// Truncated counts such runs, and the runs Stop ended.
	MaxEvents, Truncated int
	// Stop, if not nil, ends Run early once it is closed, as MaxEvents
	// does. It is looked at between windows, the first time after Events
	// has passed each multiple of 4,096. Measure sets it to its context's
	// Done channel, so that an operation of 65,536 members (minutes) can
	// be interrupted.
	Stop     <-chan struct{}
	lastLook int   // Events/4,096 when Stop was last looked at
	crew     *crew // the goroutines that run the shards but the first during a run

	checking bool // see checkTicks
	// serverFree is when the simulated server (Config.Server) is done
	// with the messages it has taken in so far.
	serverFree time.Duration
	// noisy is set when the network draws anything for a message (loss,
	// duplication or jitter). Without it the draw for loss, whose outcome
	// is then known, is not made: nothing else reads the members' network
	// sources, and that draw was 2 % of a 65,536-member simulation's CPU.
	noisy    bool
	keepHard bool // some Restart keeps the member's votes: flush writes them to its node's disk
}

// shard is the part of the group one worker simulates: its members' events
// and the messages on their way to them. Within a window it touches only
// its own members, and what they send waits with its sender until the
// window ends (see Net.post).
type shard struct {
	net *Net
	// lo and hi bound the numbers of its members: lo ≤ id < hi.
	lo, hi gossip.NodeID
	q      eventq.Queue[event]
	// flight holds the messages in flight to its members, free its
	// unused slots.
	flight []gossip.Message
	free   []int32
	out    []gossip.Message // flush's buffer
	now    time.Duration
	// outcomes of the operation under way, of its members
	outcomes map[gossip.NodeID]member.Outcome
	waiting  int // its members not crashed and without an outcome of the epoch
	// posters are its members that posted in the window (node.posts), in
	// the order of their numbers once it ends; recorded is what its
	// members sent while recording.
	posters  []gossip.NodeID
	recorded []posted
	// counts of the window, added to Net's at its end
	messages, dropped, events int
}

// posted is an event a member caused at another (or at itself, later than
// the window): the delivery of msg, or a notice; or, recorded, a message
// sent at at by from.
type posted struct {
	at   time.Duration
	from gossip.NodeID
	ev   event
	msg  gossip.Message
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
	if cfg.Latency < 0 || cfg.Jitter < 0 || cfg.Workers < 0 || cfg.Server < 0 {
		return nil, fmt.Errorf("simnet: %w: latency %v, jitter %v, server %v, workers %d", gossip.ErrInvalidConfig, cfg.Latency, cfg.Jitter, cfg.Server, cfg.Workers)
	}
	cfg.Workers = min(cfg.Workers, cfg.Nodes)
	if checkTicks != nil || cfg.Server > 0 {
		cfg.Workers = 1 // the hook is the test's, not made for goroutines; the server is one queue
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
	n := &Net{cfg: cfg, graph: g, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5eed)), checking: checkTicks != nil,
		noisy: cfg.Loss > 0 || cfg.Dup > 0 || cfg.Jitter > 0}
	for range cfg.Workers {
		n.shards = append(n.shards, &shard{net: n})
	}
	n.mcfg = func(id gossip.NodeID) member.Config {
		return member.Config{ID: id, Graph: g, Algorithm: spec, Diameter: diam,
			Epsilon: cfg.Epsilon, Idle: cfg.Idle, Suspect: cfg.Suspect, Tick: cfg.Tick, Seed: cfg.Seed}
	}
	n.nodes = make([]node, 0, cfg.Nodes)
	for i := range cfg.Nodes {
		m, err := member.New(n.mcfg(gossip.NodeID(i)))
		if err != nil {
			return nil, err
		}
		at := n.jitterStart()
		// Members are shared out in blocks of consecutive numbers, so that
		// the posts of shards taken in order are in the order of their
		// senders (see post). Each member draws its network's fate from
		// a source of its own, so that the draws do not depend on which
		// shard's member went first.
		sh := n.shards[i*cfg.Workers/cfg.Nodes]
		if sh.hi == 0 {
			sh.lo = gossip.NodeID(i)
		}
		sh.hi = gossip.NodeID(i + 1)
		rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed<<32|uint64(i)))
		n.nodes = append(n.nodes, node{m: m, sh: sh, rng: rng, slow: 1, tickAt: at})
		sh.q.Push(float64(at), event{kind: evTick, to: gossip.NodeID(i)})
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
	n.nodes[id].sh.q.Push(float64(at), event{kind: evCrash, to: id})
}

// Restart starts member id again at time at with a new machine, as a
// process killed and started again with the same id does: the messages
// that waited in its queue are lost, and it begins the operation under way
// (the one Run was called for) again with the same input. Messages in
// flight reach the new machine. Restart a member that is running and it is
// killed and started again at once; one that crashed (see Crash) is
// started again. With durable, the new machine is given the votes its
// earlier self wrote to storage before each of its messages left
// (member.HardState); without, it has forgotten everything, and the group
// may decide two results (docs/design.md, "Known limits").
func (n *Net) Restart(id gossip.NodeID, at time.Duration, durable bool) {
	var keep int32
	if durable {
		keep = 1
		n.keepHard = true
	}
	n.nodes[id].sh.q.Push(float64(at), event{kind: evRestart, to: id, msg: keep})
}

// restart replaces member id's machine (see Restart).
func (s *shard) restart(id gossip.NodeID, durable bool) {
	nd := &s.net.nodes[id]
	m, err := member.New(s.net.mcfg(id))
	if err == nil && durable {
		err = m.Restore(nd.disk)
	}
	if err != nil {
		panic(fmt.Sprintf("simnet: member %d: %v", id, err)) // New made it from the same configuration
	}
	if !durable {
		nd.disk = member.HardState{}
	}
	nd.m = m
	for _, slot := range nd.inbox[nd.head:] {
		s.landed(slot)
	}
	nd.inbox, nd.head = nd.inbox[:0], 0
	if nd.crashed {
		nd.crashed = false
		if _, ok := s.outcomes[id]; !ok && s.outcomes != nil {
			s.waiting++
		}
	}
	nd.lastTick = s.now
	// The new process needs its own ticks: a crashed member's tick events
	// are dropped (and a member restarted after a gap had none queued
	// again, so its timers never fired: no resend, no stall, no new bid),
	// and one still queued is the old process's.
	nd.tickGen++
	nd.tickAt = never
	if !s.net.elides(nd) || s.net.checking {
		nd.tickAt = s.now + s.net.cfg.Tick + nd.late
		s.q.Push(float64(nd.tickAt), event{kind: evTick, to: id, msg: nd.tickGen})
	}
	if err := nd.m.Begin(s.now, nd.op); err != nil {
		s.record1(id, member.Outcome{Err: err})
	}
	s.flush(id) // queues an elided member's next tick (schedule)
}

// Crashed reports whether member id has crashed.
func (n *Net) Crashed(id gossip.NodeID) bool { return n.nodes[id].crashed }

// Pause stops member id from at for d: messages to it wait, its timers do
// not fire, and at the end it takes in everything that waited, as a
// process resumed after SIGSTOP does.
func (n *Net) Pause(id gossip.NodeID, at, d time.Duration) {
	nd := &n.nodes[id]
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

// LeaveOnResult makes member id leave the group the moment it returns a
// result with a nil error (member.Machine.Leave: its leave notices go out
// with its last messages), and stop, as a process that keeps no linger
// (aggregate's Leave with Linger 0) or whose linger ended.
func (n *Net) LeaveOnResult(id gossip.NodeID) { n.nodes[id].leave = true }

// Late makes every tick of member id come d after it was due, as a
// process that shares its cores with much other work wakes late every
// time (its messages are still taken in as they come).
func (n *Net) Late(id gossip.NodeID, d time.Duration) {
	was := n.elides(&n.nodes[id])
	n.nodes[id].late = max(d, 0)
	n.rearm(id, was)
}

// Slow makes member id process every event factor times slower.
func (n *Net) Slow(id gossip.NodeID, factor float64) {
	was := n.elides(&n.nodes[id])
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

// Hold keeps what member id sends from at to at+d from leaving before
// at+d, as a NATS server starved of CPU that stops reading one member's
// connection: the member runs, its messages wait in order, and none is
// lost.
func (n *Net) Hold(id gossip.NodeID, at, d time.Duration) {
	n.holds = append(n.holds, hold{id, at, at + d})
}

type hold struct {
	id       gossip.NodeID
	from, to time.Duration
}

// leaves is when a message member id sends now leaves it (see Hold).
func (s *shard) leaves(id gossip.NodeID) time.Duration {
	t := s.now
	for _, h := range s.net.holds {
		if h.id == id && t >= h.from && t < h.to {
			t = h.to
		}
	}
	return t
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
	n.nodes[msg.To].sh.deliverAt(at, msg)
}

// deliverAt queues the delivery of msg to msg.To, a member of s, at time at.
func (s *shard) deliverAt(at time.Duration, msg gossip.Message) {
	var slot int32
	if k := len(s.free); k > 0 {
		slot = s.free[k-1]
		s.free = s.free[:k-1]
		s.flight[slot] = msg
	} else {
		slot = int32(len(s.flight))
		s.flight = append(s.flight, msg)
	}
	s.q.Push(float64(at), event{kind: evDeliver, to: msg.To, msg: slot})
}

// landed takes the message of slot out of flight.
func (s *shard) landed(slot int32) gossip.Message {
	msg := s.flight[slot]
	s.flight[slot] = gossip.Message{}
	s.free = append(s.free, slot)
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
//
// Time advances in windows of one message latency, each starting at the
// earliest event queued: the shards handle their members' events of the
// window side by side, and what the members sent is queued at its
// receivers when all are done. The run ends at the end of the window in
// which the last member ended its operation, so what the members did in
// the rest of that window is part of it.
func (n *Net) Run(epoch uint64, inputs [][]float64, starts []time.Duration, limit time.Duration) map[gossip.NodeID]member.Outcome {
	n.epoch = epoch
	for _, s := range n.shards {
		s.outcomes = map[gossip.NodeID]member.Outcome{}
		s.waiting = 0
		s.now = n.now
	}
	for i := range n.nodes {
		if nd := &n.nodes[i]; !nd.crashed {
			nd.sh.waiting++
		}
	}
	t0, e0 := n.now, n.Events
	for i := range n.nodes {
		nd := &n.nodes[i]
		nd.op = member.Op{Epoch: epoch, Values: inputs[i]}
		if n.cfg.Extremes {
			nd.op.Extremes = inputs[i]
		}
		at := t0
		if starts != nil {
			at = t0 + starts[i]
		}
		nd.sh.q.Push(float64(at), event{kind: evBegin, to: gossip.NodeID(i)})
	}
	last := t0 + limit
	n.hire()
	defer n.dismiss()
	for !n.finished() {
		t, ok := n.next()
		if !ok {
			break
		}
		if t > last {
			n.now = last
			break
		}
		if n.MaxEvents > 0 && n.Events-e0 >= n.MaxEvents || n.stopped() {
			n.Truncated++
			break
		}
		end := t + n.cfg.Latency
		n.each(func(s *shard) { s.window(end, last) })
		n.post()
	}
	n.outcomes = map[gossip.NodeID]member.Outcome{}
	for i := range n.nodes {
		nd := &n.nodes[i]
		if nd.crashed || !nd.m.Active() || nd.m.Epoch() != epoch {
			continue
		}
		nd.m.GiveUp(n.now, context.DeadlineExceeded)
		nd.sh.now = n.now
		nd.sh.flush(gossip.NodeID(i))
	}
	n.post()
	for _, s := range n.shards {
		for id, o := range s.outcomes {
			n.outcomes[id] = o
		}
	}
	return n.outcomes
}

// next returns the time of the earliest event queued at any shard.
func (n *Net) next() (time.Duration, bool) {
	var first time.Duration
	found := false
	for _, s := range n.shards {
		if at, _, ok := s.q.Peek(); ok && (!found || time.Duration(at) < first) {
			first, found = time.Duration(at), true
		}
	}
	return first, found
}

// each calls f for every shard: side by side on the crew while a run is
// under way, else one after the other (the shards do not depend on each
// other's order).
func (n *Net) each(f func(*shard)) {
	if n.crew != nil {
		n.crew.each(f)
		return
	}
	for _, s := range n.shards {
		f(s)
	}
}

// crew runs the shards but the first, one goroutine each, for the length
// of a run. Between steps a goroutine spins a while, yielding, before it
// sleeps: a step of a waiting group is short (0.3 ms of work a shard at
// 16,384 members), and waking a goroutine that slept took about 0.06 ms
// on the 2-core virtual machine, three times a window.
type crew struct {
	first  *shard        // run by the goroutine that calls each
	shards []*shard      // run by the crew's
	f      func(*shard)  // the step under way; written before step is bumped
	step   atomic.Uint64 // bumped to start a step (and to stop)
	done   atomic.Int64  // shards done with the step under way
	stop   bool          // written before the last bump
	asleep []atomic.Bool
	wake   []chan struct{}
	wg     sync.WaitGroup
}

// spins is how many times a goroutine of the crew looks for the next step,
// yielding between looks, before it sleeps.
const spins = 2000

// hire starts the crew of n's shards but the first.
func (n *Net) hire() {
	if len(n.shards) == 1 {
		return
	}
	c := &crew{first: n.shards[0], shards: n.shards[1:]}
	c.asleep = make([]atomic.Bool, len(c.shards))
	c.wake = make([]chan struct{}, len(c.shards))
	for i, s := range c.shards {
		c.wake[i] = make(chan struct{}, 1)
		c.wg.Go(func() { c.work(i, s) })
	}
	n.crew = c
}

// dismiss stops n's crew.
func (n *Net) dismiss() {
	if c := n.crew; c != nil {
		c.stop = true
		c.bump()
		c.wg.Wait()
		n.crew = nil
	}
}

// each runs f on the crew's shards and on the first, on the calling
// goroutine, and returns when all are done.
func (c *crew) each(f func(*shard)) {
	c.f = f
	c.done.Store(0)
	c.bump()
	f(c.first)
	for i := 0; c.done.Load() < int64(len(c.shards)); i++ {
		if i > spins {
			runtime.Gosched()
		}
	}
}

// bump starts the next step, waking whoever sleeps.
func (c *crew) bump() {
	c.step.Add(1)
	for i := range c.asleep {
		if c.asleep[i].Load() {
			select {
			case c.wake[i] <- struct{}{}:
			default:
			}
		}
	}
}

// work is the loop of the crew's goroutine i, which runs shard s.
func (c *crew) work(i int, s *shard) {
	var seen uint64 // the step the crew was hired at (not loaded here: the first may be under way)
	for {
		for k := 0; c.step.Load() == seen; k++ {
			if k < spins {
				runtime.Gosched()
				continue
			}
			c.asleep[i].Store(true)
			if c.step.Load() == seen {
				<-c.wake[i]
			}
			c.asleep[i].Store(false)
			k = 0
		}
		seen = c.step.Load()
		if c.stop {
			return
		}
		c.f(s)
		c.done.Add(1)
	}
}

// window handles the shard's events before end, and none after last.
// Everything its members send lands at end or later, so no event of
// another shard's window can be affected by them.
func (s *shard) window(end, last time.Duration) {
	for {
		at, ev, ok := s.q.Peek()
		if !ok {
			break
		}
		t := time.Duration(at)
		if t >= end || t > last {
			break
		}
		s.q.Pop()
		s.now = max(s.now, t)
		s.handle(ev)
	}
	// The order in which members of the shard took their turns at equal
	// times depends on the shard's queue, and so on how the group was
	// shared out: what they posted goes out in the order of their numbers.
	slices.Sort(s.posters)
}

// post ends a window: every shard queues what the members of all shards
// posted to its own members, in the order of the senders' numbers (the
// shards hold consecutive members) and each sender's own order; what was
// recorded is kept in the order it was sent, and the shards' counts are
// added to the network's. The order in which events are queued decides
// between events due at the same time at a member, so this order, unlike
// the order of a shard's work, must not depend on the number of shards.
func (n *Net) post() {
	if n.record {
		var rec []posted
		for _, s := range n.shards {
			rec = append(rec, s.recorded...)
			clear(s.recorded)
			s.recorded = s.recorded[:0]
		}
		slices.SortStableFunc(rec, func(a, b posted) int {
			return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.from, b.from))
		})
		for _, r := range rec {
			n.recorded = append(n.recorded, r.msg)
		}
	}
	n.each(func(s *shard) { s.take() })
	n.each(func(s *shard) { s.unpost() })
	for _, s := range n.shards {
		n.Messages += s.messages
		n.Dropped += s.dropped
		n.Events += s.events
		s.messages, s.dropped, s.events = 0, 0, 0
		n.now = max(n.now, s.now)
	}
}

// take queues what every shard's members posted to members of s.
func (s *shard) take() {
	nodes := s.net.nodes
	for _, src := range s.net.shards {
		for _, id := range src.posters {
			for i := range nodes[id].posts {
				p := &nodes[id].posts[i]
				switch {
				case p.ev.to < s.lo || p.ev.to >= s.hi: // another shard's (see New)
				case p.ev.kind == evDeliver:
					s.deliverAt(p.at, p.msg)
				default:
					s.q.Push(float64(p.at), p.ev)
				}
			}
		}
	}
}

// unpost empties the posts of s's members, all taken.
func (s *shard) unpost() {
	for _, id := range s.posters {
		nd := &s.net.nodes[id]
		clear(nd.posts)
		nd.posts = nd.posts[:0]
	}
	s.posters = s.posters[:0]
}

// finished reports whether every member not crashed has an outcome.
func (n *Net) finished() bool {
	for _, s := range n.shards {
		if s.waiting > 0 {
			return false
		}
	}
	return true
}

// stopped reports whether Stop is closed, looking once Events has passed
// another multiple of 4,096.
func (n *Net) stopped() bool {
	if n.Stop == nil || n.Events>>12 == n.lastLook {
		return false
	}
	n.lastLook = n.Events >> 12
	select {
	case <-n.Stop:
		return true
	default:
		return false
	}
}

// record1 keeps member id's outcome of the operation under way.
func (s *shard) record1(id gossip.NodeID, out member.Outcome) {
	if _, ok := s.outcomes[id]; !ok && !s.net.nodes[id].crashed {
		s.waiting--
	}
	s.outcomes[id] = out
}

// crash stops member id.
func (s *shard) crash(id gossip.NodeID) {
	nd := &s.net.nodes[id]
	if nd.crashed {
		return
	}
	nd.crashed = true
	if _, ok := s.outcomes[id]; !ok && s.outcomes != nil {
		s.waiting--
	}
}

// delay returns when an event for member id that is due now can be handled:
// after the member's pauses and its processing backlog.
func (s *shard) delay(id gossip.NodeID) time.Duration {
	nd := &s.net.nodes[id]
	t := max(s.now, nd.busy)
	for _, p := range nd.pauses {
		if t >= p.from && t < p.to {
			t = p.to
		}
	}
	return t
}

func (s *shard) handle(ev event) {
	nd := &s.net.nodes[ev.to]
	if ev.kind == evCrash {
		s.crash(ev.to)
		return
	}
	if ev.kind == evRestart {
		s.restart(ev.to, ev.msg == 1)
		return
	}
	if nd.crashed {
		if ev.kind == evDeliver {
			s.landed(ev.msg)
		}
		if ev.kind == evProcess {
			nd.waiting = false // a Restart empties the queue
		}
		return
	}
	if ev.kind == evProcess && nd.head == len(nd.inbox) {
		nd.waiting = false // emptied by a Restart
		return
	}
	if ev.kind == evTick && !s.tickDue(ev, nd) {
		return
	}
	if ev.kind == evDeliver {
		// Messages queue at the member and are taken in one at a time, as
		// a process reads its socket. They wait in their slot of flight.
		nd.inbox = append(nd.inbox, ev.msg)
		if !nd.waiting {
			nd.waiting = true
			s.q.Push(float64(s.delay(ev.to)), event{kind: evProcess, to: ev.to})
		}
		return
	}
	if t := s.delay(ev.to); t > s.now {
		s.q.Push(float64(t), ev)
		return
	}
	nd.busy = s.now + time.Duration(float64(s.net.cfg.Overhead)*nd.slow)
	s.events++
	switch ev.kind {
	case evProcess:
		msg := s.landed(nd.inbox[nd.head])
		nd.head++
		nd.m.Backlog(len(nd.inbox) - nd.head)
		if nd.head == len(nd.inbox) {
			nd.inbox, nd.head = nd.inbox[:0], 0
		}
		nd.m.Step(s.now, msg)
		if nd.head < len(nd.inbox) {
			s.q.Push(float64(s.delay(ev.to)), ev)
		} else {
			nd.waiting = false
		}
	case evTick:
		if s.net.checking && s.net.elides(nd) {
			s.checkTick(ev.to, nd)
		} else {
			nd.m.Tick(s.now)
		}
		nd.lastTick = s.now
		if s.net.elides(nd) && !s.net.checking {
			nd.tickAt = never // flush queues the next one (schedule)
		} else {
			nd.tickAt = s.now + s.net.cfg.Tick + nd.late
			s.q.Push(float64(nd.tickAt), ev)
		}
	case evWake:
		nd.wakeAt = 0
		nd.m.Tick(s.now)
		nd.lastTick = s.now
	case evBegin:
		if err := nd.m.Begin(s.now, nd.op); err != nil {
			s.record1(ev.to, member.Outcome{Err: err})
		}
	case evForeign:
		nd.m.Foreign(s.now, gossip.NodeID(ev.msg), "another configuration (simulated)")
	}
	s.flush(ev.to)
}

// checkTicks, set by tests only, makes every Net built while it is set
// tick every member every Tick and check member.Machine.NextTick against
// what each tick does: a tick before the time NextTick named after the
// member's previous event must send nothing, end nothing and change no
// count, and not bring NextTick's answer forward. It is called with what a
// tick broke, if anything.
var checkTicks func(id gossip.NodeID, now time.Duration, what string)

// checkTick ticks member id as checkTicks asks (see there).
func (s *shard) checkTick(id gossip.NodeID, nd *node) {
	promised := nd.promised
	if s.now >= promised {
		nd.m.Tick(s.now)
		return
	}
	before, active := nd.m.Stats(), nd.m.Active()
	nd.m.Tick(s.now)
	after, _ := nd.m.NextTick(s.now)
	switch {
	case nd.m.Stats() != before:
		checkTicks(id, s.now, fmt.Sprintf("a tick %v before the time promised changed the counts: %+v, then %+v", promised-s.now, before, nd.m.Stats()))
	case nd.m.Active() != active:
		checkTicks(id, s.now, fmt.Sprintf("a tick %v before the time promised ended the operation", promised-s.now))
	case after < promised:
		checkTicks(id, s.now, fmt.Sprintf("a tick %v before the time promised brought it forward to %v from now", promised-s.now, after-s.now))
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
func (s *shard) tickDue(ev event, nd *node) bool {
	if ev.msg != nd.tickGen {
		return false
	}
	if !s.net.elides(nd) || s.net.checking {
		return true
	}
	at, ok := nd.m.NextTick(s.now)
	if !ok {
		nd.tickAt = never
		return false
	}
	if at = max(at, nd.lastTick+s.net.cfg.Tick); at > s.now {
		nd.tickAt = at
		s.q.Push(float64(at), ev)
		return false
	}
	return true
}

// schedule brings member id's next tick forward to what its machine now
// needs (see member.Machine.NextTick), after an event other than a tick.
func (s *shard) schedule(id gossip.NodeID) {
	nd := &s.net.nodes[id]
	if nd.crashed || !s.net.elides(nd) {
		return
	}
	at, ok := nd.m.NextTick(s.now)
	if !ok {
		return
	}
	if at = max(at, nd.lastTick+s.net.cfg.Tick, s.now); at < nd.tickAt {
		nd.tickGen++
		nd.tickAt = at
		s.q.Push(float64(at), event{kind: evTick, to: id, msg: nd.tickGen})
	}
}

// rearm gives member id a tick every Tick again, from now, when it stops
// eliding ticks (Slow, Late, Pause; was: it elided them before): the tick
// queued may be far off, or none may be.
func (n *Net) rearm(id gossip.NodeID, was bool) {
	nd := &n.nodes[id]
	if !was || n.elides(nd) {
		return
	}
	nd.tickGen++
	nd.tickAt = max(n.now, nd.lastTick+n.cfg.Tick)
	nd.sh.q.Push(float64(nd.tickAt), event{kind: evTick, to: id, msg: nd.tickGen})
}

// flush sends member id's outbox through the network and takes its
// outcome.
func (s *shard) flush(id gossip.NodeID) {
	nd := &s.net.nodes[id]
	if s.net.keepHard {
		// Written before the messages leave, as a driver must (see
		// member.HardState).
		if hs, changed := nd.m.HardState(); changed {
			nd.disk = hs
		}
	}
	all := nd.m.AppendOutbox(s.out[:0])
	out := all
	res, done := nd.m.TakeOutcome()
	exited := false
	switch {
	case done && nd.exit && res.Err == nil:
		out = out[:min(len(out), nd.exitKeep)]
		exited = true
	case done && nd.leave && res.Err == nil:
		nd.m.Leave(s.now)
		all = nd.m.AppendOutbox(all)
		out = all
		exited = true
	}
	for _, msg := range out {
		s.messages++
		nd.sent++
		if s.net.record {
			s.recorded = append(s.recorded, posted{at: s.now, from: id, msg: msg})
		}
		if s.net.foreignPair(msg.From, msg.To) {
			// The receiver drops it and says so; the sender hears back.
			s.dropped++
			s.post(nd, id,
				posted{at: s.now + s.net.cfg.Latency, ev: event{kind: evForeign, to: msg.To, msg: int32(msg.From)}},
				posted{at: s.now + 2*s.net.cfg.Latency, ev: event{kind: evForeign, to: msg.From, msg: int32(msg.To)}})
			continue
		}
		if s.separated(msg.From, msg.To) || s.net.noisy && nd.rng.Float64() < s.net.cfg.Loss {
			s.dropped++
			continue
		}
		copies := 1
		if s.net.cfg.Dup > 0 && nd.rng.Float64() < s.net.cfg.Dup {
			copies = 2
		}
		for range copies {
			d := s.net.cfg.Latency
			if s.net.cfg.Jitter > 0 {
				d += time.Duration(nd.rng.Int64N(int64(s.net.cfg.Jitter)))
			}
			at := s.now
			if s.net.holds != nil {
				at = s.leaves(id)
			}
			if sv := s.net.cfg.Server; sv > 0 {
				at = max(at, s.net.serverFree) + sv
				s.net.serverFree = at
			}
			s.post(nd, id, posted{at: at + d, ev: event{kind: evDeliver, to: msg.To}, msg: msg})
		}
	}
	if done && res.Result.Epoch == s.net.epoch {
		s.record1(id, res)
	}
	if exited {
		s.crash(id)
	}
	clear(all) // the buffer is flush's again: let the messages go
	s.out = all[:0]
	switch {
	case s.net.checking && s.net.elides(nd):
		nd.promised = never
		if at, ok := nd.m.NextTick(s.now); ok {
			nd.promised = at
		}
	case s.net.elides(nd):
		s.schedule(id)
	}
	if at, ok := nd.m.Wake(); ok && (nd.wakeAt == 0 || at < nd.wakeAt) && at > s.now {
		nd.wakeAt = at
		s.q.Push(float64(at), event{kind: evWake, to: id})
	}
}

// post keeps what member id (nd) caused at other members, or at itself
// after the window, for the window's end.
func (s *shard) post(nd *node, id gossip.NodeID, ps ...posted) {
	if len(nd.posts) == 0 {
		s.posters = append(s.posters, id)
	}
	nd.posts = append(nd.posts, ps...)
}

// separated reports whether a partition keeps a and b apart now.
func (s *shard) separated(a, b gossip.NodeID) bool {
	for _, p := range s.net.parts {
		if s.now >= p.at && (p.heal <= p.at || s.now < p.heal) && p.side[a] != p.side[b] {
			return true
		}
	}
	return false
}

// Sent returns the number of messages member id has sent.
func (n *Net) Sent(id gossip.NodeID) int { return n.nodes[id].sent }
