// Package rhd implements recursive halving and doubling (Rabenseifner's
// all-reduce): a reduce-scatter by recursive halving, then an all-gather
// by recursive doubling, with the extra ranks of an N that is not a power
// of two folded in and out as package rdb does. It is the chunked form of
// rdb's schedule: each member sends the ring's 2(N−1)/N of the vector, in
// 2 log2 N messages instead of the ring's 2(N−1). Like rdb and ring it is
// a fault-free yardstick: a lost message or a dead member stalls it and a
// flipped bit spreads. Package exchange runs its schedule with repairs
// (exchange.NewChunked); rhd is the yardstick of what those repairs cost.
//
// With p = 2^d the hypercube ranks (rdb.Rank) and W = K+1 words cut into p
// slices (ring.Slice): in reduce-scatter step k = 0 … d−1 a rank splits the
// block of slices it holds in two by bit d−1−k of its rank, sends the half
// its partner (rank XOR 2^(d−1−k)) keeps and adds the partner's copy of
// the half it keeps; after d steps rank r holds the sum of slice r. In
// all-gather step k = 0 … d−1 it sends the block of 2^k slices it holds
// and copies the partner's (rank XOR 2^k) next to it. Only the owner adds
// a slice's terms, and the all-gather copies its bits, so every member
// ends with the same bits.
package rhd

import (
	"fmt"
	"iter"
	"math/bits"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/rdb"
	"github.com/gossipreduce/gossipreduce/ring"
)

// Step is one step of a node's schedule: what it sends to Peer and what
// it receives from it (word ranges [lo, hi); an empty range: nothing).
// Package exchange runs the same schedule with its repairs.
type Step struct {
	// Tag is the global step: 0 the fold-in, 1 … d the reduce-scatter,
	// d+1 … 2d the all-gather, 2d+1 the fold-out (d = ⌊log2 N⌋).
	Tag        int
	Peer       int
	Send, Recv [2]int
	// Replace is true when the received words replace this node's
	// (all-gather, fold-out) instead of being added to them.
	Replace bool
}

// Machine is one node of recursive halving and doubling.
type Machine struct {
	id      gossip.NodeID
	epoch   uint64
	y       []float64 // partial sums x…, w; the result once done
	plan    []Step
	next    int
	sent    bool
	started bool
	pending map[int][]float64 // early partials, by tag
}

// New builds the machine of node cfg.ID among cfg.Overlay.Len() nodes;
// only the node count of the overlay matters.
func New(cfg gossip.Config) (*Machine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	y := append(append([]float64(nil), cfg.Value...), cfg.Weight())
	return &Machine{id: cfg.ID, epoch: cfg.Epoch, y: y, plan: Schedule(int(cfg.ID), cfg.Overlay.Len(), len(y)),
		pending: make(map[int][]float64)}, nil
}

// Tag returns the tag of the message of global step s when the vectors
// have w words: the step in the low 32 bits, w above.
func Tag(s, w int) uint64 { return ring.Tag(s, w) }

