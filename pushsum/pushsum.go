// Package pushsum implements the Push-Sum algorithm (Kempe, Dobra and
// Gehrke 2003; thesis Algorithm 2) and its asynchronous reformulation
// (thesis Algorithm 8), as pure gossip machines.
//
// Each node keeps a value-weight pair (x_i, w_i). To gossip, it halves the
// pair and sends one half to a neighbour chosen uniformly at random; received
// pairs are added. Mass conservation makes every estimate y_i = x_i/w_i
// converge to Σx/Σw. Push-Sum tolerates reported failures (an excluded peer is
// simply never chosen again) but not silent ones: a lost message or a
// flipped bit changes the total mass for good, and the estimates then
// converge to a wrong value (thesis 2.2.1 and 4.3).
//
// [New] builds Algorithm 8: every received message is answered by one send,
// so a node sends exactly as often as it hears from others, and a Tick sends
// once (drivers tick at the start, and after a message was lost, to keep the
// exchange going). [NewIterative] builds Algorithm 2: a Tick is one iteration
// (send half) and Step only absorbs; drivers tick it periodically.
package pushsum

import (
	"fmt"
	"iter"
	"math/rand/v2"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// Machine is one Push-Sum node. Build it with New or NewIterative.
type Machine struct {
	id       gossip.NodeID
	overlay  gossip.Neighborhood
	epoch    uint64
	rng      *rand.Rand
	answer   bool      // Algorithm 8: Step answers with one send
	x        []float64 // value components
	w        float64   // weight
	excluded map[gossip.NodeID]bool
	live     int // neighbours not excluded
}

// New returns the asynchronous Push-Sum of thesis Algorithm 8: Step absorbs
// the received pair and sends half of the result to a random neighbour;
// Tick sends half without receiving.
func New(cfg gossip.Config) (*Machine, error) { return build(cfg, true) }

// NewIterative returns Push-Sum as in thesis Algorithm 2: each Tick is one
// iteration (halve, send half to a random neighbour) and Step only adds the
// received pair.
func NewIterative(cfg gossip.Config) (*Machine, error) { return build(cfg, false) }

func build(cfg gossip.Config, answer bool) (*Machine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Machine{
		id:      cfg.ID,
		overlay: cfg.Overlay,
		epoch:   cfg.Epoch,
		rng:     rand.New(cfg.Source()),
		answer:  answer,
		x:       append([]float64(nil), cfg.Value...),
		w:       cfg.Weight(),
		live:    cfg.Overlay.Degree(cfg.ID),
	}, nil
}

// ID returns the node this machine runs.
func (m *Machine) ID() gossip.NodeID { return m.id }

// Tick halves the pair and sends one half to a random live neighbour. A node
// without live neighbours sends nothing and keeps its mass.
func (m *Machine) Tick(out []gossip.Message) []gossip.Message {
	return m.push(out)
}

// Step adds a received pair. The asynchronous machine (New) then sends half
// of its pair on, the iterative one (NewIterative) waits for its next Tick.
// Messages of another epoch, kind or recipient, from a node that is not a
// live neighbour, or with a payload of the wrong length are rejected with an
// error and change nothing.
func (m *Machine) Step(msg gossip.Message, out []gossip.Message) ([]gossip.Message, error) {
	if err := m.check(msg); err != nil {
		return out, err
	}
	k := len(m.x)
	for c, v := range msg.Payload[:k] {
		m.x[c] += v
	}
	m.w += msg.Payload[k]
	if m.answer {
		out = m.push(out)
	}
	return out, nil
}

func (m *Machine) check(msg gossip.Message) error {
	if err := gossip.CheckHeader(msg, gossip.KindPush, m.epoch, m.id); err != nil {
		return fmt.Errorf("pushsum: %w", err)
	}
	switch {
	case len(msg.Payload) != len(m.x)+1:
		return fmt.Errorf("pushsum: %w: payload has %d words, want %d", gossip.ErrLength, len(msg.Payload), len(m.x)+1)
	}
	// Push-Sum accepts mass from anyone in the group, excluded peers
	// included (their mass is real, and refusing it would lose it): on a
	// directed overlay the sender is an in-neighbour, which the out-neighbour
	// list does not show, and checking membership would cost O(degree).
	if int64(msg.From) >= int64(m.overlay.Len()) {
		return fmt.Errorf("pushsum: %w: %d is not in a group of %d", gossip.ErrUnknownPeer, msg.From, m.overlay.Len())
	}
	return nil
}

// push halves the pair and appends a message carrying the other half.
func (m *Machine) push(out []gossip.Message) []gossip.Message {
	to, ok := m.pick()
	if !ok {
		return out
	}
	k := len(m.x)
	p := make([]float64, k+1)
	for c := range m.x {
		m.x[c] /= 2
		p[c] = m.x[c]
	}
	m.w /= 2
	p[k] = m.w
	return append(out, gossip.Message{From: m.id, To: to, Kind: gossip.KindPush, Epoch: m.epoch, Payload: p})
}

// pick chooses a live neighbour uniformly at random. Excluded neighbours are
// rejected and drawn again, which keeps the choice uniform over the live
// ones without storing a neighbour list.
func (m *Machine) pick() (gossip.NodeID, bool) {
	if m.live == 0 {
		return 0, false
	}
	deg := m.overlay.Degree(m.id)
	for {
		to := m.overlay.Neighbor(m.id, m.rng.IntN(deg))
		if !m.excluded[to] {
			return to, true
		}
	}
}

// Estimate appends y_i = x_i / w_i to dst[:0].
func (m *Machine) Estimate(dst []float64) []float64 {
	dst = dst[:0]
	for _, v := range m.x {
		dst = append(dst, v/m.w)
	}
	return dst
}

// Exclude stops sending to peer. Push-Sum cannot recover the mass already
// sent to a peer that died: the estimates of the survivors then converge to
// a value that is off by that mass.
func (m *Machine) Exclude(peer gossip.NodeID) {
	if m.excluded[peer] || !m.isNeighbor(peer) {
		return
	}
	if m.excluded == nil {
		m.excluded = make(map[gossip.NodeID]bool)
	}
	m.excluded[peer] = true
	m.live--
}

func (m *Machine) isNeighbor(peer gossip.NodeID) bool {
	for k := range m.overlay.Degree(m.id) {
		if m.overlay.Neighbor(m.id, k) == peer {
			return true
		}
	}
	return false
}

// Words yields value[c] for every component and weight.
func (m *Machine) Words() iter.Seq[gossip.Word] {
	return func(yield func(gossip.Word) bool) {
		for c := range m.x {
			if !yield(gossip.Word{Place: gossip.PlaceState, Part: gossip.PartValue, Component: c, Ptr: &m.x[c]}) {
				return
			}
		}
		yield(gossip.Word{Place: gossip.PlaceState, Part: gossip.PartWeight, Ptr: &m.w})
	}
}

// Mass returns the node's current (x_i, w_i), for conservation checks.
func (m *Machine) Mass() (x []float64, w float64) {
	return append([]float64(nil), m.x...), m.w
}
