package aggregate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/gossipreduce/gossipreduce/broadcast"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
)

// Node is one member of a group: it owns a transport endpoint and runs one
// goroutine that drives the member's machines. Operations (Average, Sum) are
// taken one at a time; call them from any goroutine.
type Node struct {
	r      *resolved
	ep     transport.Endpoint
	log    *slog.Logger
	reqs   chan *request
	quit   chan struct{}
	exited chan struct{}
	once   sync.Once

	mu    sync.Mutex
	stats Stats
}

// Stats counts what a Node did over its life.
type Stats struct {
	Operations int // operations started
	Results    int // operations that ended with a result
	Sent       int // messages sent
	Received   int // messages received
	// Rejected counts messages a machine refused (foreign epoch or kind,
	// malformed payload or certificate) and Buffered the messages of a
	// later operation kept until it starts; Overflow those dropped because
	// the buffer for later operations was full.
	Rejected, Buffered, Overflow int
	// Excluded counts neighbours this node declared dead.
	Excluded int
}

type request struct {
	ctx   context.Context
	value []float64
	sum   bool
	reply chan reply
}

type reply struct {
	res Result
	err error
}

// Join makes this process member cfg.ID of a group over t: it opens the
// member's endpoint and starts its goroutine. The other members may join
// before or after; an operation waits for them (until its context ends).
func Join(ctx context.Context, t transport.Transport, cfg Config) (*Node, error) {
	r, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, fmt.Errorf("aggregate: %w: no transport", gossip.ErrInvalidConfig)
	}
	ep, err := t.Open(ctx, transport.Group{Prefix: cfg.Prefix, Name: cfg.Group, ConfigHash: r.hash}, cfg.ID)
	if err != nil {
		return nil, fmt.Errorf("aggregate: join %s as %d: %w", cfg.Group, cfg.ID, err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	n := &Node{
		r: r, ep: ep, log: log.With("group", cfg.Group, "node", cfg.ID),
		reqs: make(chan *request), quit: make(chan struct{}), exited: make(chan struct{}),
	}
	d, err := newDriver(n)
	if err != nil {
		ep.Close()
		return nil, err
	}
	go d.loop()
	return n, nil
}

// Average returns the element-wise average of the members' vectors, the
// same bits at every live member. Every member must call it (as its next
// operation) with a vector of the same length. If ctx ends first, it
// returns this member's best estimate with an error wrapping
// ErrNotConverged.
func (n *Node) Average(ctx context.Context, value []float64) (Result, error) {
	return n.do(ctx, value, false)
}

// Sum returns the element-wise sum of the members' vectors (the average
// times the number of live members, so after a member is excluded it is
// the survivors' sum). See Average.
func (n *Node) Sum(ctx context.Context, value []float64) (Result, error) {
	return n.do(ctx, value, true)
}

func (n *Node) do(ctx context.Context, value []float64, sum bool) (Result, error) {
	if len(value) == 0 {
		return Result{}, fmt.Errorf("aggregate: %w: empty vector", gossip.ErrLength)
	}
	if err := gossip.CheckFinite(value); err != nil {
		return Result{}, fmt.Errorf("aggregate: %w", err)
	}
	req := &request{ctx: ctx, value: slices.Clone(value), sum: sum, reply: make(chan reply, 1)}
	select {
	case n.reqs <- req:
	case <-n.exited:
		return Result{}, ErrClosed
	case <-ctx.Done():
		return Result{}, fmt.Errorf("%w: %w", ErrNotConverged, ctx.Err())
	}
	rep := <-req.reply
	return rep.res, rep.err
}

// Stats returns the node's counts so far.
func (n *Node) Stats() Stats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stats
}

func (n *Node) count(f func(*Stats)) {
	n.mu.Lock()
	f(&n.stats)
	n.mu.Unlock()
}

