package topology

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// TorusGraph is a torus (a wrapped grid) in any number of dimensions. Build
// it with [Torus] or [TorusN].
//
// Node v has coordinates (c_0, c_1, …) given by the mixed-radix digits of v
// with sides[0] varying fastest: c_0 = v mod sides[0], c_1 = (v / sides[0])
// mod sides[1], and so on, so v = c_0 + sides[0]·(c_1 + sides[1]·(c_2 + …)).
//
// The neighbours of v are the nodes one step away in one dimension, wrapping
// around, listed dimension by dimension in the order of sides: first
// c_i+1, then c_i-1 (mod sides[i]). A side of 2 gives one neighbour in that
// dimension (c_i+1 and c_i-1 are the same node, listed once); a side of 1
// gives none. Every node has the same degree.
type TorusGraph struct {
	n      int
	sides  []int
	stride []uint64    // stride[i] = sides[0]·…·sides[i-1]
	slots  []torusSlot // neighbour index k → dimension and direction
}

type torusSlot struct {
	dim int
	up  bool // +1 (true) or -1 (false)
}

// Torus returns the torus with the given sides (at least one, each ≥ 1, the
// product at most MaxNodes). Its name is "torus:" followed by the sides
// joined by "x" in the order given, for example "torus:8x8x8".
func Torus(sides ...int) (*TorusGraph, error) {
	if len(sides) == 0 {
		return nil, fmt.Errorf("topology: torus needs at least one side: %w", gossip.ErrInvalidConfig)
	}
	g := &TorusGraph{n: 1, sides: append([]int(nil), sides...), stride: make([]uint64, len(sides))}
	for i, s := range sides {
		if s < 1 {
			return nil, fmt.Errorf("topology: torus side %d is %d, want ≥ 1: %w", i, s, gossip.ErrInvalidConfig)
		}
		if int64(s) > MaxNodes/int64(g.n) {
			return nil, fmt.Errorf("topology: torus %s has more than %d nodes: %w", joinSides(sides), int64(MaxNodes), gossip.ErrInvalidConfig)
		}
		g.stride[i] = uint64(g.n)
		g.n *= s
		switch {
		case s >= 3:
			g.slots = append(g.slots, torusSlot{i, true}, torusSlot{i, false})
		case s == 2:
			g.slots = append(g.slots, torusSlot{i, true})
		}
	}
	return g, nil
}

// TorusN returns a three-dimensional torus on n ≥ 1 nodes with sides
// a ≤ b ≤ c, a·b·c = n, chosen to minimise c/a (the most cube-like box);
// among boxes with the same c/a the one with the smallest c. For example
// 27 → 3x3x3, 64 → 4x4x4, 512 → 8x8x8, 32 → 2x4x4, 1024 → 8x8x16, and a prime
// p → 1x1xp (which is a ring).
func TorusN(n int) (*TorusGraph, error) {
	if err := checkSize("torus", n); err != nil {
		return nil, err
	}
	a, b, c := boxSides(n)
	return Torus(a, b, c)
}

// boxSides returns a ≤ b ≤ c with a·b·c = n minimising c/a, then c.
func boxSides(n int) (a, b, c int) {
	a, b, c = 1, 1, n
	for x := 1; x*x*x <= n; x++ {
		if n%x != 0 {
			continue
		}
		m := n / x
		for y := x; y*y <= m; y++ {
			if m%y != 0 {
				continue
			}
			z := m / y
			// z/x < c/a, compared without division.
			if z*a < c*x || (z*a == c*x && z < c) {
				a, b, c = x, y, z
			}
		}
	}
	return a, b, c
}

func joinSides(sides []int) string {
	parts := make([]string, len(sides))
	for i, s := range sides {
		parts[i] = strconv.Itoa(s)
	}
	return strings.Join(parts, "x")
}

// Sides returns a copy of the sides, sides[0] varying fastest in node ids.
func (g *TorusGraph) Sides() []int { return append([]int(nil), g.sides...) }

// Len returns the product of the sides.
func (g *TorusGraph) Len() int { return g.n }

// Degree returns the number of sides ≥ 3 times 2 plus the number of sides
// equal to 2; it is the same for every node.
func (g *TorusGraph) Degree(v gossip.NodeID) int {
	checkNode("torus", g.n, v)
	return len(g.slots)
}

// Neighbor returns the k-th neighbour of v in the order of the type's
// documentation: dimension by dimension, +1 before -1.
func (g *TorusGraph) Neighbor(v gossip.NodeID, k int) gossip.NodeID {
	checkNode("torus", g.n, v)
	checkSlot("torus", v, k, len(g.slots))
	s := g.slots[k]
	side, step := uint64(g.sides[s.dim]), g.stride[s.dim]
	c := uint64(v) / step % side
	w := uint64(v)
	switch {
	case s.up && c+1 == side:
		w -= (side - 1) * step
	case s.up:
		w += step
	case c == 0:
		w += (side - 1) * step
	default:
		w -= step
	}
	return gossip.NodeID(w)
}

// Coords returns the coordinates of v, coordinate i in [0, sides[i]).
func (g *TorusGraph) Coords(v gossip.NodeID) []int {
	checkNode("torus", g.n, v)
	out := make([]int, len(g.sides))
	for i, s := range g.sides {
		out[i] = int(uint64(v) / g.stride[i] % uint64(s))
	}
	return out
}

// Name returns "torus:" and the sides joined by "x", for example
// "torus:2x4x4".
func (g *TorusGraph) Name() string { return "torus:" + joinSides(g.sides) }

// Directed returns false.
func (g *TorusGraph) Directed() bool { return false }

// RingGraph is the cycle on n nodes. Build it with [Ring].
type RingGraph struct{ n int }

// Ring returns the cycle on n ≥ 1 nodes. Node v's neighbours are v+1 then
// v-1 (mod n); with n = 2 they coincide and are listed once, and with n = 1
// there are none. It is the one-dimensional Torus(n) under another name.
func Ring(n int) (*RingGraph, error) {
	if err := checkSize("ring", n); err != nil {
		return nil, err
	}
	return &RingGraph{n: n}, nil
}

// Len returns n.
func (g *RingGraph) Len() int { return g.n }

// Degree returns 2, or n-1 when n < 3.
func (g *RingGraph) Degree(v gossip.NodeID) int {
	checkNode("ring", g.n, v)
	return min(g.n-1, 2)
}

// Neighbor returns v+1 (k = 0) or v-1 (k = 1), mod n.
func (g *RingGraph) Neighbor(v gossip.NodeID, k int) gossip.NodeID {
	checkNode("ring", g.n, v)
	checkSlot("ring", v, k, min(g.n-1, 2))
	n := uint64(g.n)
	if k == 0 {
		return gossip.NodeID((uint64(v) + 1) % n)
	}
	return gossip.NodeID((uint64(v) + n - 1) % n)
}

// Name returns "ring".
func (g *RingGraph) Name() string { return "ring" }

// Directed returns false.
func (g *RingGraph) Directed() bool { return false }
