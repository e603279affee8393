package bsim

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"

	"github.com/gossipreduce/gossipreduce/broadcast"
	"github.com/gossipreduce/gossipreduce/broadcast/internal/pick"
	"github.com/gossipreduce/gossipreduce/gossip"
)

// FastSupported reports whether the fast engine can simulate plan: tree or
// gossip dissemination with no, opportunistic, optimized or checked
// correction, and failures only before the start.
func FastSupported(plan *broadcast.Plan) bool {
	spec := plan.Spec()
	switch spec.Scheme.Kind {
	case broadcast.SchemeTree, broadcast.SchemeGossip:
	default:
		return false
	}
	return spec.Correction.Kind != broadcast.CorrectionFailProof
}

// Simulator is the fast engine: the same timing model and the same
// per-process rules as the machines (see SimulateMachines), specialised
// into flat arrays and an integer-time bucket queue so that a 64K-process
// broadcast takes milliseconds. It keeps its buffers between runs; use one
// Simulator per goroutine.
type Simulator struct {
	plan *broadcast.Plan
	n    int32
	o, l int64
	// what the rules need of the plan
	tree   *broadcast.Tree // nil for gossip
	gossip bool
	corr   broadcast.CorrectionKind
	sync   bool  // synchronized correction
	start  int64 // the plan's Deadline
	gT     int64 // the gossip time T

	ps   []proc
	rng  []rand.PCG
	dead []bool

	tl    timeline
	bits  []uint64 // scratch bitmap for sorting large slot lists
	quiet int64
	msgs  int64
	corrM int64
	seed  uint64
}

// proc is one process's state, kept together for locality.
type proc struct {
	colorAt  int32 // -1 while uncolored
	recvFree int32
	slotAt   int32 // pending send slot, -1 if none
	busy     int32 // send port busy until
	fanNext  int32 // index of the next child to send to; -1 if none
	cs       broadcast.CorrectionState
	flags    uint8
}

const (
	fGNode    = 1 << iota // colored by dissemination in time for correction
	fCorr                 // takes part in correction
	fCorrDone             // correction finished
	fGossip               // still gossiping
	fSentCorr             // sent a correction message
)

// NewSimulator returns a fast engine for plan, or an error if the plan
// needs the machine-driven engine (see FastSupported).
func NewSimulator(plan *broadcast.Plan) (*Simulator, error) {
	spec := plan.Spec()
	if !FastSupported(plan) {
		return nil, fmt.Errorf("bsim: %w: the fast engine does not run %s with %s", gossip.ErrInvalidConfig, spec.Scheme, spec.Correction)
	}
	n, o, l := plan.Nodes(), int64(spec.Model.O), int64(spec.Model.L)
	if int64(n)*(o+l) > math.MaxInt32/4 {
		return nil, fmt.Errorf("bsim: %w: %d processes with L=%d o=%d overflow the fast engine's clock", gossip.ErrInvalidConfig, n, l, o)
	}
	gT, _ := plan.GossipTime()
	s := &Simulator{
		plan:   plan,
		n:      int32(n),
		o:      o,
		l:      l,
		tree:   plan.Tree(),
		gossip: spec.Scheme.Kind == broadcast.SchemeGossip,
		corr:   spec.Correction.Kind,
		sync:   spec.Correction.Synchronized,
		start:  plan.Deadline(),
		gT:     gT,
		ps:     make([]proc, n),
		dead:   make([]bool, n),
	}
	if s.gossip {
		s.rng = make([]rand.PCG, n)
	}
	s.tl.init(4 * (2*o + l + 1))
	return s, nil
}

// Run simulates one broadcast with the processes marked in dead failed
// before the start (nil for none) and gossip targets drawn from
// rand.NewPCG(seed, id), exactly as SimulateMachines would.
func (s *Simulator) Run(ctx context.Context, dead []bool, seed uint64, detail bool) (Result, error) {
	if err := checkDead(dead, int(s.n)); err != nil {
		return Result{}, err
	}
	s.reset(dead, seed)
	s.ps[0].colorAt = 0
	s.beginDissemination(0, 0)
	s.schedule(0, 0, false)
	if err := s.loop(ctx); err != nil {
		return Result{}, err
	}
	return s.result(detail), nil
}