// Close stops the node and closes its endpoint. An operation under way
// returns ErrClosed. Close is safe to call more than once.
func (n *Node) Close() error {
	var err error
	n.once.Do(func() {
		close(n.quit)
		<-n.exited
		err = n.ep.Close()
	})
	return err
}

// ID returns the member's id.
func (n *Node) ID() gossip.NodeID { return n.r.ID }

// ConfigHash returns the hash of the settings all members must share.
func (n *Node) ConfigHash() uint64 { return n.r.hash }

// The result broadcast: a binomial tree numbered interleaved, with checked
// correction overlapped with dissemination (it needs no agreement on
// clocks), in LogP units of bcastUnit.
const bcastUnit = 100 * time.Microsecond

func broadcastSpec(n int) broadcast.Spec {
	sch, _ := broadcast.ParseScheme("tree:binomial")
	cor, _ := broadcast.ParseCorrection("checked-overlapped")
	return broadcast.Spec{Nodes: n, Scheme: sch, Correction: cor, Model: broadcast.LogP{L: 2, O: 1}}
}

// Tags of KindControl messages. A result carries its root (< 2^32) as Tag.
const (
	tagAbort    = ^uint64(0)     // the members disagree: stop
	tagPing     = ^uint64(0) - 1 // are you there?
	tagPong     = ^uint64(0) - 2 // yes
	tagExcluded = ^uint64(0) - 3 // you were declared dead: stop
)

// op is one operation: under way, or finished and kept for a while to
// answer members that are late.
type op struct {
	req        *request
	epoch      uint64
	m          gossip.Machine
	cert       *certificate
	inj        gossip.Injector
	injRand    *rand.Rand
	start      time.Time
	lastSend   time.Time
	heard      map[gossip.NodeID]time.Time // neighbours: when last heard from
	ever       map[gossip.NodeID]bool      // neighbours heard from in this operation
	pinged     map[gossip.NodeID]time.Time // neighbours: when last probed
	told       map[gossip.NodeID]time.Time // members: when last sent a result, abort or exclusion
	lastHeard  time.Time                   // when any neighbour was last heard from
	sent       int
	bcast      bool // this node started the result broadcast
	becameRoot time.Time
	done       bool
	result     []float64 // the broadcast payload: value…, live
	root       gossip.NodeID
	abort      error // the group disagrees: tell the members still gossiping
}

// driver is the node's goroutine state; only loop touches it.
type driver struct {
	n        *Node
	r        *resolved
	bnode    *broadcast.Node
	epoch    uint64 // the last operation started
	cur      *op
	finished []*op // the last few finished operations, newest last
	future   []gossip.Message
	est      []float64
	peer     peerCert
	out      []gossip.Message
	buf      []byte
	timer    *time.Timer
	origin   time.Time
}

const (
	// maxFuture bounds the messages kept for operations not started yet.
	maxFuture = 4096
	// keepFinished is how many finished operations answer late members.
	keepFinished = 4
)

func newDriver(n *Node) (*driver, error) {
	plan, err := broadcast.NewPlan(broadcastSpec(n.r.Nodes))
	if err != nil {
		return nil, fmt.Errorf("aggregate: result broadcast: %w", err)
	}
	bn, err := broadcast.NewNode(plan, broadcast.NodeConfig{ID: n.r.ID, Clock: broadcast.ClockFromMessages, OncePerEpoch: true, Window: keepFinished})
	if err != nil {
		return nil, fmt.Errorf("aggregate: result broadcast: %w", err)
	}
	return &driver{n: n, r: n.r, bnode: bn, origin: time.Now()}, nil
}

