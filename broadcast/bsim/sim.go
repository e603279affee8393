package bsim

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gossipreduce/gossipreduce/broadcast"
	"github.com/gossipreduce/gossipreduce/broadcast/internal/pick"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/eventq"
)

// Result is the outcome of one simulated broadcast.
type Result struct {
	Seed         uint64 // the run's seed
	Dead         int    // processes failed before the start
	OnlineFailed int    // processes failed during the run
	// ColoringLatency is when the last colored live process was colored.
	ColoringLatency int64
	// Quiescence is when all activity ended.
	Quiescence int64
	// CorrectionStart is the synchronized correction start, -1 if none.
	CorrectionStart int64
	// CorrectionLatency is Quiescence - CorrectionStart (L_SCC for
	// synchronized checked correction), -1 without synchronized
	// correction.
	CorrectionLatency int64
	// Msgs and CorrectionMsgs count messages sent.
	Msgs, CorrectionMsgs int64
	// Uncolored counts live processes never colored.
	Uncolored int
	// Undelivered counts live colored processes that did not deliver
	// (fail-proof c-nodes that never learned of F+1 g-nodes).
	Undelivered int
	// GMax is the longest run of consecutive processes on the ring not
	// colored by dissemination (for trees with overlapped correction: not
	// colored by a tree message), the maximum gap g_max.
	GMax int
	// Participants counts processes that sent correction messages.
	Participants int
	// SOS reports whether fail-proof correction fell back to SOS.
	SOS bool
	// ColorAt is, with detail, every process's coloring time (-1 if
	// never).
	ColorAt []int64
	// GNodes is, with detail, which processes are g-nodes.
	GNodes []bool
}

// Failures are the faults of one run.
type Failures struct {
	// Dead marks processes failed before the start (never the root).
	Dead []bool
	// FailAt gives each process's failure time during the run,
	// math.MaxInt64 for none; nil means none at all.
	FailAt []int64
}

// DrawFailures chooses count distinct processes other than the root 0,
// uniformly at random from src, to fail before the start.
func DrawFailures(src rand.Source, n, count int) (Failures, error) {
	dead, err := drawDead(src, n, count, nil)
	return Failures{Dead: dead}, err
}

func drawDead(src rand.Source, n, count int, dead []bool) ([]bool, error) {
	if count < 0 || count > n-1 {
		return nil, fmt.Errorf("bsim: %w: %d failures among %d processes (the root never fails)", gossip.ErrInvalidConfig, count, n)
	}
	if cap(dead) >= n {
		dead = dead[:n]
		clear(dead)
	} else {
		dead = make([]bool, n)
	}
	// Floyd's algorithm over 1 … n-1.
	m := n - 1
	for j := m - count; j < m; j++ {
		r := int(pick.Uniform(src, uint64(j+1))) + 1 // in [1, j+1]
		if dead[r] {
			r = j + 1
		}
		dead[r] = true
	}
	return dead, nil
}

// gapMax returns the longest cyclic run of processes that are not g-nodes.
func gapMax(gnode []bool) int {
	n := len(gnode)
	first := -1
	for i, g := range gnode {
		if g {
			first = i
			break
		}
	}
	if first < 0 {
		return n
	}
	best, run := 0, 0
	for k := 1; k <= n; k++ {
		if gnode[(first+k)%n] {
			best = max(best, run)
			run = 0
		} else {
			run++
		}
	}
	return best
}

func (f Failures) alive(v int32, t int64) bool {
	if f.Dead != nil && f.Dead[v] {
		return false
	}
	return f.FailAt == nil || t < f.FailAt[v]
}

func (f Failures) liveAtEnd(v int32) bool {
	return (f.Dead == nil || !f.Dead[v]) && (f.FailAt == nil || f.FailAt[v] == math.MaxInt64)
}

// SimulateMachines runs one broadcast of plan by driving one
// [broadcast.Machine] per process through a straightforward discrete-event
// loop under the package's timing model. Gossip targets come from
// rand.NewPCG(seed, id). It is the reference the fast engine is checked
// against, and the engine for fail-proof correction, BMG flooding,
// acknowledged trees and failures during the run.
func SimulateMachines(ctx context.Context, plan *broadcast.Plan, fails Failures, seed uint64, detail bool) (Result, error) {
	return simulate(ctx, plan, fails, seed, detail, nil)
}