// checkDead validates a failure vector of the processes failed before the
// start: nil, or one entry per process with the root alive.
func checkDead(dead []bool, n int) error {
	if dead != nil && len(dead) != n {
		return fmt.Errorf("bsim: %w: failure vector for %d processes", gossip.ErrLength, n)
	}
	if dead != nil && dead[0] {
		return fmt.Errorf("bsim: %w: the root must stay alive", gossip.ErrInvalidConfig)
	}
	return nil
}

func (s *Simulator) reset(dead []bool, seed uint64) {
	for i := range s.ps {
		s.ps[i] = proc{colorAt: -1, slotAt: -1, fanNext: -1}
	}
	if dead == nil {
		clear(s.dead)
	} else {
		copy(s.dead, dead)
	}
	s.tl.reset()
	s.quiet, s.msgs, s.corrM, s.seed = 0, 0, 0, seed
}

// schedule sets v's next send slot at t. Continuations (a slot right after
// a send) arrive in increasing process order and go to cont; the others
// go to fresh, which is sorted before use.
func (s *Simulator) schedule(v int32, t int64, cont bool) {
	s.ps[v].slotAt = int32(t)
	b := s.tl.at(t)
	if cont {
		b.cont = append(b.cont, v)
	} else {
		b.fresh = append(b.fresh, v)
	}
	s.tl.pending++
}

// beginDissemination mirrors broadcast.Machine's beginDissemination.
func (s *Simulator) beginDissemination(v int32, t int64) {
	corr := s.corr != broadcast.CorrectionNone
	switch {
	case s.tree != nil:
		s.ps[v].fanNext = 0
		s.ps[v].flags |= fGNode
		if corr {
			s.ps[v].flags |= fCorr
		}
	case s.gossip:
		if t <= s.start {
			s.ps[v].flags |= fGNode
			if corr {
				s.ps[v].flags |= fCorr
			}
		}
		if t+s.o <= s.gT {
			s.ps[v].flags |= fGossip
			s.rng[v].Seed(s.seed, uint64(v))
		}
	}
}

const (
	evTypeShift = 56
	evFromShift = 28
	evMask      = 1<<28 - 1
)

func packEv(to, from int32, typ broadcast.MsgType) uint64 {
	return uint64(to) | uint64(from)<<evFromShift | uint64(typ)<<evTypeShift
}

func unpackEv(e uint64) (to, from int32, typ broadcast.MsgType) {
	return int32(e & evMask), int32(e >> evFromShift & evMask), broadcast.MsgType(e >> evTypeShift)
}

func (s *Simulator) loop(ctx context.Context) error {
	horizon := 64*int64(s.n)*(s.o+s.l+1) + 1<<20
	for t := int64(0); s.tl.pending > 0; t++ {
		if t&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if t > horizon {
				return fmt.Errorf("bsim: simulation passed time %d without quiescing", horizon)
			}
		}
		s.tl.now = t
		b := &s.tl.b[t&s.tl.mask]
		if len(b.recv)+len(b.cont)+len(b.fresh) == 0 {
			continue
		}
		for _, e := range b.recv {
			s.receive(t, e)
		}
		s.tl.pending -= len(b.recv)
		b.recv = b.recv[:0]
		// Slots in increasing process number, so that arrivals at a
		// receiver at one time come in sender order: merge the
		// continuations (already in order) with the sorted others.
		s.sortSlots(b.fresh)
		s.tl.pending -= len(b.cont) + len(b.fresh)
		cont, fresh := b.cont, b.fresh
		i, j := 0, 0
		for i < len(cont) || j < len(fresh) {
			var v int32
			if j == len(fresh) || (i < len(cont) && cont[i] < fresh[j]) {
				v = cont[i]
				i++
			} else {
				v = fresh[j]
				j++
			}
			if v >= 0 {
				s.slot(t, v)
			}
		}
		b = &s.tl.b[t&s.tl.mask] // the ring may have grown
		b.cont, b.fresh = b.cont[:0], b.fresh[:0]
	}
	return nil
}

