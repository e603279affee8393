package topology_test

import (
	"fmt"
	"math/bits"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/topology"
)

// checkGraph asserts the properties every overlay of this package has: ids in
// range, no self loops, no repeated neighbour, a symmetric adjacency when
// undirected, and, for each v, exactly the neighbours adjacent(v, w) names
// (a brute-force definition independent of the graph's code).
func checkGraph(t *testing.T, g topology.Graph, adjacent func(v, w int) bool) {
	t.Helper()
	// Plain comparisons, and testify only to report a failure: the loops
	// run millions of times and testify's reflection is slow.
	n := g.Len()
	edges := make(map[[2]int]bool)
	for v := range n {
		nb := topology.Neighbors(g, gossip.NodeID(v))
		require.Len(t, nb, g.Degree(gossip.NodeID(v)), "%s node %d", g.Name(), v)
		seen := make(map[int]bool, len(nb))
		for _, w := range nb {
			switch {
			case int(w) >= n:
				require.Failf(t, "neighbour out of range", "%s: node %d has neighbour %d, n = %d", g.Name(), v, w, n)
			case int(w) == v:
				require.Failf(t, "self loop", "%s: node %d lists itself", g.Name(), v)
			case seen[int(w)]:
				require.Failf(t, "repeated neighbour", "%s: node %d lists %d twice", g.Name(), v, w)
			}
			seen[int(w)] = true
			edges[[2]int{v, int(w)}] = true
		}
		if adjacent != nil && n <= 512 {
			for w := range n {
				if adjacent(v, w) != seen[w] {
					require.Failf(t, "wrong neighbours", "%s on %d nodes: adjacent(%d, %d) = %v but the graph says %v",
						g.Name(), n, v, w, adjacent(v, w), seen[w])
				}
			}
		}
	}
	if !g.Directed() {
		for e := range edges {
			if !edges[[2]int{e[1], e[0]}] {
				require.Failf(t, "asymmetric", "%s: edge %d→%d has no reverse", g.Name(), e[0], e[1])
			}
		}
	}
}

func TestComplete(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 7, 16, 33, 200} {
		g, err := topology.Complete(n)
		require.NoError(t, err)
		assert.Equal(t, n, g.Len())
		assert.Equal(t, "complete", g.Name())
		assert.False(t, g.Directed())
		checkGraph(t, g, func(v, w int) bool { return v != w })
		for v := range n {
			require.Equal(t, n-1, g.Degree(gossip.NodeID(v)))
		}
		assert.True(t, topology.StronglyConnected(g), "complete %d", n)
	}
	g, err := topology.Complete(5)
	require.NoError(t, err)
	// The documented order: ids ascending with v left out.
	assert.Equal(t, []gossip.NodeID{0, 1, 3, 4}, topology.Neighbors(g, 2))
	assert.Equal(t, []gossip.NodeID{1, 2, 3, 4}, topology.Neighbors(g, 0))
	assert.Equal(t, []gossip.NodeID{0, 1, 2, 3}, topology.Neighbors(g, 4))
}

func TestHypercube(t *testing.T) {
	for d := range 11 {
		n := 1 << d
		g, err := topology.Hypercube(n)
		require.NoError(t, err)
		assert.Equal(t, n, g.Len())
		assert.Equal(t, d, g.Dim())
		assert.Equal(t, "hypercube", g.Name())
		checkGraph(t, g, func(v, w int) bool { return bits.OnesCount(uint(v^w)) == 1 })
		for v := range n {
			require.Equal(t, d, g.Degree(gossip.NodeID(v)))
			for k := range d {
				require.Equal(t, gossip.NodeID(v^1<<k), g.Neighbor(gossip.NodeID(v), k))
			}
		}
		assert.True(t, topology.StronglyConnected(g), "hypercube %d", n)
	}
}

