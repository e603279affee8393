package aggregate

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gossipreduce/gossipreduce/broadcast"
	"github.com/gossipreduce/gossipreduce/gossip"
)

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

// op is one operation: under way, or finished and kept for a while to
// answer members that are late.
type op struct {
	rq         *request
	epoch      uint64
	m          gossip.Machine
	cert       *certificate
	ext        []float64 // the extremes known so far (max-merged)
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
	result     []float64 // the result payload (see resultPayload)
	root       gossip.NodeID
	abort      error           // the group disagrees: tell the members still gossiping
	hello      []gossip.NodeID // members that announced themselves during the operation
	left       []gossip.NodeID // members that left during the operation
}

// driver is the node's goroutine state; only loop touches it.
type driver struct {
	n        *Node
	r        *resolved
	bnode    *broadcast.Node
	epoch    uint64 // the last operation started
	ops      int    // operations started
	cur      *op
	finished []*op  // the last few finished operations, newest last
	absent   bitset // members not counted from the start of the next operation
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
	return &driver{n: n, r: n.r, bnode: bn, origin: time.Now(), absent: newBitset(n.r.Nodes)}, nil
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
			opDone = d.cur.rq.ctx.Done()
			reqs = nil // one operation at a time
		}
		select {
		case <-d.n.quit:
			if d.active() {
				d.finish(Result{}, ErrClosed)
			}
			d.announce(tagLeave)
			return
		case rq := <-reqs:
			d.begin(rq)
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
		d.autoStart()
	}
}

func (d *driver) active() bool { return d.cur != nil && !d.cur.done }

// now is the broadcast clock: driver time in LogP units.
func (d *driver) now() int64 { return int64(time.Since(d.origin) / bcastUnit) }

// announce tells every other member something about this one (hello when
// it joins, leave when it closes), best effort.
func (d *driver) announce(tag uint64) {
	for j := range d.r.Nodes {
		if j != int(d.r.ID) {
			d.send(gossip.Message{From: d.r.ID, To: gossip.NodeID(j), Kind: gossip.KindControl, Tag: tag})
		}
	}
}

// autoStart takes part in an operation another member started, when this
// member is idle and a message of a later epoch is waiting.
func (d *driver) autoStart() {
	if d.n.autoJoin == nil || d.active() || len(d.future) == 0 {
		return
	}
	next := uint64(0)
	for _, m := range d.future {
		if m.Epoch > d.epoch && (next == 0 || m.Epoch < next) {
			next = m.Epoch
		}
	}
	if next == 0 {
		return
	}
	if rq := d.n.autoJoin(next); rq != nil {
		d.begin(rq)
	}
}