// sortSlots puts a slot list in increasing process order. Large lists (all
// g-nodes waking at the synchronized correction start) go through a
// bitmap, which costs N/64 words instead of a comparison sort.
func (s *Simulator) sortSlots(slots []int32) {
	if slices.IsSorted(slots) {
		return
	}
	if len(slots) < 256 || len(slots) < int(s.n)/64 {
		slices.Sort(slots)
		return
	}
	if s.bits == nil {
		s.bits = make([]uint64, (s.n+63)/64)
	}
	for _, v := range slots {
		s.bits[v>>6] |= 1 << (v & 63)
	}
	i := 0
	for w, word := range s.bits {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			word &= word - 1
			if i < len(slots) {
				slots[i] = int32(w<<6 | b)
			}
			i++
		}
		s.bits[w] = 0
	}
	// A process may be listed twice (a superseded wake-up and a new
	// slot); the bitmap keeps one, and stale copies are skipped anyway.
	// Pad with the last value so the list stays sorted.
	for k := i; k < len(slots); k++ {
		slots[k] = slots[i-1]
	}
}

// receive mirrors broadcast.Machine.Step and the reference driver's receive.
func (s *Simulator) receive(t int64, e uint64) {
	v, from, typ := unpackEv(e)
	ps := &s.ps[v]
	s.quiet = max(s.quiet, t)
	fresh := ps.colorAt < 0
	if fresh {
		ps.colorAt = int32(t)
	}
	switch typ {
	case broadcast.MsgTree, broadcast.MsgGossip:
		if fresh {
			s.beginDissemination(v, t)
		}
	case broadcast.MsgCorrLeft, broadcast.MsgCorrRight:
		fromRight := typ == broadcast.MsgCorrLeft
		d := int64(from) - int64(v)
		if !fromRight {
			d = -d
		}
		n := int64(s.n)
		dist := int((d%n + n) % n)
		k := s.corr
		if fresh && s.tree != nil && !s.sync && (k == broadcast.CorrectionOpportunistic || k == broadcast.CorrectionOptimized) {
			ps.fanNext = 0
			ps.flags |= fCorr
		}
		ps.cs.Heard(s.plan, fromRight, dist)
	}
	if sl := ps.slotAt; sl < 0 || (int64(sl) > t && int64(ps.busy) <= t) {
		// The reference polls now. Skip it when that poll can do nothing:
		// the process has nothing to send at all, or only at the wake-up
		// already pending (a poll that sends nothing changes no state
		// unless Wake would say "now").
		if w := s.wake(ps, v); w == broadcast.Never || w == int64(sl) {
			return
		}
		s.schedule(v, t, false)
	}
}

// slot mirrors the reference driver's slot with broadcast.Machine.Poll
// and Wake.
func (s *Simulator) slot(t int64, v int32) {
	ps := &s.ps[v]
	if int64(ps.slotAt) != t {
		return
	}
	ps.slotAt = -1
	to, typ, ok := s.poll(t, v, ps)
	if !ok {
		if w := s.wake(ps, v); w != broadcast.Never {
			s.schedule(v, w, false)
		}
		return
	}
	s.msgs++
	if typ.Correction() {
		s.corrM++
		ps.flags |= fSentCorr
	}
	s.quiet = max(s.quiet, t+s.o)
	ps.busy = int32(t + s.o)
	s.book(t+s.o+s.l, to, packEv(to, v, typ))
	s.schedule(v, t+s.o, true)
}

// book queues the receive of a message arriving at to at time at. Every
// message takes o+L from the start of its send to its arrival, and sends
// are decided in time order and, at one time, in increasing sender
// number, so when a message is sent every message that arrives at to
// before it (or at the same time from a smaller sender) has already been
// booked: the receive can be placed now, in arrival order, without an
// arrival event.
func (s *Simulator) book(at int64, to int32, e uint64) {
	if s.dead[to] {
		s.quiet = max(s.quiet, at)
		return
	}
	p := &s.ps[to]
	start := max(at, int64(p.recvFree))
	p.recvFree = int32(start + s.o)
	rb := s.tl.at(start + s.o)
	rb.recv = append(rb.recv, e)
	s.tl.pending++
}

