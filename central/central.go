// Package central is the central gather-and-publish baseline of the live
// benchmark: every node sends its value to node 0, which adds them up (in
// node order) and sends the result back to everyone. It takes 2(N-1)
// messages and two message latencies, the least any all-reduce needs, but
// node 0 is a single point of failure and its work grows with N.
//
// The machine tolerates message loss: until a node has the result it resends
// its value on every Tick, and the root answers a value that arrives after
// the result with the result. It does not survive the death of node 0.
package central

import (
	"fmt"
	"iter"

	"github.com/gossipreduce/gossipreduce/gossip"
)

const (
	tagValue  = 0
	tagResult = 1
)

// Machine is one node of the central baseline.
type Machine struct {
	id     gossip.NodeID
	n      int
	epoch  uint64
	mine   []float64 // x…, w
	got    [][]float64
	have   int
	result []float64
}

// New builds node cfg.ID's machine; the overlay only gives N.
func New(cfg gossip.Config) (*Machine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Machine{
		id: cfg.ID, n: cfg.Overlay.Len(), epoch: cfg.Epoch,
		mine: append(append([]float64(nil), cfg.Value...), cfg.Weight()),
	}
	if m.id == 0 {
		m.got = make([][]float64, m.n)
		m.got[0] = m.mine
		m.have = 1
		m.finish()
	}
	return m, nil
}

// ID returns the node this machine runs.
func (m *Machine) ID() gossip.NodeID { return m.id }

// Tick sends the node's value to node 0 until the result has arrived. The
// root sends nothing on a Tick.
func (m *Machine) Tick(out []gossip.Message) []gossip.Message {
	if m.id == 0 || m.result != nil {
		return out
	}
	return append(out, m.msg(0, tagValue, m.mine))
}

func (m *Machine) msg(to gossip.NodeID, tag uint64, p []float64) gossip.Message {
	return gossip.Message{From: m.id, To: to, Kind: gossip.KindCentral, Epoch: m.epoch, Tag: tag,
		Payload: append([]float64(nil), p...)}
}

// Step takes a value (at the root) or the result (elsewhere).
func (m *Machine) Step(msg gossip.Message, out []gossip.Message) ([]gossip.Message, error) {
	switch {
	case msg.Kind != gossip.KindCentral:
		return out, fmt.Errorf("central: %w: kind %s", gossip.ErrForeignMessage, msg.Kind)
	case msg.Epoch != m.epoch || msg.To != m.id:
		return out, fmt.Errorf("central: %w: epoch %d to %d", gossip.ErrForeignMessage, msg.Epoch, msg.To)
	case len(msg.Payload) != len(m.mine):
		return out, fmt.Errorf("central: %w: payload has %d words, want %d", gossip.ErrLength, len(msg.Payload), len(m.mine))
	case int64(msg.From) >= int64(m.n):
		return out, fmt.Errorf("central: %w: %d is not in a group of %d", gossip.ErrUnknownPeer, msg.From, m.n)
	}
	switch {
	case m.id == 0 && msg.Tag == tagValue && msg.From != 0:
		if m.result != nil {
			return append(out, m.msg(msg.From, tagResult, m.result)), nil // it missed the result
		}
		if m.got[msg.From] == nil {
			m.got[msg.From] = append([]float64(nil), msg.Payload...)
			m.have++
		}
		if m.finish() {
			for j := 1; j < m.n; j++ {
				out = append(out, m.msg(gossip.NodeID(j), tagResult, m.result))
			}
		}
		return out, nil
	case m.id != 0 && msg.Tag == tagResult && msg.From == 0:
		if m.result == nil {
			m.result = append([]float64(nil), msg.Payload...)
		}
		return out, nil
	}
	return out, fmt.Errorf("central: %w: tag %d from %d at %d", gossip.ErrForeignMessage, msg.Tag, msg.From, m.id)
}

// finish computes the result once every value is in; it reports whether it
// just did.
func (m *Machine) finish() bool {
	if m.result != nil || m.have < m.n {
		return false
	}
	m.result = make([]float64, len(m.mine))
	for _, v := range m.got {
		for c, x := range v {
			m.result[c] += x
		}
	}
	return true
}

// Done reports whether the node has the result.
func (m *Machine) Done() bool { return m.result != nil }

// Estimate appends the result Σx/Σw once known, else the node's own value.
func (m *Machine) Estimate(dst []float64) []float64 {
	src := m.mine
	if m.result != nil {
		src = m.result
	}
	return gossip.AppendRatios(dst, src)
}

// Exclude does nothing: the baseline has no answer to failures.
func (m *Machine) Exclude(gossip.NodeID) {}

// Words yields the node's value and weight.
func (m *Machine) Words() iter.Seq[gossip.Word] { return gossip.SumWords(m.mine) }