func (d *driver) loop() {
	defer close(d.n.exited)
	tick := time.NewTicker(d.r.Tick)
	defer tick.Stop()
	d.timer = time.NewTimer(time.Hour)
	defer d.timer.Stop()
	for {
		var opDone <-chan struct{}
		reqs := d.n.reqs
		if d.active() {
			opDone = d.cur.req.ctx.Done()
			reqs = nil // one operation at a time
		}
		select {
		case <-d.n.quit:
			if d.active() {
				d.finish(Result{}, ErrClosed)
			}
			return
		case req := <-reqs:
			d.begin(req)
		case m, ok := <-d.n.ep.Messages():
			if !ok {
				if d.active() {
					d.finish(Result{}, fmt.Errorf("aggregate: endpoint closed: %w", ErrClosed))
				}
				return
			}
			d.receive(m)
		case <-tick.C:
			d.tick()
		case <-d.timer.C:
		case <-opDone:
			d.giveUp()
		}
		d.pollBroadcast()
	}
}

func (d *driver) active() bool { return d.cur != nil && !d.cur.done }

// now is the broadcast clock: driver time in LogP units.
func (d *driver) now() int64 { return int64(time.Since(d.origin) / bcastUnit) }

func (d *driver) begin(req *request) {
	if d.cur != nil {
		d.finished = append(d.finished, d.cur)
		if len(d.finished) > keepFinished {
			d.finished = d.finished[1:]
		}
	}
	d.epoch++
	d.n.count(func(s *Stats) { s.Operations++ })
	r := d.r
	m, err := r.spec.New(gossip.Config{
		ID: r.ID, Overlay: r.graph, Value: req.value, Mode: gossip.Average, Epoch: d.epoch,
		Rand: rand.NewPCG(r.Seed^d.epoch*0x9e3779b97f4a7c15, uint64(r.ID)), Tau: r.Tau,
	})
	now := time.Now()
	o := &op{req: req, epoch: d.epoch, m: m, start: now, lastSend: now,
		heard: map[gossip.NodeID]time.Time{}, ever: map[gossip.NodeID]bool{},
		pinged: map[gossip.NodeID]time.Time{}, told: map[gossip.NodeID]time.Time{}}
	d.cur = o
	if err != nil {
		d.finish(Result{}, fmt.Errorf("aggregate: %w", err))
		return
	}
	if !r.spec.Finite {
		o.cert = newCertificate(r.Nodes, int(r.ID), r.need, r.theta)
		for k := range r.graph.Degree(r.ID) {
			o.heard[r.graph.Neighbor(r.ID, k)] = now
		}
	}
	if r.Injector != nil {
		o.inj = r.Injector(d.epoch)
		o.injRand = rand.New(rand.NewPCG(r.Seed^0x1ec7, d.epoch<<32|uint64(r.ID)))
		o.inj.InjectState(d.point(o), m)
	}
	d.emit(m.Tick(d.out[:0]))
	// Messages that arrived before this operation started.
	pending := d.future
	d.future = nil
	for _, msg := range pending {
		d.receive(msg)
	}
	d.checkDone()
}

func (d *driver) point(o *op) gossip.InjectPoint {
	return gossip.InjectPoint{Node: d.r.ID, Time: time.Since(o.start).Seconds(), Sent: o.sent, MaxSent: o.sent, Rand: o.injRand}
}

// emit sends machine output, with this node's certificate attached.
func (d *driver) emit(out []gossip.Message) {
	o := d.cur
	if len(out) == 0 {
		return
	}
	var attach []byte
	if o.cert != nil {
		d.est = o.m.Estimate(d.est[:0])
		d.buf = o.cert.encode(d.buf[:0], d.est)
		attach = d.buf
	}
	for i := range out {
		msg := out[i]
		if o.inj != nil {
			o.inj.InjectMessage(d.point(o), &msg)
		}
		msg.Attach = attach
		o.sent++
		d.send(msg)
	}
	o.lastSend = time.Now()
	d.out = out[:0]
}

func (d *driver) send(msg gossip.Message) {
	if err := d.n.ep.Send(context.Background(), msg); err != nil {
		d.n.log.Debug("send failed", "to", msg.To, "err", err)
		return
	}
	d.n.count(func(s *Stats) { s.Sent++ })
}