// simulate runs the reference loop; with skew, process v's machine reads
// the local clock broadcast time + skew[v] (broadcast.ClockFromMessages).
func simulate(ctx context.Context, plan *broadcast.Plan, fails Failures, seed uint64, detail bool, skew []int64) (Result, error) {
	n := plan.Nodes()
	if (fails.Dead != nil && len(fails.Dead) != n) || (fails.FailAt != nil && len(fails.FailAt) != n) {
		return Result{}, fmt.Errorf("bsim: %w: failure vectors for %d processes", gossip.ErrLength, n)
	}
	if !fails.alive(0, 0) || (fails.FailAt != nil && fails.FailAt[0] != math.MaxInt64) {
		return Result{}, fmt.Errorf("bsim: %w: the root must stay alive", gossip.ErrInvalidConfig)
	}
	if skew == nil {
		skew = make([]int64, n)
	}
	clock := broadcast.ClockShared
	if len(skew) != n {
		return Result{}, fmt.Errorf("bsim: %w: clock skews for %d processes", gossip.ErrLength, n)
	}
	for _, s := range skew {
		if s != 0 {
			clock = broadcast.ClockFromMessages
		}
	}
	machines := make([]*broadcast.Machine, n)
	for v := range machines {
		m, err := broadcast.NewMachine(plan, broadcast.MachineConfig{ID: gossip.NodeID(v), Epoch: 1, Rand: rand.NewPCG(seed, uint64(v)), Clock: clock})
		if err != nil {
			return Result{}, err
		}
		machines[v] = m
	}
	model := plan.Spec().Model
	d := refDriver{
		plan:     plan,
		o:        int64(model.O),
		l:        int64(model.L),
		fails:    fails,
		ms:       machines,
		recvFree: make([]int64, n),
		slotAt:   make([]int64, n),
		busy:     make([]int64, n),
		skew:     skew,
	}
	for v := range d.slotAt {
		d.slotAt[v] = -1
	}
	if err := machines[0].Start(skew[0], []float64{1}); err != nil {
		return Result{}, err
	}
	d.schedule(0, 0)
	if err := d.run(ctx); err != nil {
		return Result{}, err
	}
	return d.result(seed, detail), nil
}

type refEvent struct {
	class uint8 // 0 receive end, 1 send slot, 2 arrival
	v     int32
	msg   gossip.Message
}

type refDriver struct {
	plan     *broadcast.Plan
	o, l     int64
	fails    Failures
	ms       []*broadcast.Machine
	q        eventQueue
	recvFree []int64
	slotAt   []int64 // the pending send slot, -1 if none
	busy     []int64 // the send port is busy until
	skew     []int64 // process v's clock reads broadcast time + skew[v]
	quiet    int64
	sos      bool
	out      []gossip.Message
}

func (d *refDriver) schedule(v int32, t int64) {
	d.slotAt[v] = t
	d.q.push(t, refEvent{class: 1, v: v})
}

func (d *refDriver) run(ctx context.Context) error {
	o := d.o
	horizon := 64*int64(len(d.ms))*(o+d.l+1) + 1<<20
	var batch []refEvent
	for d.q.len() > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		t := d.q.peekTime()
		if t > horizon {
			return fmt.Errorf("bsim: simulation passed time %d without quiescing", horizon)
		}
		batch = d.q.popAt(t, batch[:0])
		sortEvents(batch)
		for _, ev := range batch {
			switch ev.class {
			case 0:
				if err := d.receive(t, ev); err != nil {
					return err
				}
			case 1:
				if err := d.slot(t, ev.v); err != nil {
					return err
				}
			case 2:
				to := int32(ev.msg.To)
				if !d.fails.alive(to, t) {
					d.quiet = max(d.quiet, t)
					continue
				}
				start := max(t, d.recvFree[to])
				d.recvFree[to] = start + o
				d.q.push(start+o, refEvent{class: 0, v: to, msg: ev.msg})
			}
		}
	}
	return nil
}