func TestHypercubeRejectsNonPowersOfTwo(t *testing.T) {
	for _, c := range []struct{ n, lo, hi int }{{100, 64, 128}, {3, 2, 4}, {1000, 512, 1024}, {65535, 32768, 65536}} {
		_, err := topology.Hypercube(c.n)
		require.ErrorIs(t, err, gossip.ErrInvalidConfig)
		assert.Contains(t, err.Error(), fmt.Sprintf("nearest: %d or %d", c.lo, c.hi))
		assert.Contains(t, err.Error(), "topology: hypercube")
		_, err = topology.DirectedHypercube(c.n)
		require.ErrorIs(t, err, gossip.ErrInvalidConfig)
		assert.Contains(t, err.Error(), fmt.Sprintf("nearest: %d or %d", c.lo, c.hi))
	}
}

func TestOnlyTheHypercubeHasDim(t *testing.T) {
	type dimmer interface{ Dim() int }
	h, err := topology.Hypercube(8)
	require.NoError(t, err)
	_, ok := topology.Graph(h).(dimmer)
	assert.True(t, ok, "the hypercube must have Dim() for the simulator's fast path")
	for _, spec := range []string{"complete", "torus:2x2x2", "dhypercube", "bmg", "ring"} {
		g, err := topology.Parse(spec, 8)
		require.NoError(t, err)
		_, ok := g.(dimmer)
		assert.False(t, ok, "%s must not have Dim(): it is not a hypercube", spec)
	}
}

// torusAdjacent says whether nodes v and w of a torus with the given sides
// differ by ±1 (mod the side) in exactly one coordinate.
func torusAdjacent(sides []int) func(v, w int) bool {
	return func(v, w int) bool {
		diff := 0
		for _, s := range sides {
			a, b := v%s, w%s
			v, w = v/s, w/s
			switch {
			case a == b:
			case (a+1)%s == b || (b+1)%s == a:
				diff++
			default:
				return false
			}
		}
		return diff == 1
	}
}

func TestTorus(t *testing.T) {
	for _, sides := range [][]int{
		{1}, {2}, {3}, {5}, {1, 1}, {2, 2}, {3, 3}, {4, 4}, {2, 5}, {5, 2}, {1, 6}, {6, 1},
		{3, 3, 3}, {4, 4, 4}, {2, 4, 4}, {2, 2, 2}, {1, 1, 7}, {3, 1, 4}, {2, 3, 5},
		{2, 2, 2, 2}, {3, 2, 1, 4}, {3, 3, 3, 3}, {2, 6, 1, 3, 2},
	} {
		g, err := topology.Torus(sides...)
		require.NoError(t, err)
		n, deg := 1, 0
		for _, s := range sides {
			n *= s
			switch {
			case s == 2:
				deg++
			case s >= 3:
				deg += 2
			}
		}
		require.Equal(t, n, g.Len())
		assert.Equal(t, sides, g.Sides())
		checkGraph(t, g, torusAdjacent(sides))
		for v := range n {
			require.Equal(t, deg, g.Degree(gossip.NodeID(v)), "torus %v node %d", sides, v)
		}
		assert.True(t, topology.StronglyConnected(g), "torus %v", sides)
	}
}

func TestTorusCoordinatesAndOrder(t *testing.T) {
	g, err := topology.Torus(4, 3, 2)
	require.NoError(t, err)
	assert.Equal(t, "torus:4x3x2", g.Name())
	// v = c0 + 4·(c1 + 3·c2): sides[0] varies fastest.
	assert.Equal(t, []int{3, 2, 1}, g.Coords(3+4*(2+3*1)))
	assert.Equal(t, []int{1, 0, 0}, g.Coords(1))
	assert.Equal(t, []int{0, 1, 0}, g.Coords(4))
	assert.Equal(t, []int{0, 0, 1}, g.Coords(12))
	// Node (0,0,0): +1 and -1 in dimension 0, then +1 and -1 in dimension
	// 1, then the single neighbour across the side of 2.
	assert.Equal(t, []gossip.NodeID{1, 3, 4, 8, 12}, topology.Neighbors(g, 0))
	// Node (3,2,1) = 23 wraps the other way.
	assert.Equal(t, []gossip.NodeID{20, 22, 15, 19, 11}, topology.Neighbors(g, 23))

	s := g.Sides()
	s[0] = 99
	assert.Equal(t, []int{4, 3, 2}, g.Sides(), "Sides returns a copy")
}

