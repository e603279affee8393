package topology

import (
	"math/bits"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// BinomialGraph is the binomial graph (BMG) of Angskun, Bosilca and Dongarra
// used for fault-tolerant broadcast (revoke paper, section 3.2): node v is
// linked to v ± 2^k mod n for k = 0 … ⌈log2 n⌉-1. Build it with [BMG].
//
// It is a circulant graph: the neighbours of v are v + o mod n for a list of
// offsets o that is the same for every node, so every node has the same
// degree, at most 2·⌈log2 n⌉ (less when offsets coincide: for n = 2^m,
// +2^(m-1) and -2^(m-1) are the same node). The offsets are listed in the
// order +1, -1, +2, -2, +4, -4, …, each residue mod n kept the first time it
// appears and 0 (v itself) never.
type BinomialGraph struct {
	n       int
	offsets []uint64 // distinct non-zero residues mod n, in neighbour order
}

// BMG returns the binomial graph on n ≥ 1 nodes. n = 1 has no neighbours,
// n = 2 one, n = 3 two.
func BMG(n int) (*BinomialGraph, error) {
	if err := checkSize("bmg", n); err != nil {
		return nil, err
	}
	g := &BinomialGraph{n: n}
	un := uint64(n)
	for k := range bits.Len64(un - 1) { // ⌈log2 n⌉ for n ≥ 1
		p := (uint64(1) << k) % un
		for _, o := range [2]uint64{p, (un - p) % un} {
			if o != 0 && !containsOffset(g.offsets, o) {
				g.offsets = append(g.offsets, o)
			}
		}
	}
	return g, nil
}

func containsOffset(offs []uint64, o uint64) bool {
	for _, x := range offs {
		if x == o {
			return true
		}
	}
	return false
}

// Len returns n.
func (g *BinomialGraph) Len() int { return g.n }

// Degree returns the number of distinct offsets, the same for every node.
func (g *BinomialGraph) Degree(v gossip.NodeID) int {
	checkNode("bmg", g.n, v)
	return len(g.offsets)
}

// Neighbor returns v + offset_k mod n, offsets in the order +1, -1, +2, -2,
// +4, -4, … with repeats removed.
func (g *BinomialGraph) Neighbor(v gossip.NodeID, k int) gossip.NodeID {
	checkNode("bmg", g.n, v)
	checkSlot("bmg", v, k, len(g.offsets))
	return gossip.NodeID((uint64(v) + g.offsets[k]) % uint64(g.n))
}

// Name returns "bmg".
func (g *BinomialGraph) Name() string { return "bmg" }

// Directed returns false.
func (g *BinomialGraph) Directed() bool { return false }
