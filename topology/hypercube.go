package topology

import (
	"fmt"
	"math/bits"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// HypercubeGraph is the d-dimensional binary hypercube on n = 2^d nodes:
// v and w are neighbours when their ids differ in exactly one bit. Build it
// with [Hypercube].
type HypercubeGraph struct{ d int }

// Hypercube returns the hypercube on n = 2^d nodes (d ≥ 0; n = 1 is a single
// node without neighbours). Any other n is an error wrapping
// gossip.ErrInvalidConfig that names the nearest powers of two. Every node has
// d neighbours, one per dimension in increasing order:
// Neighbor(v, k) = v XOR 2^k.
func Hypercube(n int) (*HypercubeGraph, error) {
	d, err := powerOfTwo("hypercube", n)
	if err != nil {
		return nil, err
	}
	return &HypercubeGraph{d: d}, nil
}

// powerOfTwo returns d with n = 2^d, or an error naming the nearest powers.
func powerOfTwo(kind string, n int) (int, error) {
	if err := checkSize(kind, n); err != nil {
		return 0, err
	}
	if n&(n-1) != 0 {
		lo := 1 << (bits.Len(uint(n)) - 1)
		return 0, fmt.Errorf("topology: %s needs a power-of-two number of nodes, got %d (nearest: %d or %d): %w",
			kind, n, lo, 2*lo, gossip.ErrInvalidConfig)
	}
	return bits.TrailingZeros(uint(n)), nil
}

// Dim returns the dimension d = log2 N. Simulators use it (through
// interface{ Dim() int }) to recognise a hypercube; no other graph of this
// package has the method.
func (g *HypercubeGraph) Dim() int { return g.d }

// Len returns 2^d.
func (g *HypercubeGraph) Len() int { return 1 << g.d }

// Degree returns d.
func (g *HypercubeGraph) Degree(v gossip.NodeID) int {
	checkNode("hypercube", g.Len(), v)
	return g.d
}

// Neighbor returns v XOR 2^k.
func (g *HypercubeGraph) Neighbor(v gossip.NodeID, k int) gossip.NodeID {
	checkNode("hypercube", g.Len(), v)
	checkSlot("hypercube", v, k, g.d)
	return v ^ gossip.NodeID(1)<<k
}

// Name returns "hypercube".
func (g *HypercubeGraph) Name() string { return "hypercube" }

// Directed returns false.
func (g *HypercubeGraph) Directed() bool { return false }

// DirectedHypercubeGraph is a recursively directed hypercube in the sense of
// C. Domshlak, "On recursively directed hypercubes", Electronic Journal of
// Combinatorics 9(1), 2002 (thesis reference [7]): every edge of the
// hypercube on n = 2^d nodes, directed one way. Build it with
// [DirectedHypercube].
//
// The dimension-k edge between u and u XOR 2^k points from u to u XOR 2^k
// when bit k of u XOR the parity of u's bits below k is 1; equivalently, when
// the parity of bits 0…k of u is odd. The orientation of dimension k depends
// only on the lower dimensions, which is the recursive structure: both halves
// of the cube split at the top bit are directed alike, and the edges between
// them alternate with the parity of the lower bits.
//
// Like every recursively directed hypercube it is acyclic with a unique
// source and a unique sink: node 1 (every prefix parity odd) sends along
// every dimension and receives from none; node 0 (every prefix parity even)
// receives along every dimension and sends along none, so its Degree is 0.
// The source never receives and the sink never sends, so NO AVERAGING
// ALGORITHM CONVERGES AT EVERY NODE ON THIS OVERLAY: the source keeps its own
// input, and all mass drains into the sink. Its push matrix is triangular in
// a topological order, with ½ on the diagonal except 1 at the sink, so
// λ2 = 1/2 whatever N. That is the "smaller second largest eigenvalue" the
// thesis reports for directed graphs (5.6.2), but the chain is not ergodic:
// its stationary distribution sits entirely on the sink. Use it to study
// direction, not to compute aggregates.
type DirectedHypercubeGraph struct{ d int }

// DirectedHypercube returns the recursively directed hypercube on n = 2^d
// nodes; any other n is an error wrapping gossip.ErrInvalidConfig. Node v's
// out-neighbours are v XOR 2^k for the dimensions k whose edge leaves v, in
// increasing order of k.
func DirectedHypercube(n int) (*DirectedHypercubeGraph, error) {
	d, err := powerOfTwo("dhypercube", n)
	if err != nil {
		return nil, err
	}
	return &DirectedHypercubeGraph{d: d}, nil
}

// out returns the set of dimensions along which v sends, as a bit mask: bit
// k is the parity of bits 0…k of v (an inclusive prefix XOR).
func (g *DirectedHypercubeGraph) out(v gossip.NodeID) uint32 {
	m := uint32(v)
	m ^= m << 1
	m ^= m << 2
	m ^= m << 4
	m ^= m << 8
	m ^= m << 16
	return m & uint32(uint64(1)<<g.d-1)
}

// Len returns 2^d.
func (g *DirectedHypercubeGraph) Len() int { return 1 << g.d }

// Degree returns the out-degree of v: 0 for the sink (node 0), d for the
// source (node 1).
func (g *DirectedHypercubeGraph) Degree(v gossip.NodeID) int {
	checkNode("dhypercube", g.Len(), v)
	return bits.OnesCount32(g.out(v))
}

// Neighbor returns v XOR 2^j for the k-th dimension j (in increasing order)
// along which v sends.
func (g *DirectedHypercubeGraph) Neighbor(v gossip.NodeID, k int) gossip.NodeID {
	checkNode("dhypercube", g.Len(), v)
	m := g.out(v)
	checkSlot("dhypercube", v, k, bits.OnesCount32(m))
	for range k {
		m &= m - 1
	}
	return v ^ gossip.NodeID(m&-m)
}

// Name returns "dhypercube".
func (g *DirectedHypercubeGraph) Name() string { return "dhypercube" }

// Directed returns true.
func (g *DirectedHypercubeGraph) Directed() bool { return true }
