package algo_test

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/algo"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
)

// The conformance suite: what every gossip.Machine promises, checked over
// every algorithm algo knows, in the manner of gonum's interface tests. An
// algorithm added to algo is held to it without a line here.

// net builds the algorithm's machines for 8 nodes of a 3-cube and a network
// that delivers in a seeded random order.
func net(t *testing.T, name string, seed uint64) (*gossiptest.Net, [][]float64) {
	t.Helper()
	s, err := algo.Lookup(name)
	require.NoError(t, err)
	inputs := gossiptest.Inputs(8, 2, seed)
	ms, err := gossiptest.Build(gossiptest.Hypercube(3), inputs, gossip.Average, seed, s.New)
	require.NoError(t, err)
	return gossiptest.NewNet(ms, seed), inputs
}

// round ticks every machine, then delivers at most 32 messages (Push-Sum
// answers every message, so the network never empties by itself), and
// returns every message it saw in flight.
func round(t *testing.T, n *gossiptest.Net) (seen []string) {
	t.Helper()
	for i := range n.Machines {
		n.Tick(gossip.NodeID(i))
	}
	for range 32 {
		for _, m := range n.Pending() {
			seen = append(seen, m.String())
		}
		ok, err := n.DeliverOne()
		require.NoError(t, err)
		if !ok {
			break
		}
	}
	return seen
}

// words returns the bits of every word of m's state, by name.
func words(m gossip.Machine) map[string]uint64 {
	out := map[string]uint64{}
	for w := range m.Words() {
		out[w.Name()] = math.Float64bits(*w.Ptr)
	}
	return out
}

func bits(fs []float64) []uint64 {
	out := make([]uint64, len(fs))
	for i, f := range fs {
		out[i] = math.Float64bits(f)
	}
	return out
}

// TestConformanceRejectionLeavesStateUntouched: a message that does not
// belong (another epoch, recipient, kind, a stranger, a short payload) is
// refused with one of gossip's sentinel errors, answered with nothing, and
// changes no word of the state (gossip.Machine.Step's contract).
func TestConformanceRejectionLeavesStateUntouched(t *testing.T) {
	for _, name := range algo.Names() {
		t.Run(name, func(t *testing.T) {
			n, _ := net(t, name, 1)
			n.Start()
			// A genuine message to some node, found by running the network
			// until one is in flight (central's root answers only once it
			// has everyone's value).
			var good gossip.Message
			found := false
			for range 1000 {
				if i := slices.IndexFunc(n.Pending(), func(m gossip.Message) bool { return len(m.Payload) > 0 }); i >= 0 {
					good, found = n.Pending()[i].Clone(), true
					break
				}
				_, err := n.DeliverOne()
				require.NoError(t, err)
			}
			require.True(t, found, "no message with a payload in flight")
			to := n.Machines[good.To]
			other := gossip.Kind(0)
			for other == good.Kind {
				other++
			}
			cases := map[string]func(*gossip.Message){
				"epoch":     func(m *gossip.Message) { m.Epoch++ },
				"recipient": func(m *gossip.Message) { m.To ^= 1 },
				"kind":      func(m *gossip.Message) { m.Kind = other },
				"stranger":  func(m *gossip.Message) { m.From = 99 },
				"short":     func(m *gossip.Message) { m.Payload = m.Payload[:0] },
			}
			for cname, edit := range cases {
				before, est := words(to), to.Estimate(nil)
				msg := good.Clone()
				edit(&msg)
				out, err := to.Step(msg, nil)
				require.Error(t, err, cname)
				assert.True(t, errors.Is(err, gossip.ErrForeignMessage) || errors.Is(err, gossip.ErrLength) || errors.Is(err, gossip.ErrUnknownPeer),
					"%s: %v wraps none of gossip's rejection errors", cname, err)
				assert.Empty(t, out, cname)
				assert.Equal(t, before, words(to), "%s: state changed", cname)
				assert.Equal(t, bits(est), bits(to.Estimate(nil)), "%s: estimate changed", cname)
			}
		})
	}
}

// trace runs the algorithm for 6 rounds and records every message and the
// final estimates, bit for bit.
func trace(t *testing.T, name string, seed uint64) (msgs []string, est [][]uint64) {
	t.Helper()
	n, _ := net(t, name, seed)
	n.Start()
	for range 6 {
		msgs = append(msgs, round(t, n)...)
	}
	for _, m := range n.Machines {
		est = append(est, bits(m.Estimate(nil)))
	}
	return msgs, est
}

