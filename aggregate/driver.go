package aggregate

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/gossipreduce/gossipreduce/member"
	"github.com/gossipreduce/gossipreduce/transport"
)

// driver is the node's goroutine: plumbing only. It moves messages between
// the transport endpoint and the member machine, which holds every protocol
// decision, feeds it the time (time since the driver started, on the
// monotonic clock) and hands outcomes to the waiting callers. Only loop
// touches it.
type driver struct {
	n      *Node
	m      *member.Machine
	rq     *request // the operation under way, nil when idle
	origin time.Time
	timer  *time.Timer
	ticker *time.Ticker // every Tick, while ticking
	// ticking: the machine is ticked every Tick (see pace); active: it
	// has an operation under way, and is counted in activeMembers.
	ticking, active bool
	// lastTick is the machine time of the last tick; due, when dueSet,
	// the time the timer was armed for by NextTick (see pace).
	lastTick, due time.Duration
	dueSet        bool
	// ticked: the machine was ticked since NextTick was last asked.
	ticked bool
}

// activeMembers counts the members of this process that have an operation
// under way (see driver.pace).
var activeMembers atomic.Int64

// sparseTicks, set by tests, makes every driver tick its machine only
// when NextTick says, even beside other members of its process.
var sparseTicks atomic.Bool

func newDriver(n *Node, m *member.Machine) *driver {
	return &driver{n: n, m: m, origin: time.Now()}
}

// now is the machine's clock.
func (d *driver) now() time.Duration { return time.Since(d.origin) }

func (d *driver) loop() {
	defer close(d.n.exited)
	defer d.n.state.release() // before exited closes: a closed Node holds no state file
	d.ticker = time.NewTicker(d.n.r.Tick)
	d.ticker.Stop()
	defer d.ticker.Stop()
	d.timer = time.NewTimer(time.Hour)
	defer d.timer.Stop()
	defer func() {
		if d.active {
			activeMembers.Add(-1)
		}
	}()
	for {
		var opDone <-chan struct{}
		reqs := d.n.reqs
		if d.rq != nil {
			opDone = d.rq.ctx.Done()
			reqs = nil // one operation at a time
		}
		select {
		case <-d.n.quit:
			if d.n.silent.Load() {
				d.m.Fail(d.now(), member.ErrClosed) // see Node.Stop
			} else {
				d.m.Leave(d.now())
			}
			d.flush()
			return
		case rq := <-reqs:
			d.begin(rq)
		case msg, ok := <-d.n.ep.Messages():
			if !ok {
				d.m.Fail(d.now(), fmt.Errorf("aggregate: endpoint closed: %w", ErrClosed))
				d.flush()
				return
			}
			d.m.Backlog(len(d.n.ep.Messages()))
			d.m.Step(d.now(), msg)
		case <-d.ticker.C:
			d.drain()
			d.tick()
		case <-d.timer.C:
			d.drain()
			d.tick()
		case <-opDone:
			d.m.GiveUp(d.now(), d.rq.ctx.Err())
		}
		d.flush()
		d.autoStart()
		d.pace()
	}
}

// pace arms the timers for the machine's next tick. A member alone in its
// process with an operation under way is ticked when NextTick says a tick
// can act, at most every Tick; members that share their process with
// others running an operation are ticked every Tick, as all were until
// 2026-11-29.
//
// Regular ticks cost a wake-up every Tick: 160 member processes (ten
// groups of 16 running PFCC on one server) spent about 55 s of CPU on a
// round and completed 6 of 10 groups on an idle 2-core machine, each of
// them in 12 to 30 s; ticked by NextTick, 7.4 s of CPU and 10 of 10 in
// 3 s (docs/live.md, "Ticks when they can act"). But a tick that comes
// late is also how a member learns that it was not running (the
// local-health rule of member.Machine.Tick), and members of one process
// wait behind each other, and behind an embedded server's goroutines, in
// the Go scheduler: a member that sleeps until its next due time does not
// see its neighbours' goroutines starved meanwhile. 2,048 members of one
// process ticked by NextTick beside six busy loops excluded 394 live
// members in three operations; ticked every Tick, none. A member alone in
// its process is stalled only with its process, and its timer then fires
// late, which the local-health rule reads as before.
func (d *driver) pace() {
	if active := d.m.Active(); active != d.active {
		d.active = active
		if active {
			activeMembers.Add(1)
		} else {
			activeMembers.Add(-1)
		}
	}
	regular := d.active && activeMembers.Load() > 1 && !sparseTicks.Load()
	if regular != d.ticking {
		if regular {
			d.ticker.Reset(d.n.r.Tick)
		} else {
			d.ticker.Stop()
		}
		d.ticking = regular
	}
	if !regular && d.active && !d.n.ep.Online() {
		// Poll until the network is back, without asking NextTick: asked,
		// it counts the ticks left out as taken, and the first tick back
		// would not see the outage as a stall (see tick). Exchange
		// members then fell back to PFCC for the exchange's silence over
		// a server's restart of 5 s, and sent 40 to 60 % more messages
		// (a helper's adversarial runs, 2026-11-29; now 2 of 14 runs fell
		// back, against 6 of 6 before and 0 of 6 ticked every Tick).
		// Ticking the machine once as the outage is found, as a driver
		// ticking every Tick last ticks it, did not help (4 of 8).
		d.timer.Reset(d.n.r.Tick)
		return
	}
	if !regular && (d.dueSet && d.now() >= d.due || d.ticked && d.now()-d.lastTick > 2*d.n.r.Tick) {
		// The tick is due, and its timer has not fired yet, or it fired
		// and a message was taken first: a process stopped past the due
		// time finds both ready, and select picks at random. Or the last
		// tick itself took more than two Ticks: the process was stopped
		// in it. Tick now, before NextTick counts the ticks left out as
		// taken, so that a stall is seen as one (the local-health rule of
		// Tick), as a driver ticking every Tick sees it at its next tick:
		// asked first, NextTick moved the machine's notion of the last
		// tick to the present, and 5 of 25 stopped member processes
		// logged no stall (a helper's adversarial runs, 2026-11-29).
		d.drain()
		d.tick()
		d.flush()
	}
	now := d.now()
	var at time.Duration
	var ok bool
	if regular {
		at, ok = d.m.Wake()
	} else {
		at, ok = d.m.NextTick(now)
		d.ticked = false
		// No more often than every Tick, as a driver ticking every Tick
		// would (NextTick names the first of its ticks that can act): the
		// exchange's idle step is due again as soon as it is taken while
		// a partner is silent, and ticked at once, 16 exchange processes
		// with one stopped sent 1,600 messages a second instead of 450.
		at = max(at, d.lastTick+d.n.r.Tick)
		d.due, d.dueSet = at, ok
	}
	if ok {
		wait := max(at-now, 0)
		if wait < d.n.r.Tick && !d.n.ep.Online() {
			wait = d.n.r.Tick // poll, rather than spin, until it is back
		}
		d.timer.Reset(wait)
	}
}

