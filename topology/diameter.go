package topology

import (
	"fmt"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// maxAllPairsDiameter bounds the all-sources search Diameter falls back to
// for graphs that are not known to be vertex-transitive.
const maxAllPairsDiameter = 4096

// Diameter returns the largest number of hops between two nodes of g along
// its (directed) edges. Complete graphs, hypercubes, tori, rings and binomial
// graphs are vertex-transitive, so one breadth-first search from node 0
// gives it; for other graphs Diameter searches from every node, up to 4096
// nodes. It fails, wrapping gossip.ErrInvalidConfig, for a graph in which
// some node cannot reach another (such as the acyclic directed hypercube).
func Diameter(g Graph) (int, error) {
	n := g.Len()
	sources := n
	switch g.(type) {
	case *CompleteGraph, *HypercubeGraph, *TorusGraph, *RingGraph, *BinomialGraph:
		sources = 1
	default:
		if n > maxAllPairsDiameter {
			return 0, fmt.Errorf("topology: diameter of %s with %d nodes: %w: more than %d nodes", g.Name(), n, gossip.ErrInvalidConfig, maxAllPairsDiameter)
		}
	}
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
			return 0, fmt.Errorf("topology: %s: %w: node %d reaches only %d of %d nodes", g.Name(), gossip.ErrInvalidConfig, s, len(queue), n)
		}
		diam = max(diam, int(dist[queue[len(queue)-1]]))
	}
	return diam, nil
}
