package sdc

import (
	"fmt"
	"strings"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// Single flips bit Bit of one word once: when the first node has sent After
// messages (InjectPoint.MaxSent ≥ After), a node is drawn uniformly from the
// Nodes nodes of the group (with Nodes = 0, the node whose step pulled the
// trigger), and at that node's next step a word chosen uniformly among those
// Target selects is flipped; for Target Message, a word of the next message
// it sends. After = 0 flips before the first message (the initial data).
type Single struct {
	Bit    int
	Target Target
	After  int
	Nodes  int

	armed  bool
	node   gossip.NodeID
	done   bool
	missed bool
	flips  []Flip
	buf    []gossip.Word
}

// NewSingle returns a single-flip injector, or an error for a bit outside 0
// … 63 or negative counts.
func NewSingle(bit int, t Target, after, nodes int) (*Single, error) {
	if bit < 0 || bit > 63 || after < 0 || nodes < 0 || int(t) >= len(targetNames) {
		return nil, fmt.Errorf("sdc: %w: single flip of bit %d, target %s, after %d, nodes %d", gossip.ErrInvalidConfig, bit, t, after, nodes)
	}
	return &Single{Bit: bit, Target: t, After: after, Nodes: nodes}, nil
}

// String describes the injector, e.g. "single(bit=55 target=value after=150 nodes=32)".
func (s *Single) String() string {
	return fmt.Sprintf("single(bit=%d target=%s after=%d nodes=%d)", s.Bit, s.Target, s.After, s.Nodes)
}

// Fresh returns an unfired copy.
func (s *Single) Fresh() Injector {
	return &Single{Bit: s.Bit, Target: s.Target, After: s.After, Nodes: s.Nodes}
}

// Flips returns the flip, once it happened.
func (s *Single) Flips() []Flip { return s.flips }

// Count returns the number of flips: 0 or 1.
func (s *Single) Count() int { return len(s.flips) }

// Missed reports whether the chosen node had no word the target selects.
func (s *Single) Missed() bool { return s.missed }

func (s *Single) trigger(p gossip.InjectPoint) bool {
	if s.done {
		return false
	}
	if !s.armed {
		if p.MaxSent < s.After {
			return false
		}
		s.armed = true
		s.node = p.Node
		if s.Nodes > 0 {
			s.node = gossip.NodeID(p.Rand.IntN(s.Nodes))
		}
	}
	return p.Node == s.node
}

// InjectState flips a machine word at the chosen node's next step.
func (s *Single) InjectState(p gossip.InjectPoint, m gossip.Machine) {
	if s.Target == Message || !s.trigger(p) {
		return
	}
	s.done = true
	s.buf = Select(m, s.Target, s.buf)
	if len(s.buf) == 0 {
		s.missed = true
		return
	}
	s.flips = append(s.flips, flipWord(p, s.buf[p.Rand.IntN(len(s.buf))], s.Bit))
}

// InjectMessage flips a payload word of the chosen node's next message.
func (s *Single) InjectMessage(p gossip.InjectPoint, m *gossip.Message) {
	if s.Target != Message || !s.trigger(p) {
		return
	}
	s.done = true
	if len(m.Payload) == 0 {
		s.missed = true
		return
	}
	s.flips = append(s.flips, flipPayload(p, m, p.Rand.IntN(len(m.Payload)), s.Bit))
}

// Rate flips, for every message a node sends, each word Target selects at
// that node independently with probability P, at a bit drawn uniformly from
// Lo … Hi (the thesis's multi-flip study: P = 1e-4, all bits). For Target
// Message the words are the message's payload.
type Rate struct {
	P      float64
	Target Target
	Lo, Hi int

	seen  []int // per node: messages sent at the last InjectState
	flips []Flip
	count int
	buf   []gossip.Word
}

// MaxRecorded is how many flips a Rate injector records (Flips); it counts
// all of them (Count). A rate meant for scalars applied to a vector of
// 100,000 components flips about 150 words a step at every member, and a
// record of each (its word's name included) filled 24 GB within minutes.
const MaxRecorded = 1 << 16

// NewRate returns a rate injector, or an error for a probability outside
// [0, 1] or a bad bit range.
func NewRate(p float64, t Target, lo, hi int) (*Rate, error) {
	if !(p >= 0 && p <= 1) || lo < 0 || hi > 63 || lo > hi || int(t) >= len(targetNames) {
		return nil, fmt.Errorf("sdc: %w: rate %v, target %s, bits %d-%d", gossip.ErrInvalidConfig, p, t, lo, hi)
	}
	return &Rate{P: p, Target: t, Lo: lo, Hi: hi}, nil
}

// String describes the injector, e.g. "rate(p=0.0001 target=flow bits=0-63)".
func (r *Rate) String() string {
	return fmt.Sprintf("rate(p=%g target=%s bits=%d-%d)", r.P, r.Target, r.Lo, r.Hi)
}

// Fresh returns a copy that has flipped nothing.
func (r *Rate) Fresh() Injector { return &Rate{P: r.P, Target: r.Target, Lo: r.Lo, Hi: r.Hi} }

// Flips returns the flips so far, the first MaxRecorded of them.
func (r *Rate) Flips() []Flip { return r.flips }

// Count returns the number of flips so far, recorded or not.
func (r *Rate) Count() int { return r.count }

// record counts a flip and keeps it while fewer than MaxRecorded are kept.
func (r *Rate) record(f Flip) {
	r.count++
	if len(r.flips) < MaxRecorded {
		r.flips = append(r.flips, f)
	}
}

func (r *Rate) bit(p gossip.InjectPoint) int { return r.Lo + p.Rand.IntN(r.Hi-r.Lo+1) }

// InjectState flips state words for the messages the node sent in its last
// step.
func (r *Rate) InjectState(p gossip.InjectPoint, m gossip.Machine) {
	if r.Target == Message || r.P == 0 {
		return
	}
	for int(p.Node) >= len(r.seen) {
		r.seen = append(r.seen, 0)
	}
	msgs := p.Sent - r.seen[p.Node]
	r.seen[p.Node] = p.Sent
	if msgs <= 0 {
		return
	}
	r.buf = Select(m, r.Target, r.buf)
	for range msgs {
		for _, w := range r.buf {
			if p.Rand.Float64() < r.P {
				r.record(flipWord(p, w, r.bit(p)))
			}
		}
	}
}

// InjectMessage flips payload words of the message.
func (r *Rate) InjectMessage(p gossip.InjectPoint, m *gossip.Message) {
	if r.Target != Message || r.P == 0 {
		return
	}
	for i := range m.Payload {
		if p.Rand.Float64() < r.P {
			r.record(flipPayload(p, m, i, r.bit(p)))
		}
	}
}

// Chain applies several injectors in order.
type Chain []Injector

// String lists the injectors: "chain(single(…); rate(…))".
func (c Chain) String() string {
	parts := make([]string, len(c))
	for i, in := range c {
		parts[i] = in.String()
	}
	return "chain(" + strings.Join(parts, "; ") + ")"
}

// Fresh returns fresh copies of every injector.
func (c Chain) Fresh() Injector {
	out := make(Chain, len(c))
	for i, in := range c {
		out[i] = in.Fresh()
	}
	return out
}

// Flips returns the flips of all injectors, injector by injector.
func (c Chain) Flips() []Flip {
	var out []Flip
	for _, in := range c {
		out = append(out, in.Flips()...)
	}
	return out
}

// Count returns the number of flips of all injectors.
func (c Chain) Count() int {
	n := 0
	for _, in := range c {
		n += in.Count()
	}
	return n
}

// InjectState calls every injector.
func (c Chain) InjectState(p gossip.InjectPoint, m gossip.Machine) {
	for _, in := range c {
		in.InjectState(p, m)
	}
}

// InjectMessage calls every injector.
func (c Chain) InjectMessage(p gossip.InjectPoint, m *gossip.Message) {
	for _, in := range c {
		in.InjectMessage(p, m)
	}
}
