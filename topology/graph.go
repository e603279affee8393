// Package topology provides the overlays nodes gossip on (complete,
// hypercube, torus, directed hypercube, binomial graph, ring), parses them
// from text, and analyses them: the push-distribution matrix E[C] of thesis
// 5.2.1, its second largest eigenvalue λ2 and spectral gap 1-λ2 (numerically
// with gonum, and in closed form where the thesis gives one), and the
// predicted number of Push-Sum rounds of equations 5.1 and 5.2.
package topology

import "github.com/gossipreduce/gossipreduce/gossip"

// Graph is an overlay: N nodes and, for each, the neighbours it may send to.
// Every Graph is a gossip.Neighborhood, so it plugs straight into
// gossip.Config. Graphs are immutable and safe for concurrent use; neighbours
// are computed, not stored, where the structure allows (complete, hypercube,
// torus, ring, binomial graph), so even a million-node overlay costs nothing.
type Graph interface {
	gossip.Neighborhood
	// Name is the canonical text of the graph, accepted back by Parse:
	// "complete", "hypercube", "torus:4x4x2", "dhypercube", "bmg", "ring".
	Name() string
	// Directed reports whether an edge u→v may lack its reverse v→u.
	Directed() bool
}