func (d *refDriver) receive(t int64, ev refEvent) error {
	v := ev.v
	if !d.fails.alive(v, t) {
		d.quiet = max(d.quiet, d.fails.FailAt[v])
		return nil
	}
	d.quiet = max(d.quiet, t)
	if err := d.ms[v].Step(t+d.skew[v], ev.msg); err != nil {
		return fmt.Errorf("bsim: reference simulation, process %d at %d: %w", v, t, err)
	}
	// Poll now unless a send is in progress (its slot comes at its end)
	// or a poll at t is already due; a pending wake-up is superseded.
	if s := d.slotAt[v]; s < 0 || (s > t && d.busy[v] <= t) {
		d.schedule(v, t)
	}
	return nil
}

func (d *refDriver) slot(t int64, v int32) error {
	if d.slotAt[v] != t {
		return nil // superseded
	}
	d.slotAt[v] = -1
	if !d.fails.alive(v, t) {
		return nil
	}
	m := d.ms[v]
	d.out = m.Poll(t+d.skew[v], d.out[:0])
	switch len(d.out) {
	case 0:
		w := m.Wake()
		if w == broadcast.Never {
			return nil
		}
		w -= d.skew[v]
		if w <= t {
			return fmt.Errorf("bsim: process %d polled at %d sent nothing but wants to wake at %d", v, t, w)
		}
		d.schedule(v, w)
	case 1:
		msg := d.out[0]
		if typ, _, _, _ := broadcast.DecodeTag(msg.Tag); typ == broadcast.MsgSOS {
			d.sos = true
		}
		o := d.o
		d.quiet = max(d.quiet, t+o)
		d.busy[v] = t + o
		d.q.push(t+o+d.l, refEvent{class: 2, v: int32(msg.To), msg: msg})
		d.schedule(v, t+o)
	default:
		return fmt.Errorf("bsim: process %d sent %d messages in one slot", v, len(d.out))
	}
	return nil
}

func (d *refDriver) result(seed uint64, detail bool) Result {
	p := d.plan
	n := p.Nodes()
	r := Result{Seed: seed, Quiescence: d.quiet, CorrectionStart: -1, CorrectionLatency: -1, SOS: d.sos}
	if s, ok := p.CorrectionStart(); ok {
		r.CorrectionStart = s
		r.CorrectionLatency = d.quiet - s
	}
	gnode := make([]bool, n)
	if detail {
		r.ColorAt = make([]int64, n)
	}
	for v, m := range d.ms {
		all, corr := m.Sends()
		r.Msgs += int64(all)
		r.CorrectionMsgs += int64(corr)
		if corr > 0 {
			r.Participants++
		}
		gnode[v] = m.GNode()
		at, _, colored := m.ColoredAt()
		if detail {
			r.ColorAt[v] = -1
			if colored {
				r.ColorAt[v] = at
			}
		}
		switch {
		case d.fails.Dead != nil && d.fails.Dead[v]:
			r.Dead++
		case !d.fails.liveAtEnd(int32(v)):
			r.OnlineFailed++
		case !colored:
			r.Uncolored++
		default:
			r.ColoringLatency = max(r.ColoringLatency, at)
			if !m.Delivered() {
				r.Undelivered++
			}
		}
	}
	r.GMax = gapMax(gnode)
	if detail {
		r.GNodes = gnode
	}
	return r
}

// eventQueue orders the reference simulator's events by integer time.
type eventQueue struct{ q eventq.Queue[refEvent] }

func (e *eventQueue) push(t int64, ev refEvent) { e.q.Push(float64(t), ev) }
func (e *eventQueue) len() int                  { return e.q.Len() }

func (e *eventQueue) peekTime() int64 {
	at, _, _ := e.q.Peek()
	return int64(at)
}

// popAt appends every queued event at time t to batch.
func (e *eventQueue) popAt(t int64, batch []refEvent) []refEvent {
	for {
		at, _, ok := e.q.Peek()
		if !ok || int64(at) != t {
			return batch
		}
		_, ev, _ := e.q.Pop()
		batch = append(batch, ev)
	}
}

// sortEvents puts the events of one time step in processing order:
// receive ends, then send slots, then arrivals by receiver and sender.
func sortEvents(batch []refEvent) {
	slices.SortStableFunc(batch, func(a, b refEvent) int {
		if c := cmp.Compare(a.class, b.class); c != 0 {
			return c
		}
		if c := cmp.Compare(a.v, b.v); c != 0 {
			return c
		}
		return cmp.Compare(a.msg.From, b.msg.From)
	})
}
