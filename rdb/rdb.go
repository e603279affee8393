// Package rdb implements recursive doubling (thesis Algorithm 1), the
// deterministic all-reduce baseline, for any number of nodes, as a pure
// machine that the simulator and the live runtime drive like the gossip
// algorithms.
//
// For N = 2^d, in step k = 0 … d-1 node i exchanges its partial result with
// node i XOR 2^k and both add the two partials; after d steps every node holds
// the aggregate. Since IEEE addition is commutative (a+b and b+a are the same
// bits) and both partners add the same two partials, all nodes end with the
// bitwise same result.
//
// For other N the extra ranks are folded first, as MPICH does: with p the
// largest power of two ≤ N and r = N - p, each even rank below 2r sends its
// input to the odd rank above it and waits; the p remaining ranks run
// recursive doubling; finally every odd rank below 2r sends the result back
// to its even partner. That is ⌊log2 N⌋ exchange steps plus two fold
// messages on the critical path.
//
// Recursive doubling is not fault tolerant: a lost message stalls it, a dead
// node stalls its partners, and a corrupted partial spreads to every node
// (thesis figure 2.1). It exists here as the yardstick.
package rdb

import (
	"fmt"
	"iter"
	"math/bits"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// Machine is one node of recursive doubling.
type Machine struct {
	id      gossip.NodeID
	n       int
	epoch   uint64
	plan    []Step // what this node does, in order
	next    int    // index into plan of the step under way
	started bool
	y       []float64 // partial sum of values, then the weight
	pending map[uint64][]float64
	final   bool
}

// A Step is one step of a node's schedule: send the partial to a peer,
// receive one from a peer, or both (an exchange). Tags number the steps
// globally, below 1<<21, so a message names the step it belongs to.
type Step struct {
	Tag      uint64
	SendTo   int  // -1: no send
	RecvFrom int  // -1: no receive
	Replace  bool // the received partial replaces this node's (the fold-out)
}

// The tags of the fold steps; hypercube step k has tag k+1.
const (
	TagFoldIn  = 0       // a folded rank hands its partial to its odd neighbour
	TagFoldOut = 1 << 20 // the odd neighbour hands the result back, after every exchange step
)

// New builds the recursive-doubling machine of node cfg.ID among
// cfg.Overlay.Len() nodes. The overlay's edges are not used: recursive
// doubling talks to the partners its schedule names, so only the node count
// matters.
func New(cfg gossip.Config) (*Machine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := cfg.Overlay.Len()
	y := append(append([]float64(nil), cfg.Value...), cfg.Weight())
	return &Machine{
		id:      cfg.ID,
		n:       n,
		epoch:   cfg.Epoch,
		plan:    Schedule(int(cfg.ID), n),
		y:       y,
		pending: make(map[uint64][]float64),
	}, nil
}

// Rank returns node id's rank among the 2^⌊log2 n⌋ nodes left in the
// hypercube once the extra ranks have folded in, or -1 for a node that
// folds into its odd neighbour: the first 2(n − 2^⌊log2 n⌋) nodes pair up,
// the even one of each pair folding into the odd one.
func Rank(id, n int) int {
	r := n - 1<<(bits.Len(uint(n))-1)
	switch {
	case id >= 2*r:
		return id - r
	case id%2 == 0:
		return -1
	}
	return id / 2
}

// Node is Rank's inverse: the node holding hypercube rank rank among n.
func Node(rank, n int) int {
	r := n - 1<<(bits.Len(uint(n))-1)
	if rank < r {
		return 2*rank + 1
	}
	return rank + r
}

// Schedule returns node id's steps among n nodes, in order: the schedule
// described in the package documentation. Package exchange runs the same
// schedule with repairs.
func Schedule(id, n int) []Step {
	rank := Rank(id, n)
	if rank < 0 {
		return []Step{
			{Tag: TagFoldIn, SendTo: id + 1, RecvFrom: -1},
			{Tag: TagFoldOut, SendTo: -1, RecvFrom: id + 1, Replace: true},
		}
	}
	folded := id < 2*(n-1<<(bits.Len(uint(n))-1))
	var plan []Step
	if folded {
		plan = append(plan, Step{Tag: TagFoldIn, SendTo: -1, RecvFrom: id - 1})
	}
	// Exchange among the remaining ranks.
	for k := range bits.Len(uint(n)) - 1 {
		peer := Node(rank^1<<k, n)
		plan = append(plan, Step{Tag: uint64(k + 1), SendTo: peer, RecvFrom: peer})
	}
	if folded {
		plan = append(plan, Step{Tag: TagFoldOut, SendTo: id - 1, RecvFrom: -1})
	}
	return plan
}

// ID returns the node this machine runs.
func (m *Machine) ID() gossip.NodeID { return m.id }

// Tick starts the reduction; later ticks do nothing.
func (m *Machine) Tick(out []gossip.Message) []gossip.Message {
	if m.started {
		return out
	}
	m.started = true
	return m.advance(out)
}

// Step takes a partner's partial. Messages may arrive before the step they
// belong to; they wait. A message that is not part of this node's schedule
// (wrong partner, unknown step, duplicate) is rejected.
func (m *Machine) Step(msg gossip.Message, out []gossip.Message) ([]gossip.Message, error) {
	if err := gossip.CheckHeader(msg, gossip.KindRDB, m.epoch, m.id); err != nil {
		return out, fmt.Errorf("rdb: %w", err)
	}
	switch {
	case len(msg.Payload) != len(m.y):
		return out, fmt.Errorf("rdb: %w: payload has %d words, want %d", gossip.ErrLength, len(msg.Payload), len(m.y))
	}
	idx := -1
	for i, s := range m.plan {
		if s.Tag == msg.Tag && s.RecvFrom == int(msg.From) {
			idx = i
			break
		}
	}
	if idx < 0 {
		return out, fmt.Errorf("rdb: %w: step %d from %d is not in node %d's schedule", gossip.ErrForeignMessage, msg.Tag, msg.From, m.id)
	}
	if _, dup := m.pending[msg.Tag]; dup || idx < m.next {
		return out, fmt.Errorf("rdb: %w: duplicate step %d from %d", gossip.ErrForeignMessage, msg.Tag, msg.From)
	}
	m.pending[msg.Tag] = append([]float64(nil), msg.Payload...)
	if !m.started {
		m.started = true
	}
	return m.advance(out), nil
}

// advance runs the schedule as far as the received partials allow. The
// send of a step goes out before its receive is awaited, which is what makes
// an exchange.
func (m *Machine) advance(out []gossip.Message) []gossip.Message {
	for m.next < len(m.plan) {
		s := &m.plan[m.next]
		if s.SendTo >= 0 {
			out = append(out, gossip.Message{
				From: m.id, To: gossip.NodeID(s.SendTo), Kind: gossip.KindRDB,
				Epoch: m.epoch, Tag: s.Tag, Payload: append([]float64(nil), m.y...),
			})
			s.SendTo = -1 // sent; never again
		}
		if s.RecvFrom >= 0 {
			got, ok := m.pending[s.Tag]
			if !ok {
				return out
			}
			delete(m.pending, s.Tag)
			for c := range m.y {
				if s.Replace {
					m.y[c] = got[c]
				} else {
					m.y[c] += got[c]
				}
			}
		}
		m.next++
	}
	m.final = true
	return out
}

// Done reports whether the node holds the final result.
func (m *Machine) Done() bool { return m.final }

// Estimate appends the node's current partial aggregate Σx/Σw to dst[:0]; it
// is the final result once Done reports true.
func (m *Machine) Estimate(dst []float64) []float64 {
	return gossip.AppendRatios(dst, m.y)
}

// Exclude does nothing: recursive doubling has no way around a dead partner.
func (m *Machine) Exclude(gossip.NodeID) {}

// Words yields the partial sums: value[c] and weight.
func (m *Machine) Words() iter.Seq[gossip.Word] { return gossip.SumWords(m.y) }