func (d *driver) begin(rq *request) {
	if d.cur != nil {
		d.finished = append(d.finished, d.cur)
		if len(d.finished) > keepFinished {
			d.finished = d.finished[1:]
		}
	}
	epoch := rq.req.Epoch
	if epoch == 0 {
		epoch = d.epoch + 1
	}
	if epoch <= d.epoch {
		d.cur = &op{rq: rq, epoch: epoch, done: true}
		rq.done(Result{Epoch: epoch}, fmt.Errorf("%w: epoch %d, this member's last is %d: %w", errNotAfter, epoch, d.epoch, gossip.ErrInvalidConfig))
		return
	}
	d.epoch = epoch
	d.ops++
	d.n.count(func(s *Stats) { s.Operations++ })
	r := d.r
	m, err := r.spec.New(gossip.Config{
		ID: r.ID, Overlay: r.graph, Value: rq.req.Values, Mode: gossip.Average, Epoch: epoch,
		Rand: rand.NewPCG(r.Seed^epoch*0x9e3779b97f4a7c15, uint64(r.ID)), Tau: r.Tau,
		// A push unacknowledged for about four rounds of the neighbour's
		// sends is most likely lost: send the flow again, so that its mass,
		// which holds up settled, arrives.
		Resend: 4*r.graph.Degree(r.ID) + 8,
	})
	now := time.Now()
	o := &op{rq: rq, epoch: epoch, m: m, start: now, lastSend: now,
		ext:   slices.Clone(rq.req.Extremes),
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
		// Members known to be away are not waited for.
		for j := range r.Nodes {
			if d.absent.has(j) && j != int(r.ID) {
				o.cert.markDead(j)
				d.excluded(gossip.NodeID(j))
			}
		}
	}
	if r.Injector != nil {
		o.inj = r.Injector(epoch)
		o.injRand = rand.New(rand.NewPCG(r.Seed^0x1ec7, epoch<<32|uint64(r.ID)))
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
		d.buf = o.cert.encode(d.buf[:0], d.est, o.ext)
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
	if msg.Kind == gossip.KindControl && msg.Epoch == 0 {
		d.membership(msg)
		return
	}
	if d.cur == nil || msg.Epoch > d.epoch {
		if msg.Kind == gossip.KindControl && msg.Tag == tagPing {
			// Not started yet, but alive: say so, or the caller would
			// declare this member dead for being late.
			d.send(gossip.Message{From: d.r.ID, To: msg.From, Kind: gossip.KindControl, Epoch: msg.Epoch, Tag: tagPong})
			return
		}
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
			// It was declared dead (or absent) but is alive: it misses this
			// operation and is counted again from the next.
			d.absent.clear1(int(msg.From))
			d.tell(o, msg.From, tagExcluded, nil)
			return
		}
		if err := decodeCert(msg.Attach, d.r.Nodes, len(o.rq.req.Values), len(o.ext), &d.peer); err != nil {
			if errors.Is(err, gossip.ErrLength) {
				d.mismatch(fmt.Errorf("%w: node %d sent vectors of other lengths: %w", ErrGroupMismatch, msg.From, err))
				return
			}
			d.reject("certificate", msg, err)
			return
		}
		for _, j := range o.cert.merge(d.peer.gen, d.peer.stable, d.peer.dead) {
			d.excluded(gossip.NodeID(j))
		}
		if o.cert.dead.has(int(d.r.ID)) {
			d.excludedSelf(o, msg.From)
			return
		}
		mergeMax(o.ext, d.peer.ext)
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
		if settled(o.m, o.cert.theta) {
			o.cert.observe(d.est, d.peer.est, o.ext, d.peer.ext)
		} else {
			// Mass this member sent earlier, at a ratio its estimate has
			// since left, has not been acknowledged: the estimates can agree
			// and still miss it.
			o.cert.unsettle()
		}
	}
	d.emit(out)
	d.checkDone()
}

// settled reports whether the machine has nothing in transit that could
// still change the aggregate (see gossip.Settler); machines that cannot tell
// count as settled.
func settled(m gossip.Machine, tol float64) bool {
	s, ok := m.(gossip.Settler)
	return !ok || s.Settled(tol)
}

// membership handles hello and leave announcements.
func (d *driver) membership(msg gossip.Message) {
	j := int(msg.From)
	if j >= d.r.Nodes || j == int(d.r.ID) {
		return
	}
	o := d.cur
	switch msg.Tag {
	case tagHello:
		d.absent.clear1(j)
		if d.active() {
			o.hello = append(o.hello, msg.From)
		}
	case tagLeave:
		d.absent.set(j)
		if d.active() {
			o.left = append(o.left, msg.From)
			if o.cert != nil && o.cert.markDead(j) {
				d.excluded(msg.From)
			}
		}
	}
}

func (d *driver) onControl(o *op, msg gossip.Message) {
	switch msg.Tag {
	case tagAbort:
		if !o.done {
			d.mismatch(fmt.Errorf("%w: node %d found that the members' vectors differ in length", ErrGroupMismatch, msg.From))
		}
	case tagExcluded:
		if !o.done {
			d.excludedSelf(o, msg.From)
		}
	case tagPing:
		switch {
		case o.done:
			d.answerLate(o, msg.From)
		case o.cert != nil && o.cert.dead.has(int(msg.From)):
			d.absent.clear1(int(msg.From))
			d.tell(o, msg.From, tagExcluded, nil)
		default:
			d.control(o, msg.From, tagPong, nil)
		}
	case tagPong:
		// Proof of life; heard was updated above.
	default:
		if !o.done {
			d.deliver(msg.Payload, gossip.NodeID(msg.Tag))
		}
	}
}