// control sends a control message of operation o, counting it.
func (d *driver) control(o *op, to gossip.NodeID, tag uint64, payload []float64) {
	o.sent++
	d.send(gossip.Message{From: d.r.ID, To: to, Kind: gossip.KindControl, Epoch: o.epoch, Tag: tag, Payload: payload})
}

// opFor returns the operation of an epoch: the current one or a recently
// finished one; nil if it is long gone.
func (d *driver) opFor(epoch uint64) *op {
	if d.cur != nil && d.cur.epoch == epoch {
		return d.cur
	}
	for _, o := range d.finished {
		if o.epoch == epoch {
			return o
		}
	}
	return nil
}

func (d *driver) receive(msg gossip.Message) {
	d.n.count(func(s *Stats) { s.Received++ })
	if d.cur == nil || msg.Epoch > d.epoch {
		if len(d.future) >= maxFuture {
			d.n.count(func(s *Stats) { s.Overflow++ })
			return
		}
		d.future = append(d.future, msg)
		d.n.count(func(s *Stats) { s.Buffered++ })
		return
	}
	if msg.Kind == gossip.KindBroadcast {
		if err := d.bnode.Step(d.now(), msg); err != nil {
			d.reject("broadcast", msg, err)
		}
		d.collect()
		return
	}
	o := d.opFor(msg.Epoch)
	if o == nil {
		return // long finished; its result went out then
	}
	if _, nb := o.heard[msg.From]; nb && !o.done {
		o.heard[msg.From] = time.Now()
		o.lastHeard = o.heard[msg.From]
		o.ever[msg.From] = true
	}
	if msg.Kind == gossip.KindControl {
		d.onControl(o, msg)
		return
	}
	if o.done {
		d.answerLate(o, msg.From)
		return
	}
	if o.cert != nil {
		if o.cert.dead.has(int(msg.From)) {
			d.tell(o, msg.From, tagExcluded, nil)
			return
		}
		if err := decodeCert(msg.Attach, d.r.Nodes, len(o.req.value), &d.peer); err != nil {
			if errors.Is(err, gossip.ErrLength) {
				d.mismatch(fmt.Errorf("%w: node %d sent a vector of another length: %w", ErrGroupMismatch, msg.From, err))
				return
			}
			d.reject("certificate", msg, err)
			return
		}
		for _, j := range o.cert.merge(d.peer.gen, d.peer.stable, d.peer.dead) {
			d.excluded(gossip.NodeID(j))
		}
		if o.cert.dead.has(int(d.r.ID)) {
			d.finish(d.best(), ErrExcluded)
			return
		}
	}
	out, err := o.m.Step(msg, d.out[:0])
	if err != nil {
		if errors.Is(err, gossip.ErrLength) {
			d.mismatch(fmt.Errorf("%w: node %d: %w", ErrGroupMismatch, msg.From, err))
			return
		}
		d.reject("machine", msg, err)
	}
	if o.inj != nil {
		o.inj.InjectState(d.point(o), o.m)
	}
	if o.cert != nil && err == nil {
		d.est = o.m.Estimate(d.est[:0])
		o.cert.observe(d.est, d.peer.est)
	}
	d.emit(out)
	d.checkDone()
}

func (d *driver) onControl(o *op, msg gossip.Message) {
	switch msg.Tag {
	case tagAbort:
		if !o.done {
			d.mismatch(fmt.Errorf("%w: node %d found that the members' vectors differ in length", ErrGroupMismatch, msg.From))
		}
	case tagExcluded:
		if !o.done {
			d.finish(d.best(), fmt.Errorf("%w (told by node %d)", ErrExcluded, msg.From))
		}
	case tagPing:
		switch {
		case o.done:
			d.answerLate(o, msg.From)
		case o.cert != nil && o.cert.dead.has(int(msg.From)):
			d.tell(o, msg.From, tagExcluded, nil)
		default:
			d.control(o, msg.From, tagPong, nil)
		}
	case tagPong:
		// Proof of life; heard was updated above.
	default:
		if !o.done && len(msg.Payload) == len(o.req.value)+1 {
			d.deliver(msg.Payload, gossip.NodeID(msg.Tag))
		}
	}
}

