package broadcast

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gossipreduce/gossipreduce/broadcast/internal/pick"
	"github.com/gossipreduce/gossipreduce/gossip"
)

// MsgType is the kind of a broadcast message, kept in the low four bits of
// gossip.Message.Tag.
type MsgType uint8

// Message types.
const (
	MsgTree      MsgType = iota + 1 // dissemination along the tree
	MsgCorrLeft                     // correction sent towards lower numbers
	MsgCorrRight                    // correction sent towards higher numbers
	MsgGossip                       // gossip dissemination
	MsgFailLeft                     // fail-proof correction, leftwards
	MsgFailRight                    // fail-proof correction, rightwards
	MsgSOS                          // fail-proof SOS: flood to everyone
	MsgBMG                          // binomial-graph flooding
	MsgAck                          // acknowledgment up the tree
	msgTypeLimit
)

var msgTypeNames = [...]string{"invalid", "tree", "corr-left", "corr-right", "gossip", "fail-left", "fail-right", "sos", "bmg", "ack"}

// String returns the type's name.
func (t MsgType) String() string {
	if t < msgTypeLimit {
		return msgTypeNames[t]
	}
	return fmt.Sprintf("msgtype(%d)", uint8(t))
}

// Correction reports whether messages of this type belong to the
// correction phase.
func (t MsgType) Correction() bool {
	switch t {
	case MsgCorrLeft, MsgCorrRight, MsgFailLeft, MsgFailRight, MsgSOS:
		return true
	}
	return false
}

// Tag layout of a broadcast message (gossip.Message.Tag):
//
//	bits  0–3   MsgType
//	bits  4–7   number of process ids appended to the payload (fail-proof)
//	bits  8–35  the root of the broadcast (28 bits)
//	bits 36–63  the broadcast time at which the send started (28 bits)
const (
	tagTimeShift = 36
	tagRootShift = 8
	tagRootMask  = 1<<28 - 1
	tagTimeMask  = 1<<28 - 1
	// MaxTime is the largest broadcast time a message can carry.
	MaxTime = tagTimeMask
)

// EncodeTag packs a message type, the number of appended ids, the root and
// the send time into a Tag.
func EncodeTag(t MsgType, ids int, root gossip.NodeID, sent int64) uint64 {
	return uint64(t)&0xf | uint64(ids&0xf)<<4 | (uint64(root)&tagRootMask)<<tagRootShift | (uint64(sent)&tagTimeMask)<<tagTimeShift
}

// DecodeTag unpacks a Tag made by EncodeTag.
func DecodeTag(tag uint64) (t MsgType, ids int, root gossip.NodeID, sent int64) {
	return MsgType(tag & 0xf), int(tag >> 4 & 0xf), gossip.NodeID(tag >> tagRootShift & tagRootMask), int64(tag >> tagTimeShift & tagTimeMask)
}

// Never is what Wake returns when the machine has nothing to send until a
// message arrives.
const Never = math.MaxInt64

// ClockMode says how a machine relates the driver's time to broadcast time,
// the time of the LogP schedule that starts when the root starts.
type ClockMode uint8

// Clock modes.
const (
	// ClockShared: the times passed to Start, Step and Poll are broadcast
	// times, as in the papers' model where every process reads one global
	// clock. Simulators use it.
	ClockShared ClockMode = iota
	// ClockFromMessages: the times are local; a process sets its broadcast
	// clock from the send time stamped on the first message it is colored
	// by, assuming it arrived after exactly 2o+L (the root from its Start).
	// Live runtimes use it.
	ClockFromMessages
)

// MachineConfig is what makes one process's machine.
type MachineConfig struct {
	// ID is this process, 0 ≤ ID < N.
	ID gossip.NodeID
	// Root is the process that starts the broadcast.
	Root gossip.NodeID
	// Epoch tags every message; messages of another epoch are foreign.
	Epoch uint64
	// Rand chooses gossip targets; nil selects a PCG seeded with (Epoch,
	// ID). Only gossip dissemination draws from it.
	Rand rand.Source
	// Clock relates the driver's time to broadcast time.
	Clock ClockMode
}

