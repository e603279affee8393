package topology

import (
	"fmt"
	"math/rand/v2"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// MaxPhysicalNodes is the largest overlay NewPhysicalTorus places: the
// placement is stored, 4 bytes a node (64 MiB at this limit).
const MaxPhysicalNodes = 1 << 24

// physicalStream is the PCG stream the placement permutation is drawn from,
// so that a seed used elsewhere in a run does not give the same numbers here.
const physicalStream = 0x70687973746f7275 // "phystoru"

// PhysicalTorus is the distance-dependent cost model of thesis 5.4: the
// machine's network is a three-dimensional torus, and a message costs one
// unit per hop between the physical positions of sender and receiver.
//
// Overlay node ids are placed on the physical torus by a random permutation
// drawn from the seed, so that no overlay fits the network better than
// another by accident of numbering; except when the overlay is itself a
// three-dimensional torus, which is placed on itself (identity placement):
// that is the thesis's neighbourhood-only communication, every overlay
// neighbour one hop away.
//
// A PhysicalTorus is immutable and safe for concurrent use.
type PhysicalTorus struct {
	net  *TorusGraph
	pos  []uint32 // overlay node → physical node; nil for the identity
	seed uint64
}

// NewPhysicalTorus places overlay on a physical three-dimensional torus of
// the same size. For a three-dimensional TorusGraph overlay the physical
// torus has the overlay's sides and placement is the identity (the seed is
// unused). Otherwise the physical torus is TorusN(N) and overlay node v sits
// at physical node π(v), where π is a uniformly random permutation drawn by
// rand.New(rand.NewPCG(seed, 0x70687973746f7275)).Shuffle (the second PCG
// word spells "phystoru", keeping this stream apart from other uses of the
// same seed); the same seed gives the same placement. Overlays above
// MaxPhysicalNodes nodes are refused.
func NewPhysicalTorus(overlay Graph, seed uint64) (*PhysicalTorus, error) {
	n := overlay.Len()
	if n < 1 || n > MaxPhysicalNodes {
		return nil, fmt.Errorf("topology: physical torus for %s of %d nodes: want 1 … %d nodes: %w",
			overlay.Name(), n, MaxPhysicalNodes, gossip.ErrInvalidConfig)
	}
	if t, ok := overlay.(*TorusGraph); ok && len(t.sides) == 3 {
		return &PhysicalTorus{net: t, seed: seed}, nil
	}
	net, err := TorusN(n)
	if err != nil {
		return nil, err
	}
	pos := make([]uint32, n)
	for i := range pos {
		pos[i] = uint32(i)
	}
	rand.New(rand.NewPCG(seed, physicalStream)).Shuffle(n, func(i, j int) {
		pos[i], pos[j] = pos[j], pos[i]
	})
	return &PhysicalTorus{net: net, pos: pos, seed: seed}, nil
}

// Len returns the number of nodes.
func (p *PhysicalTorus) Len() int { return p.net.n }

// Sides returns a copy of the physical torus's sides.
func (p *PhysicalTorus) Sides() []int { return p.net.Sides() }

// Seed returns the seed the placement was drawn from.
func (p *PhysicalTorus) Seed() uint64 { return p.seed }

// Identity reports whether overlay node v sits at physical node v for every
// v (a three-dimensional torus overlay).
func (p *PhysicalTorus) Identity() bool { return p.pos == nil }

// Position returns the physical node overlay node v sits at. It panics if v
// is out of range.
func (p *PhysicalTorus) Position(v gossip.NodeID) gossip.NodeID {
	checkNode("physical torus", p.net.n, v)
	if p.pos == nil {
		return v
	}
	return gossip.NodeID(p.pos[v])
}

// Hops returns the number of network hops between the physical positions of
// overlay nodes u and v: the sum over the three dimensions of the shorter way
// around, min(|Δ|, side-|Δ|). Hops(u, u) = 0. It panics if u or v is out of
// range.
func (p *PhysicalTorus) Hops(u, v gossip.NodeID) int {
	a, b := uint64(p.Position(u)), uint64(p.Position(v))
	hops := 0
	for i, s := range p.net.sides {
		side, step := uint64(s), p.net.stride[i]
		ca, cb := a/step%side, b/step%side
		d := max(ca, cb) - min(ca, cb)
		hops += int(min(d, side-d))
	}
	return hops
}

// Diameter returns the largest Hops between two nodes: the sum of
// floor(side/2) over the sides. Thesis 5.4 charges a synchronous round of an
// overlay with random placement about this many hops, since some message
// almost surely travels that far.
func (p *PhysicalTorus) Diameter() int {
	d := 0
	for _, s := range p.net.sides {
		d += s / 2
	}
	return d
}