func (d *driver) reject(what string, msg gossip.Message, err error) {
	d.n.count(func(s *Stats) { s.Rejected++ })
	d.n.log.Debug("message rejected", "what", what, "from", msg.From, "kind", msg.Kind, "err", err)
}

// excluded applies a death learned from the group or detected here: a dead
// neighbour's share is removed from this node's state, which changes its
// estimate, so its certificate is withdrawn.
func (d *driver) excluded(j gossip.NodeID) {
	o := d.cur
	if _, nb := o.heard[j]; !nb {
		return
	}
	o.m.Exclude(j)
	delete(o.heard, j)
	o.cert.unsettle()
	d.n.count(func(s *Stats) { s.Excluded++ })
	d.n.log.Debug("excluded", "peer", j)
}

func (d *driver) tick() {
	if !d.active() {
		return
	}
	o := d.cur
	now := time.Now()
	// Failure detection. A neighbour silent for a quarter of Suspect is
	// probed (again every eighth); one silent for Suspect despite the
	// probes is declared dead. A neighbour never heard from in this
	// operation (it may not have started yet) gets four times as long.
	if o.cert != nil {
		for j, t := range o.heard {
			limit := d.r.Suspect
			if !o.ever[j] {
				limit *= 4
			}
			quiet := now.Sub(t)
			switch {
			case quiet > limit:
				if o.cert.markDead(int(j)) {
					d.excluded(j)
				}
			case quiet > limit/4 && now.Sub(o.pinged[j]) > d.r.Suspect/8:
				o.pinged[j] = now
				d.control(o, j, tagPing, nil)
			}
		}
	}
	// Keep the exchange going after lost messages: a node that sent
	// nothing for two ticks takes a gossip step on its own, as long as
	// somebody answers (sending into silence only moves mass away; the
	// probes above find members that start late).
	if now.Sub(o.lastSend) >= 2*d.r.Tick && now.Sub(o.lastHeard) < d.r.Suspect {
		d.emit(o.m.Tick(d.out[:0]))
		if o.inj != nil {
			o.inj.InjectState(d.point(o), o.m)
		}
	}
	d.checkDone()
}

// checkDone finishes a finite algorithm, or lets the root broadcast once
// the group's certificate is complete.
func (d *driver) checkDone() {
	if !d.active() {
		return
	}
	o := d.cur
	if d.r.spec.Finite {
		if f, ok := o.m.(gossip.Finisher); ok && f.Done() {
			d.est = o.m.Estimate(d.est[:0])
			d.deliver(append(slices.Clone(d.est), float64(d.r.Nodes)), d.r.ID)
		}
		return
	}
	// A node that finds itself the only one alive cannot tell that from
	// being cut off or misconfigured, so it never decides alone.
	if o.bcast || !o.cert.complete() || o.cert.root() != int(d.r.ID) || (d.r.Nodes > 1 && o.cert.live() < 2) {
		return
	}
	// A node that became root because the previous one died waits a little
	// for a result the dead root may have started to spread.
	if d.r.ID != 0 {
		if o.becameRoot.IsZero() {
			o.becameRoot = time.Now()
		}
		if time.Since(o.becameRoot) < d.r.Suspect/2 {
			return
		}
	}
	d.est = o.m.Estimate(d.est[:0])
	value := append(slices.Clone(d.est), float64(o.cert.live()))
	if err := d.bnode.Broadcast(d.now(), o.epoch, value); err != nil {
		d.n.log.Warn("result broadcast failed to start", "err", err)
		return
	}
	o.bcast = true
	d.collect()
}