// Machine is one process's part of one broadcast: pure, driven from
// outside, never reading a clock. Processes are numbered relative to the
// root (rank = (ID - Root) mod N), so any process can be the root of the
// same plan.
//
// The driver models a LogP process: a send port and a receive port that
// work in parallel. Each time the send port is free it calls Poll, which
// appends at most one message; the port is then busy for o. When a receive
// ends (o after the message arrived, or after the previous receive ended)
// it calls Step. When Poll returns nothing, Wake says when to poll again if
// no message arrives first. Not safe for concurrent use.
type Machine struct {
	plan  *Plan
	id    int32
	root  int32
	rank  int32
	epoch uint64
	rng   rand.Source
	clock ClockMode
	off   int64 // broadcast time = driver time + off

	value   []float64
	colored bool
	colorAt int64 // broadcast time
	via     MsgType
	gnode   bool // colored by dissemination before the correction starts
	started bool // root: Start called

	// fan-out of the dissemination: tree children or BMG neighbours
	fan     []int32 // targets by rank offset (BMG) or rank (tree)
	fanNext int
	fanBMG  bool
	gossip  bool // still gossiping

	corr      bool // takes part in the correction
	corrDone  bool
	cs        CorrectionState
	corrSends int

	fp  *failProof
	sos int32 // SOS: next offset to send to; 0 when not in SOS mode
	ack *ackState

	sends    int
	lastFrom int32
}

// NewMachine builds the machine of one process of plan.
func NewMachine(plan *Plan, cfg MachineConfig) (*Machine, error) {
	if plan == nil {
		return nil, fmt.Errorf("broadcast: %w: nil plan", gossip.ErrInvalidConfig)
	}
	n := plan.n
	if int64(cfg.ID) >= int64(n) || int64(cfg.Root) >= int64(n) {
		return nil, fmt.Errorf("broadcast: %w: id %d or root %d out of range [0, %d)", gossip.ErrInvalidConfig, cfg.ID, cfg.Root, n)
	}
	if cfg.Clock != ClockShared && cfg.Clock != ClockFromMessages {
		return nil, fmt.Errorf("broadcast: %w: clock mode %d", gossip.ErrInvalidConfig, cfg.Clock)
	}
	m := &Machine{
		plan:  plan,
		id:    int32(cfg.ID),
		root:  int32(cfg.Root),
		rank:  int32((int64(cfg.ID) - int64(cfg.Root) + int64(n)) % int64(n)),
		epoch: cfg.Epoch,
		rng:   cfg.Rand,
		clock: cfg.Clock,
	}
	if m.rng == nil && plan.spec.Scheme.Kind == SchemeGossip {
		m.rng = rand.NewPCG(cfg.Epoch, uint64(cfg.ID))
	}
	return m, nil
}

// ID returns the process this machine runs.
func (m *Machine) ID() gossip.NodeID { return gossip.NodeID(m.id) }

// Root returns the root of the broadcast.
func (m *Machine) Root() gossip.NodeID { return gossip.NodeID(m.root) }

// Colored reports whether the process holds the broadcast value.
func (m *Machine) Colored() bool { return m.colored }

// ColoredAt returns the broadcast time the process was colored (the end of
// the receive that brought the value; 0 for the root) and the type of that
// message (0 for the root); ok is false while uncolored.
func (m *Machine) ColoredAt() (at int64, via MsgType, ok bool) {
	return m.colorAt, m.via, m.colored
}

// Value appends the broadcast value to dst[:0] and returns it; nil while
// uncolored.
func (m *Machine) Value(dst []float64) []float64 {
	if !m.colored {
		return nil
	}
	return append(dst[:0], m.value...)
}

// GNode reports whether the process was colored by dissemination in time
// to take part in the correction (a g-node of corrected gossip).
func (m *Machine) GNode() bool { return m.gnode }

// Sends returns the number of messages sent, and how many of them were
// correction messages.
func (m *Machine) Sends() (all, correction int) { return m.sends, m.corrSends }

// Delivered reports whether the process may hand the value to its user:
// it is colored and, under fail-proof correction, a c-node has learned of
// F+1 g-nodes (or gone through SOS), so that either every live process will
// receive the value or none.
func (m *Machine) Delivered() bool {
	if !m.colored {
		return false
	}
	if m.fp != nil && !m.fp.gnode && m.sos == 0 {
		return m.fp.delivered
	}
	return true
}