// TestConformanceDeterministicPerSeed: the same seeds give the same
// messages and the same estimates, bit for bit; the simulator's replays
// and the runtime's traces rely on it.
func TestConformanceDeterministicPerSeed(t *testing.T) {
	for _, name := range algo.Names() {
		t.Run(name, func(t *testing.T) {
			m1, e1 := trace(t, name, 5)
			m2, e2 := trace(t, name, 5)
			require.NotEmpty(t, m1)
			assert.Equal(t, m1, m2)
			assert.Equal(t, e1, e2)
		})
	}
}

// notConserving are the algorithms whose summary says they lose mass
// under concurrent messages (the thesis's algorithms as published).
var notConserving = map[string]bool{"pf-published": true, "pcf-published": true}

// TestConformanceReachesTheExactAverage: without faults, in a random
// delivery order with every node ticking, each algorithm that conserves
// mass reaches the exact average at every node. A lost or duplicated unit
// of mass would leave a gap of order 1/N, far above the tolerance.
func TestConformanceReachesTheExactAverage(t *testing.T) {
	for _, name := range algo.Names() {
		if notConserving[name] {
			continue
		}
		t.Run(name, func(t *testing.T) {
			spec, err := algo.Lookup(name)
			require.NoError(t, err)
			n, inputs := net(t, name, 3)
			exact, err := gossip.Aggregate(inputs, []float64{1, 1, 1, 1, 1, 1, 1, 1})
			require.NoError(t, err)
			n.Start()
			// 1e-12: a few hundred ulps of values in [0, 1), the rounding
			// floor of Push-Sum's halvings at N = 8; the initial error is
			// about 1.
			const tol = 1e-12
			for d := 0; d < 200000 && n.MaxError(exact) > tol; d++ {
				ok, err := n.DeliverOne()
				require.NoError(t, err)
				// Machines that send only on Tick (Algorithm 2) are ticked
				// every 32 deliveries; the others when nothing is in flight.
				if !ok || spec.Ticked && d%32 == 0 {
					for i := range n.Machines {
						n.Tick(gossip.NodeID(i))
					}
				}
			}
			assert.LessOrEqual(t, n.MaxError(exact), tol)
		})
	}
}

// TestConformanceExcludeIdempotent: excluding a neighbour twice is
// excluding it once, and excluding the node itself, a node outside the
// group or one that is not a neighbour does nothing: the state and what
// the node sends next are the same bits.
func TestConformanceExcludeIdempotent(t *testing.T) {
	for _, name := range algo.Names() {
		t.Run(name, func(t *testing.T) {
			a, _ := net(t, name, 9)
			b, _ := net(t, name, 9)
			c, _ := net(t, name, 9)
			for _, n := range []*gossiptest.Net{a, b, c} {
				n.Start()
				for range 3 {
					round(t, n)
				}
			}
			// In the 3-cube node 0's neighbours are 1, 2 and 4.
			a.Machines[0].Exclude(1)
			b.Machines[0].Exclude(1)
			b.Machines[0].Exclude(1)
			c.Machines[0].Exclude(0)
			c.Machines[0].Exclude(99)
			c.Machines[0].Exclude(7)
			assert.Equal(t, words(a.Machines[0]), words(b.Machines[0]), "twice is once")
			assert.Equal(t, ticks(a.Machines[0]), ticks(b.Machines[0]), "twice is once")
			// One neighbour left: a node that counted the double exclusion
			// twice would think it had none.
			a.Machines[0].Exclude(2)
			b.Machines[0].Exclude(2)
			assert.Equal(t, words(a.Machines[0]), words(b.Machines[0]), "twice is once")
			assert.Equal(t, ticks(a.Machines[0]), ticks(b.Machines[0]), "twice is once")
			fresh, _ := net(t, name, 9)
			fresh.Start()
			for range 3 {
				round(t, fresh)
			}
			assert.Equal(t, words(fresh.Machines[0]), words(c.Machines[0]), "self, stranger, non-neighbour: nothing")
			assert.Equal(t, ticks(fresh.Machines[0]), ticks(c.Machines[0]), "self, stranger, non-neighbour: nothing")
		})
	}
}

// ticks returns what m sends over 20 ticks: enough random choices of a
// neighbour that a miscounted set of live neighbours shows.
func ticks(m gossip.Machine) []string {
	var out []string
	for range 20 {
		for _, msg := range m.Tick(nil) {
			out = append(out, msg.String())
		}
	}
	return out
}