func (s *Simulator) poll(t int64, v int32, ps *proc) (int32, broadcast.MsgType, bool) {
	if ps.colorAt < 0 {
		return 0, 0, false
	}
	if s.tree != nil {
		if c, ok := s.tree.Child(gossip.NodeID(v), int(ps.fanNext)); ok {
			ps.fanNext++
			return int32(c), broadcast.MsgTree, true
		}
	}
	if ps.flags&fGossip != 0 {
		if t+s.o <= s.gT {
			return pick.Other(&s.rng[v], s.n, v), broadcast.MsgGossip, true
		}
		ps.flags &^= fGossip
	}
	if s.sync && t < s.start {
		return 0, 0, false
	}
	if ps.flags&(fCorr|fCorrDone) != fCorr {
		return 0, 0, false
	}
	left, off, ok := ps.cs.Next(s.plan)
	if !ok {
		ps.flags |= fCorrDone
		return 0, 0, false
	}
	n := int64(s.n)
	if left {
		return int32(((int64(v)-int64(off))%n + n) % n), broadcast.MsgCorrLeft, true
	}
	return int32((int64(v) + int64(off)) % n), broadcast.MsgCorrRight, true
}

func (s *Simulator) wake(ps *proc, v int32) int64 {
	if ps.colorAt < 0 {
		return broadcast.Never
	}
	if ps.flags&fGossip != 0 {
		return math.MinInt64
	}
	if s.tree != nil {
		if _, ok := s.tree.Child(gossip.NodeID(v), int(ps.fanNext)); ok {
			return math.MinInt64
		}
	}
	if ps.flags&(fCorr|fCorrDone) == fCorr {
		if s.sync {
			return s.start
		}
		return math.MinInt64
	}
	return broadcast.Never
}

func (s *Simulator) result(detail bool) Result {
	p := s.plan
	r := Result{Seed: s.seed, Quiescence: s.quiet, CorrectionStart: -1, CorrectionLatency: -1, Msgs: s.msgs, CorrectionMsgs: s.corrM}
	if st, ok := p.CorrectionStart(); ok {
		r.CorrectionStart = st
		r.CorrectionLatency = s.quiet - st
	}
	n := int(s.n)
	if detail {
		r.ColorAt = make([]int64, n)
		r.GNodes = make([]bool, n)
	}
	// g_max: the longest cyclic run without a g-node; the root is one.
	run := 0
	for v := 1; v <= n; v++ {
		u := v % n
		if s.ps[u].flags&fGNode != 0 {
			r.GMax = max(r.GMax, run)
			run = 0
		} else {
			run++
		}
	}
	for v := 0; v < n; v++ {
		ps := &s.ps[v]
		if detail {
			r.ColorAt[v] = int64(ps.colorAt)
			r.GNodes[v] = ps.flags&fGNode != 0
		}
		if ps.flags&fSentCorr != 0 {
			r.Participants++
		}
		switch {
		case s.dead[v]:
			r.Dead++
		case ps.colorAt < 0:
			r.Uncolored++
		default:
			r.ColoringLatency = max(r.ColoringLatency, int64(ps.colorAt))
		}
	}
	return r
}

// timeline is a bucket queue over integer time: a ring of buckets indexed
// by time modulo its size, grown when an event lands beyond it.
type timeline struct {
	b       []fastBucket
	mask    int64
	now     int64
	pending int
}

type fastBucket struct {
	recv  []uint64 // receive ends
	cont  []int32  // send slots right after a send, in process order
	fresh []int32  // other send slots
}

func (tl *timeline) init(span int64) {
	w := int64(64)
	for w < span {
		w *= 2
	}
	tl.b = make([]fastBucket, w)
	tl.mask = w - 1
}

func (tl *timeline) reset() {
	for i := range tl.b {
		b := &tl.b[i]
		b.recv, b.cont, b.fresh = b.recv[:0], b.cont[:0], b.fresh[:0]
	}
	tl.now, tl.pending = 0, 0
}

// at returns the bucket of time t ≥ now, growing the ring if needed.
func (tl *timeline) at(t int64) *fastBucket {
	if t-tl.now > tl.mask {
		tl.grow(t)
	}
	return &tl.b[t&tl.mask]
}

func (tl *timeline) grow(t int64) {
	w := int64(len(tl.b))
	for t-tl.now >= w {
		w *= 2
	}
	nb := make([]fastBucket, w)
	old := int64(len(tl.b))
	for i := int64(0); i < old; i++ {
		// The bucket at index i holds time tt in [now, now+old) with
		// tt ≡ i (mod old).
		tt := tl.now + ((i-tl.now)%old+old)%old
		nb[tt&(w-1)] = tl.b[i]
	}
	tl.b = nb
	tl.mask = w - 1
}