// Done reports whether the machine will send nothing more, whatever it
// receives (except, for acknowledged trees, an adopting parent's message).
func (m *Machine) Done() bool {
	if !m.colored {
		return false
	}
	return m.fanNext >= len(m.fan) && !m.gossip && (!m.corr || m.corrDone) && m.sos <= 0 &&
		(m.fp == nil || m.sos < 0 || m.fp.done()) && (m.ack == nil || m.ack.done())
}

func (m *Machine) now(t int64) int64 { return t + m.off }

// Start begins the broadcast of value at the root at driver time now.
func (m *Machine) Start(now int64, value []float64) error {
	if m.rank != 0 {
		return fmt.Errorf("broadcast: %w: process %d is not the root %d", gossip.ErrInvalidConfig, m.id, m.root)
	}
	if m.started {
		return fmt.Errorf("broadcast: %w: broadcast already started", gossip.ErrInvalidConfig)
	}
	if len(value) == 0 {
		return fmt.Errorf("broadcast: %w: empty value", gossip.ErrLength)
	}
	if err := gossip.CheckFinite(value); err != nil {
		return fmt.Errorf("broadcast: root value: %w", err)
	}
	m.started = true
	if m.clock == ClockFromMessages {
		m.off = -now
	}
	m.color(0, value, 0)
	m.beginDissemination(0)
	return nil
}

func (m *Machine) color(at int64, value []float64, via MsgType) {
	m.colored = true
	m.colorAt = at
	m.via = via
	m.value = append([]float64(nil), value...)
}

// beginDissemination sets up what a process colored by dissemination at
// broadcast time at sends: tree children, BMG neighbours, gossip.
func (m *Machine) beginDissemination(at int64) {
	p := m.plan
	switch p.spec.Scheme.Kind {
	case SchemeTree, SchemeAck:
		m.fan = p.tree.kids(m.rank)
		m.gnode = true
		if p.spec.Scheme.Kind == SchemeAck {
			m.ack = newAckState()
			if m.rank != 0 {
				m.ack.parent = m.lastFrom
			}
		}
	case SchemeBMG:
		m.fan, m.fanBMG = p.bmg, true
		m.gnode = true
	case SchemeGossip:
		m.gnode = at <= p.start
		m.gossip = at+p.o <= p.gT
	}
	if m.gnode {
		m.joinCorrection()
	}
}

func (m *Machine) joinCorrection() {
	switch m.plan.spec.Correction.Kind {
	case CorrectionNone:
	case CorrectionFailProof:
		m.fp = newFailProof(m.plan.f)
		m.fp.gnode = true
	default:
		m.corr = true
	}
}

// target turns a rank offset in a direction into a process id.
func (m *Machine) target(rankOffset int64) int32 {
	n := int64(m.plan.n)
	return int32(((int64(m.id)+rankOffset)%n + n) % n)
}

func (m *Machine) fromRank(rank int32) int32 {
	return int32((int64(rank) + int64(m.root)) % int64(m.plan.n))
}

// message builds an outgoing message; the payload shares the machine's
// value, which never changes once set.
func (m *Machine) message(to int32, t MsgType, sent int64) gossip.Message {
	m.sends++
	if t.Correction() {
		m.corrSends++
	}
	return gossip.Message{
		From:    gossip.NodeID(m.id),
		To:      gossip.NodeID(to),
		Kind:    gossip.KindBroadcast,
		Epoch:   m.epoch,
		Tag:     EncodeTag(t, 0, gossip.NodeID(m.root), sent),
		Payload: m.value,
	}
}