func TestTorusN(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{
		{1, "torus:1x1x1"}, {8, "torus:2x2x2"}, {27, "torus:3x3x3"}, {32, "torus:2x4x4"},
		{64, "torus:4x4x4"}, {125, "torus:5x5x5"}, {216, "torus:6x6x6"}, {512, "torus:8x8x8"},
		{1024, "torus:8x8x16"}, {7, "torus:1x1x7"}, {1009, "torus:1x1x1009"}, {12, "torus:2x2x3"},
		{1 << 20, "torus:64x128x128"},
	} {
		g, err := topology.TorusN(c.n)
		require.NoError(t, err)
		assert.Equal(t, c.want, g.Name(), "TorusN(%d)", c.n)
		assert.Equal(t, c.n, g.Len())
	}
	// Exhaustively: sides sorted, product n, and no box a ≤ b ≤ c with a
	// smaller c/a (compared by cross-multiplying, exactly).
	for n := 1; n <= 600; n++ {
		g, err := topology.TorusN(n)
		require.NoError(t, err)
		s := g.Sides()
		require.Len(t, s, 3)
		require.True(t, s[0] <= s[1] && s[1] <= s[2], "TorusN(%d) = %v not sorted", n, s)
		require.Equal(t, n, s[0]*s[1]*s[2])
		for a := 1; a <= n; a++ {
			for b := a; a*b <= n; b++ {
				if n%(a*b) != 0 || n/(a*b) < b {
					continue
				}
				c := n / (a * b)
				require.LessOrEqual(t, s[2]*a, c*s[0], "TorusN(%d) = %v but %dx%dx%d is more cubic", n, s, a, b, c)
			}
		}
	}
}

func TestRing(t *testing.T) {
	for n := 1; n <= 40; n++ {
		g, err := topology.Ring(n)
		require.NoError(t, err)
		assert.Equal(t, "ring", g.Name())
		checkGraph(t, g, func(v, w int) bool { return v != w && ((v+1)%n == w || (w+1)%n == v) })
		require.Equal(t, min(n-1, 2), g.Degree(0))
		assert.True(t, topology.StronglyConnected(g))
	}
	g, err := topology.Ring(5)
	require.NoError(t, err)
	assert.Equal(t, []gossip.NodeID{1, 4}, topology.Neighbors(g, 0))
	assert.Equal(t, []gossip.NodeID{0, 3}, topology.Neighbors(g, 4))
}

