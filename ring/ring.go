// Package ring implements ring all-reduce, reduce-scatter followed by
// all-gather around a ring of the N nodes: the bandwidth-optimal schedule
// that NCCL, Gloo and Horovod use for large vectors. It is a pure machine
// that the simulator and the live runtime drive like the gossip algorithms,
// and, like package rdb, a fault-free yardstick.
//
// The node's partial sums x…, w (the K value components and the weight,
// W = K+1 words) are cut into N slices of nearly equal length (see [Slice]:
// slice j is words ⌊jW/N⌋ up to ⌊(j+1)W/N⌋, so lengths differ by at most
// one, and when W < N some slices are empty). Node i sends only to its
// successor i+1 and receives only from its predecessor i−1 (mod N):
//
//   - Reduce-scatter, steps s = 0 … N−2: node i sends slice i−s−1 and adds
//     the predecessor's slice i−s−2 to its own. What it sends in step s+1
//     is what it has just added to, so each slice travels once round the
//     ring gathering a term at each node, and after N−1 steps node i holds
//     the sum over all nodes of slice i. It owns that slice.
//   - All-gather, steps s = 0 … N−2: node i sends slice i−s and takes the
//     predecessor's slice i−s−1 in place of its own, so each owner's final
//     slice travels once round the ring.
//
// A step whose slice is empty sends nothing: both ends know the slice
// lengths. Each node sends 2(N−1) messages (fewer when W < N) carrying
// 2W − |slice i| − |slice i+1| words, about 2(N−1)/N·W, against ⌊log2 N⌋·W
// for recursive doubling. The latency is 2(N−1) message times, against
// ⌊log2 N⌋ (+2): the ring wins when the vector is large enough for the
// bytes to cost more than the messages.
//
// Every node ends with the same bits: only the owner adds up its slice
// (in ring order, one addition per node), and the all-gather copies the
// owner's bits. The estimate Σx/Σw divides those same bits, so it is
// identical at every node too.
//
// Each message's tag carries its step and W (see [Tag]), so a node whose
// vector has another length is found at its first message: the receiver
// refuses it with gossip.ErrLength, and no slice it touched, which is
// every slice, is ever complete anywhere.
//
// Ring all-reduce has no fault tolerance: a lost message stalls the ring
// (nothing is resent), a dead node stalls every node (each slice passes
// through every node), and a flipped bit in a partial spreads to every
// node's result. Use package exchange or the gossip algorithms where
// faults are expected.
package ring