// Poll is called when the send port is free at driver time now. It appends
// the message to send now, if any, and returns out.
func (m *Machine) Poll(now int64, out []gossip.Message) []gossip.Message {
	if !m.colored {
		return out
	}
	t := m.now(now)
	p := m.plan
	if m.fp != nil && !m.fp.gnode && !m.fp.delivered && m.sos == 0 && t >= m.colorAt+p.sos {
		m.sos = 1 // a c-node that never learned of F+1 g-nodes
	}
	if m.sos > 0 {
		if m.sos >= p.n {
			m.sos = -1
			return out
		}
		to := m.target(int64(m.sos))
		m.sos++
		return append(out, m.message(to, MsgSOS, t))
	}
	if m.ack != nil {
		if msg, ok := m.pollAck(t); ok {
			return append(out, msg)
		}
	}
	if m.fanNext < len(m.fan) {
		next := m.fan[m.fanNext]
		m.fanNext++
		if m.fanBMG {
			return append(out, m.message(m.target(int64(next)), MsgBMG, t))
		}
		if m.ack != nil {
			m.ack.sent(next, t+p.ack)
		}
		return append(out, m.message(m.fromRank(next), MsgTree, t))
	}
	if m.gossip {
		if t+p.o <= p.gT {
			return append(out, m.message(pick.Other(m.rng, p.n, m.id), MsgGossip, t))
		}
		m.gossip = false
	}
	if p.sync && t < p.start {
		return out
	}
	if m.corr && !m.corrDone {
		if msg, ok := m.pollCorrection(t); ok {
			return append(out, msg)
		}
	}
	if m.fp != nil && m.fp.gnode && m.sos == 0 {
		return m.pollFailProof(t, out)
	}
	return out
}

// pollCorrection sends the next opportunistic or checked correction
// message, if any.
func (m *Machine) pollCorrection(t int64) (gossip.Message, bool) {
	left, off, ok := m.cs.Next(m.plan)
	if !ok {
		m.corrDone = true
		return gossip.Message{}, false
	}
	if left {
		return m.message(m.target(-int64(off)), MsgCorrLeft, t), true
	}
	return m.message(m.target(int64(off)), MsgCorrRight, t), true
}

// Wake returns the earliest driver time at which Poll may have something to
// send if no message arrives before, or Never. A result at or before the
// time of the last call means "now".
func (m *Machine) Wake() int64 {
	if !m.colored {
		return Never
	}
	p := m.plan
	local := func(t int64) int64 { return t - m.off }
	if m.sos > 0 || m.fanNext < len(m.fan) || m.gossip {
		return math.MinInt64
	}
	w := int64(Never)
	if m.ack != nil {
		w = min(w, m.ack.wake(local))
	}
	corrPending := (m.corr && !m.corrDone) || (m.fp != nil && m.fp.gnode && !m.fp.done() && m.sos == 0)
	if corrPending {
		if p.sync {
			return min(w, local(p.start))
		}
		return math.MinInt64
	}
	if m.fp != nil && !m.fp.gnode && !m.fp.delivered && m.sos == 0 {
		w = min(w, local(m.colorAt+p.sos))
	}
	return w
}

