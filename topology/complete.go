package topology

import "github.com/gossipreduce/gossipreduce/gossip"

// CompleteGraph is the fully connected overlay: every node may send to every
// other node. Build it with [Complete].
type CompleteGraph struct{ n int }

// Complete returns the complete graph on n ≥ 1 nodes. Every node has n-1
// neighbours, in increasing order of id with v itself left out:
// Neighbor(v, k) = k if k < v, else k+1.
func Complete(n int) (*CompleteGraph, error) {
	if err := checkSize("complete graph", n); err != nil {
		return nil, err
	}
	return &CompleteGraph{n: n}, nil
}

// Len returns the number of nodes.
func (g *CompleteGraph) Len() int { return g.n }

// Degree returns n-1.
func (g *CompleteGraph) Degree(v gossip.NodeID) int {
	checkNode("complete", g.n, v)
	return g.n - 1
}

// Neighbor returns k if k < v, else k+1.
func (g *CompleteGraph) Neighbor(v gossip.NodeID, k int) gossip.NodeID {
	checkNode("complete", g.n, v)
	checkSlot("complete", v, k, g.n-1)
	if k < int(v) {
		return gossip.NodeID(k)
	}
	return gossip.NodeID(k + 1)
}

// Name returns "complete".
func (g *CompleteGraph) Name() string { return "complete" }

// Directed returns false.
func (g *CompleteGraph) Directed() bool { return false }