// Schedule returns node id's steps among n nodes for vectors of w words.
// With fewer words than hypercube ranks some slices are empty, and so are
// some ranges.
func Schedule(id, n, w int) []Step {
	d := bits.Len(uint(n)) - 1
	p := 1 << d
	all := [2]int{0, w}
	rank := rdb.Rank(id, n)
	if rank < 0 {
		return []Step{{Tag: 0, Peer: id + 1, Send: all}, {Tag: 2*d + 1, Peer: id + 1, Recv: all, Replace: true}}
	}
	words := func(lo, hi int) [2]int {
		a, _ := ring.Slice(lo, w, p)
		_, b := ring.Slice(hi-1, w, p)
		return [2]int{a, b}
	}
	folded := id < 2*(n-p)
	var plan []Step
	if folded {
		plan = append(plan, Step{Tag: 0, Peer: id - 1, Recv: all})
	}
	lo, hi := 0, p
	for k := range d {
		b := d - 1 - k
		mid := (lo + hi) / 2
		s := Step{Tag: 1 + k, Peer: rdb.Node(rank^1<<b, n)}
		if rank>>b&1 == 0 {
			s.Send, s.Recv, hi = words(mid, hi), words(lo, mid), mid
		} else {
			s.Send, s.Recv, lo = words(lo, mid), words(mid, hi), mid
		}
		plan = append(plan, s)
	}
	for k := range d {
		blk := rank >> k << k
		other := blk ^ 1<<k
		plan = append(plan, Step{Tag: 1 + d + k, Peer: rdb.Node(rank^1<<k, n),
			Send: words(blk, blk+1<<k), Recv: words(other, other+1<<k), Replace: true})
	}
	if folded {
		plan = append(plan, Step{Tag: 2*d + 1, Peer: id - 1, Send: all})
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

// Step takes a partner's words. Messages may arrive before their step;
// they wait. A message that is not in this node's schedule is rejected
// with gossip.ErrForeignMessage, one of another vector length with
// gossip.ErrLength.
func (m *Machine) Step(msg gossip.Message, out []gossip.Message) ([]gossip.Message, error) {
	w := len(m.y)
	tag := int(uint32(msg.Tag))
	if err := gossip.CheckHeader(msg, gossip.KindRHD, m.epoch, m.id); err != nil {
		return out, fmt.Errorf("rhd: %w", err)
	}
	switch {
	case msg.Tag>>32 != uint64(w):
		return out, fmt.Errorf("rhd: %w: node %d's vectors have %d words (components and weight), this node's %d", gossip.ErrLength, msg.From, msg.Tag>>32, w)
	}
	idx := -1
	for i, s := range m.plan {
		if s.Tag == tag && s.Peer == int(msg.From) && s.Recv[1] > s.Recv[0] {
			idx = i
			break
		}
	}
	switch {
	case idx < 0:
		return out, fmt.Errorf("rhd: %w: step %d from %d is not in node %d's schedule", gossip.ErrForeignMessage, tag, msg.From, m.id)
	case len(msg.Payload) != m.plan[idx].Recv[1]-m.plan[idx].Recv[0]:
		return out, fmt.Errorf("rhd: %w: step %d payload has %d words, want %d", gossip.ErrLength, tag, len(msg.Payload), m.plan[idx].Recv[1]-m.plan[idx].Recv[0])
	}
	if _, dup := m.pending[tag]; dup || idx < m.next {
		return out, fmt.Errorf("rhd: %w: duplicate step %d from %d", gossip.ErrForeignMessage, tag, msg.From)
	}
	m.pending[tag] = append([]float64(nil), msg.Payload...)
	m.started = true
	return m.advance(out), nil
}

// advance runs the schedule as far as the received words allow.
func (m *Machine) advance(out []gossip.Message) []gossip.Message {
	for m.next < len(m.plan) {
		s := &m.plan[m.next]
		if !m.sent {
			if s.Send[1] > s.Send[0] {
				out = append(out, gossip.Message{From: m.id, To: gossip.NodeID(s.Peer), Kind: gossip.KindRHD, Epoch: m.epoch,
					Tag: Tag(s.Tag, len(m.y)), Payload: append([]float64(nil), m.y[s.Send[0]:s.Send[1]]...)})
			}
			m.sent = true
		}
		if s.Recv[1] > s.Recv[0] {
			got, ok := m.pending[s.Tag]
			if !ok {
				return out
			}
			delete(m.pending, s.Tag)
			dst := m.y[s.Recv[0]:s.Recv[1]]
			if s.Replace {
				copy(dst, got)
			} else {
				for c := range dst {
					dst[c] += got[c]
				}
			}
		}
		m.next++
		m.sent = false
	}
	return out
}

// Done reports whether the node holds the final result.
func (m *Machine) Done() bool { return m.started && m.next == len(m.plan) }

// Estimate appends the node's current Σx/Σw to dst[:0]; the result, the
// same bits at every node, once Done reports true.
func (m *Machine) Estimate(dst []float64) []float64 { return gossip.AppendRatios(dst, m.y) }

// Exclude does nothing: there is no way around a dead node.
func (m *Machine) Exclude(gossip.NodeID) {}

// Words yields the partial sums: value[c] and weight.
func (m *Machine) Words() iter.Seq[gossip.Word] { return gossip.SumWords(m.y) }
