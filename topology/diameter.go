package topology

import (
	"fmt"
	"sync"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// maxAllPairsDiameter bounds the all-sources search Diameter falls back to
// for graphs that do not know their own diameter.
const maxAllPairsDiameter = 4096

// Diameter returns the largest number of hops between two nodes of g along
// its (directed) edges: the greatest, over all ordered pairs (u, v), of the
// length of a shortest path from u to v. It fails, wrapping
// gossip.ErrInvalidConfig, for a graph in which some node cannot reach
// another (such as the acyclic directed hypercube).
//
// A graph that has a method
//
//	Diameter() (int, error)
//
// is asked for it: every graph of this package has one, answering without a
// search where there is a formula (complete graph, hypercube, torus, ring,
// directed hypercube: O(1) or O(dimensions)) and with one breadth-first
// search from node 0 for the binomial graph (O(N log N)). Such a method must
// return what the search below would; a type that embeds one of this
// package's graphs but changes its neighbours must override it.
//
// Any other graph is searched breadth-first from every node, O(N·E), up to
// 4096 nodes; larger ones are refused with an error wrapping
// gossip.ErrInvalidConfig.
func Diameter(g Graph) (int, error) {
	if d, ok := g.(interface{ Diameter() (int, error) }); ok {
		return d.Diameter()
	}
	n := g.Len()
	if n > maxAllPairsDiameter {
		return 0, fmt.Errorf("topology: diameter of %s with %d nodes: %w: more than %d nodes", g.Name(), n, gossip.ErrInvalidConfig, maxAllPairsDiameter)
	}
	return searchDiameter(g, n)
}

// searchDiameter runs a breadth-first search from each of the nodes
// 0 … sources-1 of g and returns the largest distance any of them found. It
// fails, wrapping gossip.ErrInvalidConfig, when one of them does not reach
// every node. With sources = Len() it is the diameter of any graph; with
// sources = 1 it is the eccentricity of node 0, which is the diameter of a
// vertex-transitive graph.
func searchDiameter(g Graph, sources int) (int, error) {
	n := g.Len()
	dist := make([]int32, n)
	queue := make([]gossip.NodeID, 0, n)
	diam := 0
	for s := range sources {
		for i := range dist {
			dist[i] = -1
		}
		dist[s] = 0
		queue = append(queue[:0], gossip.NodeID(s))
		for head := 0; head < len(queue); head++ {
			v := queue[head]
			for k, d := 0, g.Degree(v); k < d; k++ {
				w := g.Neighbor(v, k)
				if dist[w] < 0 {
					dist[w] = dist[v] + 1
					queue = append(queue, w)
				}
			}
		}
		if len(queue) < n {
			return 0, unreachable(g.Name(), s, len(queue), n)
		}
		diam = max(diam, int(dist[queue[len(queue)-1]]))
	}
	return diam, nil
}

// unreachable is the error of a graph named name whose node s reaches only
// reached of its n nodes.
func unreachable(name string, s, reached, n int) error {
	return fmt.Errorf("topology: %s: %w: node %d reaches only %d of %d nodes", name, gossip.ErrInvalidConfig, s, reached, n)
}

// Diameter returns 1, or 0 for a single node: every node is a neighbour of
// every other. The error is always nil.
func (g *CompleteGraph) Diameter() (int, error) { return min(g.n-1, 1), nil }

// Diameter returns d = log2 N: ids differing in j bits are j hops apart, and
// v and its complement differ in all d. The error is always nil.
func (g *HypercubeGraph) Diameter() (int, error) { return g.d, nil }

// Diameter returns the sum of ⌊side/2⌋ over the sides. A shortest path in a
// product of cycles moves in each dimension independently, so the distance
// is the sum of the cycle distances min(|Δc_i|, side_i-|Δc_i|), at most
// ⌊side_i/2⌋ and equal to it for the opposite coordinate. That holds for a
// side of 2 (one neighbour, one hop) and of 1 (no neighbour, nothing to
// cross) as well. The error is always nil.
func (g *TorusGraph) Diameter() (int, error) {
	d := 0
	for _, s := range g.sides {
		d += s / 2
	}
	return d, nil
}

// Diameter returns ⌊N/2⌋: the ring is undirected, so the farthest node is
// half way round either way. The error is always nil.
func (g *RingGraph) Diameter() (int, error) { return g.n / 2, nil }

// Diameter never succeeds on more than one node: the directed hypercube is
// acyclic, and its sink, node 0, sends to nobody. The error wraps
// gossip.ErrInvalidConfig and is the one the breadth-first search from node 0
// reports ("node 0 reaches only 1 of N nodes"). A single node has diameter 0.
func (g *DirectedHypercubeGraph) Diameter() (int, error) {
	if g.d == 0 {
		return 0, nil
	}
	return 0, unreachable(g.Name(), 0, 1, g.Len())
}

// Diameter returns the eccentricity of node 0, found by one breadth-first
// search over the offsets: O(N log N) time, 5 bytes of memory a node. That is
// the diameter because the binomial graph is circulant, hence
// vertex-transitive: v ↦ v+c mod n maps every edge {v, v+o} onto the edge
// {v+c, v+c+o}, so it is an automorphism taking node 0 to node c, and every
// node is as far from the rest as node 0 is. (Distances are the fewest signed
// powers of two 2^k, k < ⌈log2 n⌉, summing to w - v mod n; the largest of
// them has no simple closed form for general n.) The error is
// always nil: ±1 alone connects every node.
func (g *BinomialGraph) Diameter() (int, error) {
	bmgDiameters.Lock()
	defer bmgDiameters.Unlock()
	if d, ok := bmgDiameters.of[g.n]; ok {
		return d, nil
	}
	d := g.search()
	if bmgDiameters.of == nil {
		bmgDiameters.of = map[int]int{}
	}
	bmgDiameters.of[g.n] = d
	return d, nil
}

// bmgDiameters keeps the binomial graphs' diameters by size: every member
// of a group in one process resolves the same one, and a search is
// O(n log n) (10,000 members would each search 10,000 nodes).
var bmgDiameters struct {
	sync.Mutex
	of map[int]int
}

// search returns the eccentricity of node 0.
func (g *BinomialGraph) search() int {
	n := uint64(g.n)
	// dist[w] is the distance from 0 to w plus one, 0 while w is unseen. It
	// fits a byte: w < n ≤ 2^m, m = ⌈log2 n⌉ ≤ 32, is the sum of at most m
	// of the offsets 2^k, k < m, so it is at most 32 hops from 0.
	dist := make([]uint8, n)
	queue := make([]uint32, 1, n)
	dist[0] = 1
	for head := 0; head < len(queue); head++ {
		v := uint64(queue[head])
		for _, o := range g.offsets {
			w := v + o // v, o < n: at most one wrap
			if w >= n {
				w -= n
			}
			if dist[w] == 0 {
				dist[w] = dist[v] + 1
				queue = append(queue, uint32(w))
			}
		}
	}
	return int(dist[queue[len(queue)-1]]) - 1
}
