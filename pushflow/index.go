package pushflow

import (
	"cmp"
	"slices"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// peerIndex maps a neighbour's id to its position in the machine's
// neighbour list: the pairs sorted by id, searched by bisection. A node has
// few neighbours (log2 N on a hypercube), and every message looks its
// sender up: a map cost a hash and, in a simulation of many thousands of
// nodes, cache misses on its table.
type peerIndex []peerPos

type peerPos struct {
	id gossip.NodeID
	n  int32
}

// newPeerIndex indexes the neighbours nbr of node self. If one is self or
// is listed twice, it returns the first such entry, and ok false.
func newPeerIndex(nbr []gossip.NodeID, self gossip.NodeID) (x peerIndex, bad gossip.NodeID, ok bool) {
	x = make(peerIndex, len(nbr))
	for n, j := range nbr {
		x[n] = peerPos{j, int32(n)}
	}
	slices.SortFunc(x, func(a, b peerPos) int { return cmp.Compare(a.id, b.id) })
	clean := true
	for i := range x {
		if x[i].id == self || (i > 0 && x[i].id == x[i-1].id) {
			clean = false
			break
		}
	}
	if clean {
		return x, 0, true
	}
	seen := make(map[gossip.NodeID]bool, len(nbr))
	for _, j := range nbr {
		if seen[j] || j == self {
			return nil, j, false
		}
		seen[j] = true
	}
	panic("unreachable")
}

// lookup returns neighbour id's position; ok is false if id is not a
// neighbour.
func (x peerIndex) lookup(id gossip.NodeID) (n int32, ok bool) {
	lo, hi := 0, len(x)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if x[mid].id < id {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(x) && x[lo].id == id {
		return x[lo].n, true
	}
	return 0, false
}
