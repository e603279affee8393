// Package sdc injects silent data corruption, bit flips in IEEE 754 binary64
// words, into gossip machines and their messages, for the experiments of
// thesis chapter 4.
//
// Bits are numbered from the least significant: 0 … 51 are the mantissa, 52
// … 62 the exponent and 63 the sign. A machine names the float64 words of its
// state through gossip.Machine.Words; a [Target] says which of them an
// experiment corrupts: the value, weight or checksum component of a flow (or
// of the running state, for Push-Sum and recursive doubling, which have no
// flows), any flow word, the initial data, or the payload of a message in
// flight.
//
// The injectors implement gossip.Injector, so the simulator and the live
// runtime drive them alike. [Single] flips one bit once, when the first node
// has sent a given number of messages, at a random node and word (the
// thesis's single-flip study used 150 messages); [Rate] flips every selected
// word with a given probability per message sent (the thesis used 1e-4);
// [Chain] composes injectors. All randomness comes from the driver's
// InjectPoint.Rand, so a run is replayed by its seed. Injectors keep per-run
// state (a single flip fires once): give every run its own, with Fresh.
package sdc

import (
	"fmt"
	"math"
	"strings"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// FlipBit returns x with bit b (0 … 63) of its IEEE 754 binary64
// representation inverted. Bits outside that range leave x unchanged.
func FlipBit(x float64, b int) float64 {
	if b < 0 || b > 63 {
		return x
	}
	return math.Float64frombits(math.Float64bits(x) ^ 1<<uint(b))
}

// Target selects the words a flip may hit.
type Target uint8

// Targets.
const (
	// Value is a value component of a flow, or of the running state of a
	// machine without flows (Push-Sum, recursive doubling).
	Value Target = iota
	// Weight is the weight of a flow, or of the running state.
	Weight
	// Checksum is the checksum of a flow (PFLC, PFCC).
	Checksum
	// Flow is any word of any flow.
	Flow
	// Message is any payload word of a message in flight.
	Message
	// Input is the initial data: the input (x, w, c) of the flow
	// algorithms, or the running state of a machine without one (for
	// Push-Sum and recursive doubling this is the initial data only before
	// the first message; inject then).
	Input
)

var targetNames = [...]string{"value", "weight", "checksum", "flow", "message", "input"}

// String returns the target's command-line name.
func (t Target) String() string {
	if int(t) < len(targetNames) {
		return targetNames[t]
	}
	return fmt.Sprintf("target(%d)", uint8(t))
}

// ParseTarget reads a target name: value, weight, checksum, flow, message or
// input.
func ParseTarget(s string) (Target, error) {
	for i, n := range targetNames {
		if s == n {
			return Target(i), nil
		}
	}
	return 0, fmt.Errorf("sdc: %w: target %q (want %s)", gossip.ErrInvalidConfig, s, strings.Join(targetNames[:], ", "))
}

// Select appends to dst[:0] the words of m that t selects and returns them.
// Message selects no machine word.
func Select(m gossip.Machine, t Target, dst []gossip.Word) []gossip.Word {
	dst = dst[:0]
	var fallback []gossip.Word
	primary := gossip.PlaceFlow
	if t == Input {
		primary = gossip.PlaceInput
	}
	for w := range m.Words() {
		switch t {
		case Message:
			return dst
		case Flow:
			if w.Place == gossip.PlaceFlow {
				dst = append(dst, w)
			}
			continue
		case Value, Weight, Checksum:
			if w.Part != part(t) {
				continue
			}
		}
		switch w.Place {
		case primary:
			dst = append(dst, w)
		case gossip.PlaceState:
			fallback = append(fallback, w)
		}
	}
	if len(dst) == 0 && !hasPlace(m, primary) {
		dst = append(dst, fallback...)
	}
	return dst
}

func part(t Target) gossip.Part {
	switch t {
	case Weight:
		return gossip.PartWeight
	case Checksum:
		return gossip.PartChecksum
	}
	return gossip.PartValue
}

func hasPlace(m gossip.Machine, p gossip.Place) bool {
	for w := range m.Words() {
		if w.Place == p {
			return true
		}
	}
	return false
}

// Flip records one injected bit flip.
type Flip struct {
	Node gossip.NodeID `json:"node"`
	// Word names what was hit: a machine word ("flow[3].weight") or a
	// payload word ("message->5.weight").
	Word   string  `json:"word"`
	Bit    int     `json:"bit"`
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	Time   float64 `json:"time"`
	Sent   int     `json:"sent"` // messages the node had sent
}

// Injector is a gossip.Injector that reports its flips, prints its
// configuration, and can be replicated for independent runs.
type Injector interface {
	gossip.Injector
	fmt.Stringer
	// Fresh returns an injector with the same configuration in its initial
	// state, for another run.
	Fresh() Injector
	// Flips returns the flips injected so far (a Rate injector records
	// the first MaxRecorded).
	Flips() []Flip
	// Count returns the number of flips injected so far.
	Count() int
}

func flipWord(p gossip.InjectPoint, w gossip.Word, bit int) Flip {
	f := Flip{Node: p.Node, Word: w.Name(), Bit: bit, Before: *w.Ptr, Time: p.Time, Sent: p.Sent}
	*w.Ptr = FlipBit(*w.Ptr, bit)
	f.After = *w.Ptr
	return f
}

func flipPayload(p gossip.InjectPoint, m *gossip.Message, i, bit int) Flip {
	name := fmt.Sprintf("message->%d[%d]", m.To, i)
	if pt, c, ok := gossip.PayloadPart(m.Kind, payloadComponents(m), i); ok {
		name = fmt.Sprintf("message->%d.%s", m.To, pt)
		if pt == gossip.PartValue {
			name += fmt.Sprintf("[%d]", c)
		}
	}
	f := Flip{Node: p.Node, Word: name, Bit: bit, Before: m.Payload[i], Time: p.Time, Sent: p.Sent}
	m.Payload[i] = FlipBit(m.Payload[i], bit)
	f.After = m.Payload[i]
	return f
}

// payloadComponents infers the number of value components from the payload
// length of a kind with a known layout.
func payloadComponents(m *gossip.Message) int {
	switch m.Kind {
	case gossip.KindCheckedFlow:
		return len(m.Payload) - 2
	case gossip.KindExchange:
		return len(m.Payload) - 3
	case gossip.KindCancelFlow:
		return len(m.Payload)/2 - 1
	}
	return len(m.Payload) - 1
}