// excludedSelf ends the operation because the group declared this member
// dead; it announces itself again so that it is counted from the next
// operation on.
func (d *driver) excludedSelf(o *op, by gossip.NodeID) {
	d.finish(d.best(), fmt.Errorf("%w (told by node %d, epoch %d)", ErrExcluded, by, o.epoch))
	d.announce(tagHello)
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
	// probed, again every sixteenth, so about twelve probes go out before
	// it is declared dead: with 20 % loss each way a round trip fails with
	// probability 0.36, and twelve in a row with 5e-6. One silent for
	// Suspect despite the probes is declared dead. In this member's first operation, a
	// neighbour never heard from (the group may still be starting) gets
	// four times as long.
	if o.cert != nil {
		for j, t := range o.heard {
			limit := d.r.Suspect
			if !o.ever[j] && d.ops == 1 {
				limit *= 4
			}
			quiet := now.Sub(t)
			switch {
			case quiet > limit:
				if o.cert.markDead(int(j)) {
					d.excluded(j)
				}
			case quiet > limit/4 && now.Sub(o.pinged[j]) > d.r.Suspect/16:
				o.pinged[j] = now
				d.control(o, j, tagPing, nil)
			}
		}
	}
	// Keep the exchange going after lost messages: a node that sent
	// nothing for Idle takes a gossip step on its own, as long as somebody
	// answers (sending into silence only moves mass away; the probes above
	// find members that start late).
	if now.Sub(o.lastSend) >= d.r.Idle && now.Sub(o.lastHeard) < d.r.Suspect {
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
	if d.r.Nodes == 1 {
		// A group of one has its answer at once (no message will ever come
		// to certify it).
		d.est = o.m.Estimate(d.est[:0])
		d.deliver(resultPayload(d.est, o.ext, 1, newBitset(1)), d.r.ID)
		return
	}
	if d.r.spec.Finite {
		if f, ok := o.m.(gossip.Finisher); ok && f.Done() {
			d.est = o.m.Estimate(d.est[:0])
			d.deliver(resultPayload(d.est, nil, d.r.Nodes, newBitset(d.r.Nodes)), d.r.ID)
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
	if o.cert.root() != 0 {
		if o.becameRoot.IsZero() {
			o.becameRoot = time.Now()
		}
		if time.Since(o.becameRoot) < d.r.Suspect/2 {
			return
		}
	}
	d.est = o.m.Estimate(d.est[:0])
	value := resultPayload(d.est, o.ext, o.cert.live(), o.cert.dead)
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

// deliver ends the operation with the group's result.
func (d *driver) deliver(payload []float64, root gossip.NodeID) {
	o := d.cur
	values, ext, live, dead, ok := parseResult(payload, len(o.rq.req.Values), len(o.ext), d.r.Nodes)
	if !ok {
		d.n.log.Debug("result of the wrong shape ignored", "root", root, "words", len(payload))
		return
	}
	values = slices.Clone(values)
	if o.rq.sum {
		for i := range values {
			values[i] *= float64(live)
		}
	}
	o.result = slices.Clone(payload)
	o.root = root
	// The group's view of who is away holds from the next operation on,
	// except for members that announced themselves since.
	copy(d.absent, dead)
	d.absent.clear1(int(d.r.ID))
	for _, j := range o.hello {
		d.absent.clear1(int(j))
	}
	for _, j := range o.left {
		d.absent.set(int(j))
	}
	d.finish(Result{Value: values, Extremes: slices.Clone(ext), Epoch: o.epoch, Live: live, Root: root, Absent: dead.members(d.r.Nodes)}, nil)
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
	if o.rq.sum {
		for i := range v {
			v[i] *= float64(live)
		}
	}
	return Result{Value: v, Extremes: slices.Clone(o.ext), Epoch: o.epoch, Live: live, Root: d.r.ID}
}

func (d *driver) giveUp() {
	o := d.cur
	state := ""
	if c := o.cert; c != nil {
		state = fmt.Sprintf(", %d of %d members certified stable in generation %d, %d known dead, root %d", c.stable.count(), c.n, c.gen, c.dead.count(), c.root())
	}
	err := fmt.Errorf("%w after %v (epoch %d%s): %w", ErrNotConverged, time.Since(o.start).Round(time.Millisecond), o.epoch, state, o.rq.ctx.Err())
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
	o.rq.done(res, err)
}
