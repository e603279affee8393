// Package topology provides the overlays nodes gossip on (complete,
// hypercube, torus, directed hypercube, binomial graph, ring), parses them
// from text, and analyses them: the push-distribution matrix E[C] of thesis
// 5.2.1, its second largest eigenvalue λ2 and spectral gap 1-λ2 (numerically
// with gonum, and in closed form where the thesis gives one), and the
// predicted number of Push-Sum rounds of equations 5.1 and 5.2.
//
// # Graphs
//
// Every overlay is a [Graph]. Neighbours are computed from the node id, never
// stored, so a 2^20-node hypercube or a 64K-node binomial graph costs a few
// words of memory. Each graph documents the order of its neighbours, which is
// part of its contract: Neighbor(v, k) always returns the same node.
//
//	Complete(n)          "complete"     every other node
//	Hypercube(n)         "hypercube"    v XOR 2^k, n = 2^d
//	Torus(sides...)      "torus:AxBxC"  ±1 in every dimension, wrapping
//	TorusN(n)            "torus:AxBxC"  three near-equal sides with product n
//	DirectedHypercube(n) "dhypercube"   one direction of every hypercube edge
//	BMG(n)               "bmg"          v ± 2^k mod n (binomial graph)
//	Ring(n)              "ring"         v ± 1 mod n
//
// [Parse] turns the text form back into a graph. [Diameter] gives the largest
// hop distance between two nodes; every overlay here answers it without
// searching (the binomial graph with one search from node 0), so it is cheap
// to call when a member joins.
//
// Node ids and neighbour indices are checked: Degree and Neighbor panic with a
// message naming the graph when v ≥ Len() or k is outside [0, Degree(v)),
// exactly as indexing a slice out of range does, because the interface has no
// error result and returning some other node would silently corrupt a run.
// Validate ids where they come from outside (gossip.Config.Validate does).
//
// # The directed hypercube does not average
//
// The directed hypercube is acyclic, with one source (node 1) and one sink
// (node 0). The source never receives and the sink never sends, so no
// averaging algorithm converges at every node on it: the source keeps its
// own input forever and all mass drains into the sink. Its push matrix is
// triangular in a topological order, so λ2 = 1/2 whatever N: that is the
// "smaller second largest eigenvalue" the thesis reports for directed graphs
// (5.6.2), but the chain is not ergodic. [StronglyConnected] tells such graphs
// apart.
//
// # Spectra and cost models
//
// [PushMatrix] builds E[C] = ½·𝒩·A + ½·I; [Spectrum] computes λ2 numerically
// (dense, up to [MaxDenseNodes] nodes); [ClosedForm] gives the exact gap of
// the complete graph, the hypercube, any torus and the ring.
// [PredictedRounds] evaluates equation 5.1 and [Model] the fitted equation
// 5.2 with the coefficients of thesis tables 5.1 to 5.3. [PhysicalTorus] is
// the distance-dependent cost model of thesis 5.4.
package topology

import (
	"fmt"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// Graph is an overlay: N nodes and, for each, the neighbours it may send to.
// Every Graph is a gossip.Neighborhood, so it plugs straight into
// gossip.Config. Graphs are immutable and safe for concurrent use; neighbours
// are computed, not stored, where the structure allows (complete, hypercube,
// torus, ring, binomial graph), so even a million-node overlay costs nothing.
//
// For a directed graph Neighbor lists out-neighbours only (where v may send);
// a node without out-neighbours has Degree 0.
type Graph interface {
	gossip.Neighborhood
	// Name is the canonical text of the graph, accepted back by Parse:
	// "complete", "hypercube", "torus:4x4x2", "dhypercube", "bmg", "ring".
	Name() string
	// Directed reports whether an edge u→v may lack its reverse v→u.
	Directed() bool
}

// MaxNodes is the largest number of nodes a graph may have: node ids are
// gossip.NodeID, a uint32.
const MaxNodes = 1 << 32

// Neighbors returns the neighbours of v in g, in g's order: Neighbor(v, 0),
// Neighbor(v, 1), … Neighbor(v, Degree(v)-1).
func Neighbors(g Graph, v gossip.NodeID) []gossip.NodeID {
	d := g.Degree(v)
	out := make([]gossip.NodeID, d)
	for k := range out {
		out[k] = g.Neighbor(v, k)
	}
	return out
}

// StronglyConnected reports whether every node of g can reach every other
// node along g's edges (for an undirected graph: whether g is connected).
// Averaging converges at every node only on a strongly connected overlay.
// It runs a breadth-first search, and for a directed graph a second one over
// the reversed edges, which it stores (memory proportional to the edges).
func StronglyConnected(g Graph) bool {
	n := g.Len()
	if n <= 1 {
		return true
	}
	if !reachesAll(n, func(v gossip.NodeID, visit func(gossip.NodeID)) {
		for k, d := 0, g.Degree(v); k < d; k++ {
			visit(g.Neighbor(v, k))
		}
	}) {
		return false
	}
	if !g.Directed() {
		return true
	}
	// Reverse the edges into compressed rows: start[v] … start[v+1] index
	// the in-neighbours of v in from.
	start := make([]int, n+1)
	for v := range n {
		for k, d := 0, g.Degree(gossip.NodeID(v)); k < d; k++ {
			start[g.Neighbor(gossip.NodeID(v), k)+1]++
		}
	}
	for v := range n {
		start[v+1] += start[v]
	}
	from := make([]gossip.NodeID, start[n])
	fill := append([]int(nil), start[:n]...)
	for v := range n {
		for k, d := 0, g.Degree(gossip.NodeID(v)); k < d; k++ {
			w := g.Neighbor(gossip.NodeID(v), k)
			from[fill[w]] = gossip.NodeID(v)
			fill[w]++
		}
	}
	return reachesAll(n, func(v gossip.NodeID, visit func(gossip.NodeID)) {
		for _, u := range from[start[v]:start[v+1]] {
			visit(u)
		}
	})
}

// reachesAll runs a breadth-first search from node 0 over the edges that
// next enumerates and reports whether it reached all n nodes.
func reachesAll(n int, next func(v gossip.NodeID, visit func(gossip.NodeID))) bool {
	seen := make([]bool, n)
	seen[0] = true
	queue := []gossip.NodeID{0}
	reached := 1
	visit := func(w gossip.NodeID) {
		if !seen[w] {
			seen[w] = true
			reached++
			queue = append(queue, w)
		}
	}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		next(v, visit)
	}
	return reached == n
}

// checkSize rejects a node count outside [1, MaxNodes] for the graph kind.
func checkSize(kind string, n int) error {
	if n < 1 {
		return fmt.Errorf("topology: %s needs at least 1 node, got %d: %w", kind, n, gossip.ErrInvalidConfig)
	}
	if int64(n) > MaxNodes {
		return fmt.Errorf("topology: %s of %d nodes exceeds the %d node ids: %w", kind, n, int64(MaxNodes), gossip.ErrInvalidConfig)
	}
	return nil
}

// checkNode panics when v is not a node of a graph of n nodes.
func checkNode(kind string, n int, v gossip.NodeID) {
	if uint64(v) >= uint64(n) {
		panic(fmt.Sprintf("topology: %s: node %d out of range [0, %d)", kind, v, n))
	}
}

// checkSlot panics when k is not a neighbour index of a node of degree d.
func checkSlot(kind string, v gossip.NodeID, k, d int) {
	if k < 0 || k >= d {
		panic(fmt.Sprintf("topology: %s: neighbour index %d of node %d out of range [0, %d)", kind, k, v, d))
	}
}