func TestBMG(t *testing.T) {
	isPow2 := func(x int) bool { return x > 0 && x&(x-1) == 0 }
	for n := 1; n <= 300; n++ {
		g, err := topology.BMG(n)
		require.NoError(t, err)
		assert.Equal(t, "bmg", g.Name())
		// w is a neighbour of v iff w - v or v - w (mod n) is a power of
		// two; every power of two below n is some 2^k, k < ⌈log2 n⌉.
		checkGraph(t, g, func(v, w int) bool {
			return v != w && (isPow2((w-v+n)%n) || isPow2((v-w+n)%n))
		})
		d := g.Degree(0)
		for v := range n {
			require.Equal(t, d, g.Degree(gossip.NodeID(v)), "bmg %d is regular", n)
		}
		require.LessOrEqual(t, d, 2*bits.Len(uint(n-1)), "degree ≤ 2⌈log2 n⌉")
		if isPow2(n) && n >= 2 {
			require.Equal(t, 2*bits.Len(uint(n-1))-1, d, "bmg %d: ±n/2 coincide", n)
		}
		assert.True(t, topology.StronglyConnected(g))
	}
	for _, n := range []int{1000, 1024, 4099} {
		g, err := topology.BMG(n)
		require.NoError(t, err)
		checkGraph(t, g, nil)
	}
	g, err := topology.BMG(10)
	require.NoError(t, err)
	// Offsets +1, -1, +2, -2, +4, -4 (+8 = -2 and -8 = +2 mod 10 are repeats).
	assert.Equal(t, []gossip.NodeID{1, 9, 2, 8, 4, 6}, topology.Neighbors(g, 0))
	assert.Equal(t, []gossip.NodeID{8, 6, 9, 5, 1, 3}, topology.Neighbors(g, 7))
	g, err = topology.BMG(7)
	require.NoError(t, err)
	assert.Equal(t, 6, g.Degree(0), "bmg 7 has 2⌈log2 7⌉ distinct offsets")
}

func TestDirectedHypercube(t *testing.T) {
	for d := 0; d <= 12; d++ {
		n := 1 << d
		g, err := topology.DirectedHypercube(n)
		require.NoError(t, err)
		assert.True(t, g.Directed())
		assert.Equal(t, "dhypercube", g.Name())
		checkGraph(t, g, nil)

		// The orientation rule, straight from its definition: u → u^2^k
		// iff bit k of u XOR parity(popcount(u mod 2^k)) = 1.
		out := make([]map[int]bool, n)
		indeg := make([]int, n)
		for v := range n {
			out[v] = map[int]bool{}
			for _, w := range topology.Neighbors(g, gossip.NodeID(v)) {
				out[v][int(w)] = true
				indeg[w]++
			}
		}
		for u := range n {
			for k := range d {
				w := u ^ 1<<k
				want := (u>>k&1)^(bits.OnesCount(uint(u&(1<<k-1)))&1) == 1
				require.Equal(t, want, out[u][w], "d=%d edge %d→%d", d, u, w)
				require.NotEqual(t, out[u][w], out[w][u], "d=%d: edge {%d,%d} must appear in exactly one direction", d, u, w)
			}
		}

		// Acyclic: Kahn's topological sort removes every node.
		left := append([]int(nil), indeg...)
		var queue []int
		for v := range n {
			if left[v] == 0 {
				queue = append(queue, v)
			}
		}
		removed := 0
		for len(queue) > 0 {
			v := queue[0]
			queue = queue[1:]
			removed++
			for w := range out[v] {
				if left[w]--; left[w] == 0 {
					queue = append(queue, w)
				}
			}
		}
		require.Equal(t, n, removed, "d=%d: a directed cycle survives the topological sort", d)

		var sources, sinks []int
		for v := range n {
			if indeg[v] == 0 {
				sources = append(sources, v)
			}
			if g.Degree(gossip.NodeID(v)) == 0 {
				sinks = append(sinks, v)
			}
		}
		if d == 0 {
			assert.Equal(t, []int{0}, sources)
			assert.Equal(t, []int{0}, sinks)
			continue
		}
		assert.Equal(t, []int{1}, sources, "d=%d: the unique source is node 1", d)
		assert.Equal(t, []int{0}, sinks, "d=%d: the unique sink is node 0", d)
		assert.Equal(t, d, g.Degree(1))
		assert.False(t, topology.StronglyConnected(g), "d=%d: a DAG is not strongly connected", d)

		// Domshlak: every node is within d+1 hops of the source, and the
		// sink within d+1 hops of every node.
		assert.LessOrEqual(t, maxDistance(n, 1, func(v int) []int { return keys(out[v]) }), d+1, "d=%d from the source", d)
		in := make([][]int, n)
		for v := range n {
			for w := range out[v] {
				in[w] = append(in[w], v)
			}
		}
		assert.LessOrEqual(t, maxDistance(n, 0, func(v int) []int { return in[v] }), d+1, "d=%d to the sink", d)
	}
}

