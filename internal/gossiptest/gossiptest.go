// Package gossiptest helps test gossip machines without the simulator: tiny
// overlays and a driver that delivers messages in a random order, one at a
// time, the way an asynchronous network might.
package gossiptest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// Complete is the complete graph on N nodes.
type Complete int

// Len returns N.
func (c Complete) Len() int { return int(c) }

// Degree returns N-1.
func (c Complete) Degree(gossip.NodeID) int { return int(c) - 1 }

// Neighbor returns the k-th other node.
func (c Complete) Neighbor(v gossip.NodeID, k int) gossip.NodeID {
	if k < int(v) {
		return gossip.NodeID(k)
	}
	return gossip.NodeID(k + 1)
}

// Ring is the cycle on N ≥ 3 nodes.
type Ring int

// Len returns N.
func (r Ring) Len() int { return int(r) }

// Degree returns 2.
func (r Ring) Degree(gossip.NodeID) int { return 2 }

// Neighbor returns v+1 for k = 0 and v-1 for k = 1.
func (r Ring) Neighbor(v gossip.NodeID, k int) gossip.NodeID {
	n := int(r)
	if k == 0 {
		return gossip.NodeID((int(v) + 1) % n)
	}
	return gossip.NodeID((int(v) + n - 1) % n)
}

// Hypercube is the hypercube on 2^D nodes.
type Hypercube int

// Len returns 2^D.
func (h Hypercube) Len() int { return 1 << int(h) }

// Degree returns D.
func (h Hypercube) Degree(gossip.NodeID) int { return int(h) }

// Neighbor returns v XOR 2^k.
func (h Hypercube) Neighbor(v gossip.NodeID, k int) gossip.NodeID { return v ^ 1<<k }

// Inputs returns n value vectors of k components drawn uniformly from
// [0, 1) with the given seed.
func Inputs(n, k int, seed uint64) [][]float64 {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	out := make([][]float64, n)
	for i := range out {
		out[i] = make([]float64, k)
		for c := range out[i] {
			out[i][c] = r.Float64()
		}
	}
	return out
}

// Build makes one machine per node with new, seeding node i's random source
// from (seed, i).
func Build(overlay gossip.Neighborhood, inputs [][]float64, mode gossip.WeightMode, seed uint64,
	newMachine func(gossip.Config) (gossip.Machine, error)) ([]gossip.Machine, error) {
	ms := make([]gossip.Machine, overlay.Len())
	for i := range ms {
		m, err := newMachine(gossip.Config{
			ID: gossip.NodeID(i), Overlay: overlay, Value: inputs[i], Mode: mode,
			Rand: rand.NewPCG(seed, uint64(i)),
		})
		if err != nil {
			return nil, err
		}
		ms[i] = m
	}
	return ms, nil
}

// Net delivers messages between machines in a random order.
type Net struct {
	Machines []gossip.Machine
	Rand     *rand.Rand
	// Drop, if set, decides whether a message is lost in flight.
	Drop func(gossip.Message) bool
	// Dead nodes neither receive nor send.
	Dead map[gossip.NodeID]bool

	inFlight  []gossip.Message
	Sent      []int // messages sent per node
	Delivered int
	Lost      int
}

// NewNet returns a network over ms with its own random order.
func NewNet(ms []gossip.Machine, seed uint64) *Net {
	return &Net{Machines: ms, Rand: rand.New(rand.NewPCG(seed, 0xde11)), Sent: make([]int, len(ms))}
}

// Start ticks every live machine once.
func (n *Net) Start() {
	for i, m := range n.Machines {
		if n.Dead[gossip.NodeID(i)] {
			continue
		}
		n.post(m.Tick(nil))
	}
}

// Tick ticks machine i.
func (n *Net) Tick(i gossip.NodeID) { n.post(n.Machines[i].Tick(nil)) }

func (n *Net) post(msgs []gossip.Message) {
	for _, m := range msgs {
		n.Sent[m.From]++
		n.inFlight = append(n.inFlight, m)
	}
}

// Pending returns the undelivered messages (the network's own slice: do not
// keep or modify it).
func (n *Net) Pending() []gossip.Message { return n.inFlight }

// InFlight returns the number of undelivered messages.
func (n *Net) InFlight() int { return len(n.inFlight) }

// DeliverOne delivers a uniformly chosen message in flight. It returns false
// when nothing is in flight. Step errors are returned; lost messages make the
// receiver tick instead (the thesis's loss model: the node wakes up, but the
// payload is gone).
func (n *Net) DeliverOne() (bool, error) {
	if len(n.inFlight) == 0 {
		return false, nil
	}
	i := n.Rand.IntN(len(n.inFlight))
	m := n.inFlight[i]
	last := len(n.inFlight) - 1
	n.inFlight[i] = n.inFlight[last]
	n.inFlight = n.inFlight[:last]
	if n.Dead[m.To] {
		n.Lost++
		return true, nil
	}
	if n.Drop != nil && n.Drop(m) {
		n.Lost++
		n.Tick(m.To)
		return true, nil
	}
	out, err := n.Machines[m.To].Step(m, nil)
	n.Delivered++
	n.post(out)
	return true, err
}

// RunUntil delivers messages until done returns true or max deliveries
// have been made; it fails on the first Step error.
func (n *Net) RunUntil(max int, done func() bool) error {
	for range max {
		if done() {
			return nil
		}
		ok, err := n.DeliverOne()
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("gossiptest: no message in flight")
		}
	}
	if done() {
		return nil
	}
	return fmt.Errorf("gossiptest: not done after %d deliveries", max)
}

// MaxError returns the largest relative error of the live machines'
// estimates against exact.
func (n *Net) MaxError(exact []float64) float64 {
	worst := 0.0
	var buf []float64
	for i, m := range n.Machines {
		if n.Dead[gossip.NodeID(i)] {
			continue
		}
		buf = m.Estimate(buf)
		worst = max(worst, gossip.RelError(buf, exact))
	}
	return worst
}

// modulePackages are the names that prefix the module's error messages.
var modulePackages = []string{"aggregate", "algo", "broadcast", "bsim", "campaign", "central", "exchange", "gossip",
	"member", "natsserver", "pushflow", "pushsum", "rdb", "rhd", "ring", "sdc", "sim", "simnet", "topology", "transport"}

// PrefixCount returns how many of the module's package prefixes ("sim: ",
// "gossip: ", …) err's message carries. The rule it checks: the package
// that finds a problem names itself once; packages that pass the error on
// add context, never a second name (so the count is 1).
func PrefixCount(err error) int {
	n := 0
	for _, p := range modulePackages {
		msg := err.Error()
		for i := strings.Index(msg, p+": "); i >= 0; i = strings.Index(msg, p+": ") {
			// Count whole words only: "bsim: " is not also "sim: ", nor
			// the flag "-algo: " a package.
			if i == 0 || !inWord(msg[i-1]) {
				n++
			}
			msg = msg[i+len(p)+2:]
		}
	}
	return n
}

func inWord(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || b == '-' || b == '_' || b == '.'
}