// tick advances the machine's clock, unless the endpoint is offline (a
// NATS server went away): a member that can neither hear nor be heard
// learns nothing from its neighbours' silence, so the machine is not
// ticked until the endpoint is back, and its first tick then finds a gap
// that its local-health rule forgives, as after a stall. Without this, a
// server restart of more than Suspect made every member exclude every
// other.
func (d *driver) tick() {
	if d.n.ep.Online() {
		// An offline poll leaves the due time standing: the first event
		// back, a message as well as the timer, then takes the overdue
		// tick, which sees the outage as a stall (see pace).
		d.dueSet = false
		d.ticked = true
		d.lastTick = d.now()
		d.n.ticks.Add(1)
		d.m.Tick(d.lastTick)
	}
}

// drain takes in the messages already waiting before a tick, so that the
// machine's failure detection sees what has arrived: select picks among
// ready channels at random, and on a busy machine a tick could otherwise
// find a neighbour "silent" whose messages sit in the buffer.
//
// It stops early when the operation's context has ended: with large vectors
// a buffer of messages takes seconds to step through, and the caller's
// deadline is then noticed at the next message, not after the last.
func (d *driver) drain() {
	for range cap(d.n.ep.Messages()) {
		if d.rq != nil && d.rq.ctx.Err() != nil {
			return
		}
		select {
		case msg, ok := <-d.n.ep.Messages():
			if !ok {
				return
			}
			d.m.Backlog(len(d.n.ep.Messages()))
			d.m.Step(d.now(), msg)
		default:
			return
		}
	}
}

func (d *driver) begin(rq *request) {
	d.rq = rq
	d.foreign()
	if err := d.m.Begin(d.now(), member.Op{Epoch: rq.req.Epoch, Values: rq.req.Values, Extremes: rq.req.Extremes, Sum: rq.sum, Idle: d.n.r.opIdle(len(rq.req.Values))}); err != nil {
		d.rq = nil
		rq.done(Result{}, err)
	}
}

// foreign hands the machine the peers the endpoint found running another
// configuration of the group (see member.Machine.Foreign).
func (d *driver) foreign() {
	for _, f := range d.n.ep.Foreign() {
		d.m.Foreign(d.now(), f.From, d.n.r.foreignWhy(f))
	}
}

// autoStart takes part in an operation another member started, when this
// member is idle and a message of a later epoch is waiting.
func (d *driver) autoStart() {
	if d.n.autoJoin == nil || d.rq != nil {
		return
	}
	if next, ok := d.m.Pending(); ok {
		if rq := d.n.autoJoin(next); rq != nil {
			d.begin(rq)
			d.flush()
		}
	}
}

// flush sends the machine's outbox, hands an ended operation's outcome to
// its caller and publishes the counts.
func (d *driver) flush() {
	d.foreign()
	if d.n.state != nil {
		// The votes reach storage before any message that carries them.
		if hs, changed := d.m.HardState(); changed {
			if err := d.n.state.save(hs); err != nil {
				d.m.Fail(d.now(), err)
				d.m.Outbox() // a vote not kept must not leave
			}
		}
	}
	for _, msg := range d.m.Outbox() {
		if err := d.n.ep.Send(context.Background(), msg); err != nil {
			d.n.log.Debug("send failed", "to", msg.To, "err", err)
			if errors.Is(err, transport.ErrMalformed) {
				// A message the wire format cannot carry will not fit
				// later either: end the operation with the reason
				// rather than at its deadline.
				d.m.Fail(d.now(), fmt.Errorf("aggregate: a message of epoch %d to member %d cannot be sent: %w", msg.Epoch, msg.To, err))
			}
		}
	}
	if err := d.n.ep.Err(); err != nil {
		// Another process holds this member's identity: neither may
		// return a result, since the group counts one input for both.
		d.m.Fail(d.now(), err)
	}
	if out, ok := d.m.TakeOutcome(); ok && d.rq != nil {
		rq := d.rq
		d.rq = nil
		out.Result.At = time.Now()
		err := out.Err
		if err == nil {
			if derr := d.n.ep.Err(); derr != nil {
				err = derr
			}
		}
		if errors.Is(err, ErrNotConverged) {
			if f := d.n.ep.Stats().Foreign; f > 0 {
				err = fmt.Errorf("%w; %d messages from members with another configuration were dropped: %w", err, f, ErrGroupMismatch)
			}
		}
		rq.done(out.Result, err)
	}
	d.n.setStats(d.m.Stats())
}