func keys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// maxDistance returns the largest BFS distance from start, or n if some node
// is unreachable.
func maxDistance(n, start int, next func(int) []int) int {
	dist := make([]int, n)
	for i := range dist {
		dist[i] = -1
	}
	dist[start] = 0
	queue, far := []int{start}, 0
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range next(v) {
			if dist[w] < 0 {
				dist[w] = dist[v] + 1
				far = max(far, dist[w])
				queue = append(queue, w)
			}
		}
	}
	for _, d := range dist {
		if d < 0 {
			return n
		}
	}
	return far
}

func TestInvalidSizes(t *testing.T) {
	ctors := map[string]func(int) (topology.Graph, error){
		"complete":   func(n int) (topology.Graph, error) { return topology.Complete(n) },
		"hypercube":  func(n int) (topology.Graph, error) { return topology.Hypercube(n) },
		"dhypercube": func(n int) (topology.Graph, error) { return topology.DirectedHypercube(n) },
		"torusN":     func(n int) (topology.Graph, error) { return topology.TorusN(n) },
		"bmg":        func(n int) (topology.Graph, error) { return topology.BMG(n) },
		"ring":       func(n int) (topology.Graph, error) { return topology.Ring(n) },
	}
	for name, ctor := range ctors {
		for _, n := range []int{0, -1, -1 << 40, 1<<32 + 1} {
			_, err := ctor(n)
			require.ErrorIs(t, err, gossip.ErrInvalidConfig, "%s(%d)", name, n)
			assert.Contains(t, err.Error(), "topology: ")
		}
	}
	_, err := topology.Torus()
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	_, err = topology.Torus(4, 0, 4)
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "side 1 is 0")
	_, err = topology.Torus(3, -2)
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	_, err = topology.Torus(1<<20, 1<<20)
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "more than")
}

func TestOutOfRangePanicsWithAMessage(t *testing.T) {
	for _, spec := range []string{"complete", "hypercube", "torus", "dhypercube", "bmg", "ring"} {
		g, err := topology.Parse(spec, 8)
		require.NoError(t, err)
		assert.PanicsWithValue(t, fmt.Sprintf("topology: %s: node 8 out of range [0, 8)", spec),
			func() { g.Degree(8) }, spec)
		assert.Panics(t, func() { g.Neighbor(8, 0) }, spec)
		assert.Panics(t, func() { g.Neighbor(3, -1) }, spec)
		assert.Panics(t, func() { g.Neighbor(3, g.Degree(3)) }, spec)
	}
}

func TestLargeGraphsCostNothing(t *testing.T) {
	h, err := topology.Hypercube(1 << 20)
	require.NoError(t, err)
	assert.Equal(t, gossip.NodeID(12345^1<<19), h.Neighbor(12345, 19))
	dh, err := topology.DirectedHypercube(1 << 20)
	require.NoError(t, err)
	b, err := topology.BMG(1 << 16)
	require.NoError(t, err)
	tr, err := topology.TorusN(1 << 20)
	require.NoError(t, err)
	c, err := topology.Complete(1 << 30)
	require.NoError(t, err)
	for _, g := range []topology.Graph{h, dh, b, tr, c} {
		v := gossip.NodeID(g.Len() - 3)
		allocs := testing.AllocsPerRun(100, func() {
			for k := range min(g.Degree(v), 64) {
				_ = g.Neighbor(v, k)
			}
		})
		assert.Zero(t, allocs, "%s: neighbours are computed, not stored", g.Name())
	}
	max32, err := topology.Hypercube(1 << 32)
	require.NoError(t, err)
	assert.Equal(t, gossip.NodeID(1<<32-1), max32.Neighbor(1<<31-1, 31))
}