// Step delivers a message whose receive ended at driver time now. A
// message that does not belong to this broadcast (another kind, epoch,
// root or recipient, a bad sender or type, a payload of the wrong length)
// leaves the machine untouched and returns an error wrapping
// gossip.ErrForeignMessage or gossip.ErrLength.
func (m *Machine) Step(now int64, msg gossip.Message) error {
	p := m.plan
	typ, nids, root, sent := DecodeTag(msg.Tag)
	switch {
	case msg.Kind != gossip.KindBroadcast:
		return fmt.Errorf("broadcast: %w: kind %s", gossip.ErrForeignMessage, msg.Kind)
	case msg.Epoch != m.epoch:
		return fmt.Errorf("broadcast: %w: epoch %d, machine runs %d", gossip.ErrForeignMessage, msg.Epoch, m.epoch)
	case int32(msg.To) != m.id:
		return fmt.Errorf("broadcast: %w: message for %d delivered to %d", gossip.ErrForeignMessage, msg.To, m.id)
	case int32(root) != m.root:
		return fmt.Errorf("broadcast: %w: root %d, machine's root is %d", gossip.ErrForeignMessage, root, m.root)
	case int64(msg.From) >= int64(p.n) || int32(msg.From) == m.id:
		return fmt.Errorf("broadcast: %w: sender %d", gossip.ErrForeignMessage, msg.From)
	case typ == 0 || typ >= msgTypeLimit || !m.accepts(typ):
		return fmt.Errorf("broadcast: %w: message type %s in scheme %s/%s", gossip.ErrForeignMessage, typ, p.spec.Scheme, p.spec.Correction)
	}
	data := len(msg.Payload) - nids
	if typ == MsgAck && len(msg.Payload) != 0 {
		return fmt.Errorf("broadcast: %w: acknowledgment with a payload of %d", gossip.ErrLength, len(msg.Payload))
	}
	if typ != MsgAck && (data < 1 || (m.colored && data != len(m.value))) {
		return fmt.Errorf("broadcast: %w: payload of %d values with %d ids", gossip.ErrLength, len(msg.Payload), nids)
	}
	if typ != MsgAck {
		if err := gossip.CheckFinite(msg.Payload[:data]); err != nil {
			return fmt.Errorf("broadcast: payload from %d: %w", msg.From, err)
		}
	}
	var ids []float64
	if nids > 0 {
		if typ != MsgFailLeft && typ != MsgFailRight {
			return fmt.Errorf("broadcast: %w: %s message with %d ids", gossip.ErrForeignMessage, typ, nids)
		}
		ids = msg.Payload[data:]
		for _, x := range ids {
			if x < 0 || x >= float64(p.n) || x != math.Trunc(x) {
				return fmt.Errorf("broadcast: %w: process id %v in a fail-proof list", gossip.ErrForeignMessage, x)
			}
		}
	}
	if m.rank == 0 && !m.started {
		return fmt.Errorf("broadcast: %w: the root %d has not started this broadcast", gossip.ErrForeignMessage, m.id)
	}
	if !m.colored && typ != MsgAck && m.clock == ClockFromMessages {
		// Every message is stamped with the sender's broadcast time at
		// the start of the send; it ends its receive 2o+L later unless it
		// queued, so this is a lower bound on the broadcast time now.
		m.off = sent + p.hop - now
	}
	t := m.now(now)
	from := int32(msg.From)
	m.lastFrom = from
	fresh := !m.colored && typ != MsgAck
	if fresh {
		m.color(t, msg.Payload[:data], typ)
	}
	switch typ {
	case MsgTree:
		if fresh {
			m.beginDissemination(t)
		} else if m.ack != nil {
			m.ack.adopted(from)
		}
	case MsgGossip, MsgBMG:
		if fresh {
			m.beginDissemination(t)
		}
	case MsgCorrLeft, MsgCorrRight:
		m.onCorrection(typ, from, fresh)
	case MsgFailLeft, MsgFailRight:
		m.onFailProof(typ, ids, fresh)
	case MsgSOS:
		if m.sos == 0 {
			m.sos = 1
		}
	case MsgAck:
		if m.ack != nil {
			m.ack.ackedBy(m, from)
		}
	}
	return nil
}

// accepts reports whether the scheme uses messages of type t.
func (m *Machine) accepts(t MsgType) bool {
	p := m.plan
	switch t {
	case MsgTree:
		return p.tree != nil
	case MsgAck:
		return p.spec.Scheme.Kind == SchemeAck
	case MsgGossip:
		return p.spec.Scheme.Kind == SchemeGossip
	case MsgBMG:
		return p.spec.Scheme.Kind == SchemeBMG
	case MsgCorrLeft, MsgCorrRight:
		switch p.spec.Correction.Kind {
		case CorrectionOpportunistic, CorrectionOptimized, CorrectionChecked:
			return p.spec.Scheme.Kind == SchemeTree || p.spec.Scheme.Kind == SchemeGossip
		}
	case MsgFailLeft, MsgFailRight, MsgSOS:
		return p.spec.Correction.Kind == CorrectionFailProof
	}
	return false
}

// ringDist returns the distance from m to process from going left (from
// lies to the left, at lower numbers) or right.
func (m *Machine) ringDist(from int32, left bool) int32 {
	n := int64(m.plan.n)
	d := int64(from) - int64(m.id)
	if left {
		d = -d
	}
	return int32((d%n + n) % n)
}

// onCorrection handles an opportunistic or checked correction message.
// A leftward message comes from the right and bounds the right side.
func (m *Machine) onCorrection(typ MsgType, from int32, fresh bool) {
	p := m.plan
	fromRight := typ == MsgCorrLeft
	dist := m.ringDist(from, !fromRight)
	if fresh {
		// Colored by correction: a c-node. After a tree, overlapped
		// opportunistic correction still sends the tree messages and
		// corrects (the early correction of 3.3); overlapped checked
		// correction and every synchronized correction leave c-nodes
		// silent, so no process joins the correction late.
		k := p.spec.Correction.Kind
		if p.tree != nil && !p.sync && (k == CorrectionOpportunistic || k == CorrectionOptimized) {
			m.fan = p.tree.kids(m.rank)
			m.corr = true
		}
	}
	m.cs.Heard(p, fromRight, int(dist))
}