// pollBroadcast sends what the result broadcast wants to send now and arms
// the timer for its next wish.
func (d *driver) pollBroadcast() {
	for {
		d.out = d.bnode.Poll(d.now(), d.out[:0])
		if len(d.out) == 0 {
			break
		}
		for _, msg := range d.out {
			if o := d.opFor(msg.Epoch); o != nil {
				o.sent++
			}
			d.send(msg)
		}
	}
	d.collect()
	if w := d.bnode.Wake(); w != broadcast.Never {
		d.timer.Reset(max(time.Duration(w-d.now())*bcastUnit, 0))
	}
}

// collect takes the broadcast's deliveries.
func (d *driver) collect() {
	for _, dv := range d.bnode.Deliveries(nil) {
		if d.active() && dv.Epoch == d.cur.epoch {
			d.deliver(dv.Value, dv.Root)
		}
	}
}

// answerLate tells a member still gossiping in an operation this node has
// finished how it ended: the result, or that the group disagrees.
func (d *driver) answerLate(o *op, to gossip.NodeID) {
	switch {
	case o.abort != nil:
		d.tell(o, to, tagAbort, nil)
	case o.result != nil:
		d.tell(o, to, uint64(o.root), slices.Clone(o.result))
	}
}

// tell sends a control message at most once per Suspect/8 to each member,
// so that a member that keeps gossiping is not answered for every message.
func (d *driver) tell(o *op, to gossip.NodeID, tag uint64, payload []float64) {
	if t, ok := o.told[to]; ok && time.Since(t) < d.r.Suspect/8 {
		return
	}
	o.told[to] = time.Now()
	d.control(o, to, tag, payload)
}

// mismatch ends the operation because the members disagree, and makes this
// node tell every member that still gossips, so that none of them mistakes
// the silence of the members that noticed for a crash and carries on.
func (d *driver) mismatch(err error) {
	d.cur.abort = err
	d.finish(d.best(), err)
}

// deliver ends the operation with the group's result (value…, live).
func (d *driver) deliver(payload []float64, root gossip.NodeID) {
	o := d.cur
	k := len(payload) - 1
	live := int(payload[k])
	value := slices.Clone(payload[:k])
	if o.req.sum {
		for i := range value {
			value[i] *= float64(live)
		}
	}
	o.result = slices.Clone(payload)
	o.root = root
	d.finish(Result{Value: value, Epoch: o.epoch, Live: live, Root: root}, nil)
}

// best is this node's own estimate, for an operation that gives up.
func (d *driver) best() Result {
	o := d.cur
	if o.m == nil {
		return Result{Epoch: o.epoch}
	}
	d.est = o.m.Estimate(d.est[:0])
	live := d.r.Nodes
	if o.cert != nil {
		live = o.cert.live()
	}
	v := slices.Clone(d.est)
	if o.req.sum {
		for i := range v {
			v[i] *= float64(live)
		}
	}
	return Result{Value: v, Epoch: o.epoch, Live: live, Root: d.r.ID}
}

func (d *driver) giveUp() {
	o := d.cur
	state := ""
	if c := o.cert; c != nil {
		state = fmt.Sprintf(", %d of %d members certified stable in generation %d, %d known dead, root %d", c.stable.count(), c.n, c.gen, c.dead.count(), c.root())
	}
	err := fmt.Errorf("%w after %v (epoch %d%s): %w", ErrNotConverged, time.Since(o.start).Round(time.Millisecond), o.epoch, state, o.req.ctx.Err())
	if f := d.n.ep.Stats().Foreign; f > 0 {
		err = fmt.Errorf("%w; %d messages from members with another configuration were dropped: %w", err, f, ErrGroupMismatch)
	}
	d.finish(d.best(), err)
}

func (d *driver) finish(res Result, err error) {
	o := d.cur
	if o.done {
		return
	}
	o.done = true
	res.Messages = o.sent
	res.Elapsed = time.Since(o.start)
	res.At = time.Now()
	if err == nil {
		d.n.count(func(s *Stats) { s.Results++ })
	}
	o.req.reply <- reply{res: res, err: err}
}