import (
	"fmt"
	"iter"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// Machine is one node of ring all-reduce.
type Machine struct {
	id      gossip.NodeID
	n       int
	epoch   uint64
	y       []float64 // partial sums x…, w; the result once done
	next    int       // step under way, 0 … Steps(n)
	sent    bool      // step next's message has gone out
	started bool
	pending map[int][]float64 // early partials, by step
}

// New builds the ring machine of node cfg.ID among cfg.Overlay.Len()
// nodes. The overlay's edges are not used: the ring is the nodes in id
// order, so only the node count matters.
func New(cfg gossip.Config) (*Machine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Machine{
		id:      cfg.ID,
		n:       cfg.Overlay.Len(),
		epoch:   cfg.Epoch,
		y:       append(append([]float64(nil), cfg.Value...), cfg.Weight()),
		pending: make(map[int][]float64),
	}, nil
}

// Steps returns the number of steps of the ring among n nodes: n−1 of
// reduce-scatter, then n−1 of all-gather.
func Steps(n int) int { return 2 * (n - 1) }

// Slice returns the bounds [lo, hi) of slice j of w words cut into n
// slices: lo = ⌊jw/n⌋, hi = ⌊(j+1)w/n⌋. The lengths differ by at most one
// and add up to w; with w < n some are empty.
func Slice(j, w, n int) (lo, hi int) {
	return int(int64(j) * int64(w) / int64(n)), int(int64(j+1) * int64(w) / int64(n))
}

// Tag returns the tag of the message of a step when the vectors have w
// words (value components and the weight): the step in the low 32 bits,
// w above.
func Tag(step, w int) uint64 { return uint64(w)<<32 | uint64(uint32(step)) }

// sendSlice is the slice node id sends in step s among n nodes, recvSlice
// the one it receives from its predecessor; see the package documentation.
func sendSlice(id, n, s int) int {
	if s < n-1 {
		return mod(id-s-1, n)
	}
	return mod(id-(s-(n-1)), n)
}

func recvSlice(id, n, s int) int { return sendSlice(id-1, n, s) }

func mod(a, n int) int { return (a%n + n) % n }

// bounds returns the bounds of slice j of this node's vector.
func (m *Machine) bounds(j int) (lo, hi int) { return Slice(j, len(m.y), m.n) }

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

// Step takes the predecessor's slice. Messages may arrive before the step
// they belong to; they wait, as copies. The predecessor is at most N−1
// steps ahead (its sends wait on this node's, round the ring), so at most
// N−1 slices, about W words, wait at a time. A message that is not part of this
// node's schedule (another sender, an unknown step or one with an empty
// slice, a duplicate) is rejected with gossip.ErrForeignMessage, one whose
// vector has another length (tag or payload) with gossip.ErrLength.
func (m *Machine) Step(msg gossip.Message, out []gossip.Message) ([]gossip.Message, error) {
	w := len(m.y)
	step := int(uint32(msg.Tag))
	if err := gossip.CheckHeader(msg, gossip.KindRing, m.epoch, m.id); err != nil {
		return out, fmt.Errorf("ring: %w", err)
	}
	switch {
	case int64(msg.From) != int64(mod(int(m.id)-1, m.n)) || m.n == 1:
		return out, fmt.Errorf("ring: %w: from %d, node %d's predecessor is %d", gossip.ErrForeignMessage, msg.From, m.id, mod(int(m.id)-1, m.n))
	case msg.Tag>>32 != uint64(w):
		return out, fmt.Errorf("ring: %w: node %d's vectors have %d words (components and weight), this node's %d", gossip.ErrLength, msg.From, msg.Tag>>32, w)
	case step >= Steps(m.n):
		return out, fmt.Errorf("ring: %w: step %d of %d", gossip.ErrForeignMessage, step, Steps(m.n))
	}
	lo, hi := m.bounds(recvSlice(int(m.id), m.n, step))
	switch {
	case hi == lo:
		return out, fmt.Errorf("ring: %w: step %d has an empty slice and no message", gossip.ErrForeignMessage, step)
	case len(msg.Payload) != hi-lo:
		return out, fmt.Errorf("ring: %w: step %d payload has %d words, want %d", gossip.ErrLength, step, len(msg.Payload), hi-lo)
	}
	if _, dup := m.pending[step]; dup || step < m.next {
		return out, fmt.Errorf("ring: %w: duplicate step %d from %d", gossip.ErrForeignMessage, step, msg.From)
	}
	if m.started && step == m.next && m.sent {
		// The step under way: no need to keep a copy.
		m.apply(step, msg.Payload)
		m.next++
		m.sent = false
	} else {
		m.pending[step] = append([]float64(nil), msg.Payload...)
		m.started = true
	}
	return m.advance(out), nil
}

// apply adds (reduce-scatter) or copies (all-gather) the partial got of
// step s into the slice it belongs to.
func (m *Machine) apply(s int, got []float64) {
	lo, hi := m.bounds(recvSlice(int(m.id), m.n, s))
	dst := m.y[lo:hi]
	if s >= m.n-1 {
		copy(dst, got)
		return
	}
	for c := range dst {
		dst[c] += got[c]
	}
}

// advance runs the schedule as far as the received partials allow. A
// step's send goes out before its receive is awaited.
func (m *Machine) advance(out []gossip.Message) []gossip.Message {
	id := int(m.id)
	for m.next < Steps(m.n) {
		s := m.next
		if !m.sent {
			if lo, hi := m.bounds(sendSlice(id, m.n, s)); hi > lo {
				out = append(out, gossip.Message{
					From: m.id, To: gossip.NodeID(mod(id+1, m.n)), Kind: gossip.KindRing,
					Epoch: m.epoch, Tag: Tag(s, len(m.y)), Payload: append([]float64(nil), m.y[lo:hi]...),
				})
			}
			m.sent = true
		}
		if lo, hi := m.bounds(recvSlice(id, m.n, s)); hi > lo {
			got, ok := m.pending[s]
			if !ok {
				return out
			}
			delete(m.pending, s)
			m.apply(s, got)
		}
		m.next++
		m.sent = false
	}
	return out
}

// Done reports whether the node holds the final result.
func (m *Machine) Done() bool { return m.started && m.next == Steps(m.n) }

// Estimate appends the node's current partial aggregate Σx/Σw to dst[:0];
// it is the final result, the same bits at every node, once Done reports
// true.
func (m *Machine) Estimate(dst []float64) []float64 {
	return gossip.AppendRatios(dst, m.y)
}

// Exclude does nothing: the ring has no way around a dead node.
func (m *Machine) Exclude(gossip.NodeID) {}

// Words yields the partial sums: value[c] and weight.
func (m *Machine) Words() iter.Seq[gossip.Word] { return gossip.SumWords(m.y) }
