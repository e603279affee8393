package pushflow

import (
	"fmt"
	"iter"
	"math/rand/v2"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// CancelMachine is one node of Push-Cancel-Flow (thesis Algorithm 4). Build
// it with NewPCF or NewPCFPublished. Not safe for concurrent use.
type CancelMachine struct {
	id       gossip.NodeID
	epoch    uint64
	rng      *rand.Rand
	k        int // value components; a flow has k+1 words
	fixed    bool
	input    []float64
	phi      []float64 // φ_i, the accumulator
	nbr      []gossip.NodeID
	index    peerIndex
	flows    []float64 // per neighbour two flows of k+1 words: f_{i,j,0}, f_{i,j,1}
	absorbed []float64 // per neighbour: the cancelled flows, so Exclude can undo the edge
	c        []uint8
	r        []uint64
	waiting  []bool // fixed: sent to the neighbour, not heard back yet
	gone     []bool
	live     int
	owed     int // fixed: sends held back
	e        []float64
	cnt      Counters
	// Discarded counts messages Algorithm 4 throws away (case 5 and
	// c_ij ≠ c_ji after case 0).
	discarded int
}

// NewPCF returns Push-Cancel-Flow with the fix of thesis 2.2.3: no two
// messages to the same neighbour before hearing back from it (see the
// package documentation).
func NewPCF(cfg gossip.Config) (*CancelMachine, error) { return buildPCF(cfg, true) }

// NewPCFPublished returns Push-Cancel-Flow exactly as Algorithm 4, which
// loses mass for good when a node sends twice to a neighbour before hearing
// from it (thesis figure 2.5).
func NewPCFPublished(cfg gossip.Config) (*CancelMachine, error) { return buildPCF(cfg, false) }

func buildPCF(cfg gossip.Config, fixed bool) (*CancelMachine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	k := len(cfg.Value)
	deg := cfg.Overlay.Degree(cfg.ID)
	m := &CancelMachine{
		id: cfg.ID, epoch: cfg.Epoch, rng: rand.New(cfg.Source()), k: k, fixed: fixed,
		input:    append(append([]float64(nil), cfg.Value...), cfg.Weight()),
		phi:      make([]float64, k+1),
		flows:    make([]float64, deg*2*(k+1)),
		absorbed: make([]float64, deg*(k+1)),
		c:        make([]uint8, deg), r: make([]uint64, deg),
		waiting: make([]bool, deg), gone: make([]bool, deg), live: deg,
		e: make([]float64, k+1),
	}
	for n := range deg {
		m.nbr = append(m.nbr, cfg.Overlay.Neighbor(cfg.ID, n))
	}
	index, j, ok := newPeerIndex(m.nbr, cfg.ID)
	if !ok {
		return nil, fmt.Errorf("pushflow: %w: node %d lists neighbour %d twice or itself", gossip.ErrInvalidConfig, cfg.ID, j)
	}
	m.index = index
	return m, nil
}

// ID returns the node this machine runs.
func (m *CancelMachine) ID() gossip.NodeID { return m.id }

// Counters returns HeldBack (the fixed variant's deferred sends); the other
// fields stay zero.
func (m *CancelMachine) Counters() Counters { return m.cnt }

// Discarded returns the number of received messages Algorithm 4 threw away
// because the two ends' handshake states did not match (case 5).
func (m *CancelMachine) Discarded() int { return m.discarded }

// Handshake returns (c_ij, r_ij) for neighbour peer, for tests.
func (m *CancelMachine) Handshake(peer gossip.NodeID) (c uint8, r uint64, ok bool) {
	n, ok := m.index.lookup(peer)
	if !ok {
		return 0, 0, false
	}
	return m.c[n], m.r[n], true
}

func (m *CancelMachine) flow(n, slot int) []float64 {
	w := m.k + 1
	return m.flows[(2*n+slot)*w : (2*n+slot+1)*w]
}

// Tick pushes once (Algorithm 4 lines 2-5).
func (m *CancelMachine) Tick(out []gossip.Message) []gossip.Message {
	return m.push(out, 1)
}

// Step applies a received message (Algorithm 4 lines 6-23) and pushes once.
// Foreign, malformed or unknown-peer messages are rejected with an error and
// change nothing.
func (m *CancelMachine) Step(msg gossip.Message, out []gossip.Message) ([]gossip.Message, error) {
	w := m.k + 1
	switch {
	case msg.Kind != gossip.KindCancelFlow:
		return out, fmt.Errorf("pushflow: %w: kind %s, want %s", gossip.ErrForeignMessage, msg.Kind, gossip.KindCancelFlow)
	case msg.Epoch != m.epoch:
		return out, fmt.Errorf("pushflow: %w: epoch %d, want %d", gossip.ErrForeignMessage, msg.Epoch, m.epoch)
	case msg.To != m.id:
		return out, fmt.Errorf("pushflow: %w: addressed to %d, this is %d", gossip.ErrForeignMessage, msg.To, m.id)
	case len(msg.Payload) != 2*w:
		return out, fmt.Errorf("pushflow: %w: payload has %d words, want %d", gossip.ErrLength, len(msg.Payload), 2*w)
	}
	n32, ok := m.index.lookup(msg.From)
	if !ok || m.gone[n32] {
		return out, fmt.Errorf("pushflow: %w: %d is not a live neighbour of %d", gossip.ErrUnknownPeer, msg.From, m.id)
	}
	n := int(n32)
	m.waiting[n] = false
	m.apply(n, msg.Payload[:w], msg.Payload[w:], uint8(msg.Tag&1), msg.Tag>>1)
	return m.push(out, 1), nil
}

// apply is the receive part of Algorithm 4 for the message
// (f_ji0, f_ji1, c_ji, r_ji) from neighbour n.
func (m *CancelMachine) apply(n int, g0, g1 []float64, cj uint8, rj uint64) {
	recv := [2][]float64{g0, g1}
	c, r := m.c[n], m.r[n]
	if c != cj && r == rj { // case 0
		c = cj
	}
	if c != cj {
		m.discarded++ // no case applies
		m.c[n] = c
		return
	}
	// Case 1: the active flows.
	act, ract := m.flow(n, int(c)), recv[cj]
	for x := range act {
		m.phi[x] -= act[x] + ract[x]
		act[x] = -ract[x]
	}
	pas, rpas := m.flow(n, int(1-c)), recv[1-cj]
	switch {
	case negated(rpas, pas) && r == rj: // case 2
		m.absorb(n, pas)
		r++
	case isZero(rpas) && r+1 == rj: // case 3
		m.absorb(n, pas)
		r++
		c = 1 - c
	case r <= rj: // case 4
		for x := range pas {
			m.phi[x] -= pas[x] + rpas[x]
			pas[x] = -rpas[x]
		}
	default: // case 5
		m.discarded++
	}
	m.c[n], m.r[n] = c, r
}

// absorb cancels a passive flow: φ keeps its mass, the flow restarts at
// zero, and the edge's record keeps it for Exclude.
func (m *CancelMachine) absorb(n int, pas []float64) {
	a := m.absorbed[n*(m.k+1) : (n+1)*(m.k+1)]
	for x := range pas {
		a[x] += pas[x]
		pas[x] = 0
	}
}

func negated(a, b []float64) bool {
	for x := range a {
		if a[x] != -b[x] {
			return false
		}
	}
	return true
}

func isZero(a []float64) bool {
	for _, v := range a {
		if v != 0 {
			return false
		}
	}
	return true
}

// push sends want messages (plus any held back), each halving e = (x, w) + φ
// into the active flow to a random neighbour.
func (m *CancelMachine) push(out []gossip.Message, want int) []gossip.Message {
	want += m.owed
	m.owed = 0
	for ; want > 0; want-- {
		n, ok := m.pick()
		if !ok {
			if m.fixed && m.live > 0 {
				m.owed += want
				m.cnt.HeldBack += want
			}
			return out
		}
		// Algorithm 4 lines 2 and 4 with d = ((x, w) + φ)/2 computed once.
		act := m.flow(n, int(m.c[n]))
		for x := range m.phi {
			d := (m.input[x] + m.phi[x]) / 2
			m.phi[x] -= d
			act[x] -= d
		}
		p := make([]float64, 0, 2*(m.k+1))
		p = append(append(p, m.flow(n, 0)...), m.flow(n, 1)...)
		out = append(out, gossip.Message{
			From: m.id, To: m.nbr[n], Kind: gossip.KindCancelFlow, Epoch: m.epoch,
			Tag: m.r[n]<<1 | uint64(m.c[n]), Payload: p,
		})
		if m.fixed {
			m.waiting[n] = true
		}
	}
	return out
}

// pick draws a live neighbour uniformly. The fixed variant redraws, among
// the neighbours it may send to, when the first draw hits one it waits for.
func (m *CancelMachine) pick() (int, bool) {
	if m.live == 0 {
		return 0, false
	}
	n := m.rng.IntN(len(m.nbr))
	for m.gone[n] {
		n = m.rng.IntN(len(m.nbr))
	}
	if !m.fixed || !m.waiting[n] {
		return n, true
	}
	free := 0
	for q := range m.nbr {
		if !m.gone[q] && !m.waiting[q] {
			free++
		}
	}
	if free == 0 {
		return 0, false
	}
	t := m.rng.IntN(free)
	for q := range m.nbr {
		if !m.gone[q] && !m.waiting[q] {
			if t == 0 {
				return q, true
			}
			t--
		}
	}
	return 0, false
}

// Estimate appends ((x, w) + φ)(x) / ((x, w) + φ)(w) to dst[:0].
func (m *CancelMachine) Estimate(dst []float64) []float64 {
	dst = dst[:0]
	w := m.input[m.k] + m.phi[m.k]
	for x := range m.k {
		dst = append(dst, (m.input[x]+m.phi[x])/w)
	}
	return dst
}

// Exclude declares peer dead: φ gives back everything exchanged with it
// (both flows and what the handshakes cancelled), so the survivors converge
// to their own aggregate, and peer is never sent to again.
func (m *CancelMachine) Exclude(peer gossip.NodeID) {
	n32, ok := m.index.lookup(peer)
	if !ok || m.gone[n32] {
		return
	}
	n := int(n32)
	a := m.absorbed[n*(m.k+1) : (n+1)*(m.k+1)]
	f0, f1 := m.flow(n, 0), m.flow(n, 1)
	for x := range m.phi {
		m.phi[x] -= f0[x] + f1[x] + a[x]
		f0[x], f1[x], a[x] = 0, 0, 0
	}
	m.gone[n] = true
	m.waiting[n] = false
	m.live--
}

// Words yields input.value[c], input.weight, accumulator.value[c],
// accumulator.weight, and both flows of every live neighbour
// (flow[j].value[c], flow[j]#1.weight, …).
func (m *CancelMachine) Words() iter.Seq[gossip.Word] {
	return func(yield func(gossip.Word) bool) {
		emit := func(place gossip.Place, peer gossip.NodeID, slot int, v []float64) bool {
			for x := range v {
				w := gossip.Word{Place: place, Peer: peer, Slot: slot, Part: gossip.PartValue, Component: x, Ptr: &v[x]}
				if x == m.k {
					w.Part, w.Component = gossip.PartWeight, 0
				}
				if !yield(w) {
					return false
				}
			}
			return true
		}
		if !emit(gossip.PlaceInput, 0, 0, m.input) || !emit(gossip.PlaceAccumulator, 0, 0, m.phi) {
			return
		}
		for n, j := range m.nbr {
			if m.gone[n] {
				continue
			}
			if !emit(gossip.PlaceFlow, j, 0, m.flow(n, 0)) || !emit(gossip.PlaceFlow, j, 1, m.flow(n, 1)) {
				return
			}
		}
	}
}
