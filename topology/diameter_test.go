package topology_test

import (
	"flag"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/topology"
)

func TestDiameter(t *testing.T) {
	for _, tc := range []struct {
		spec string
		n    int
		want int
	}{
		{"complete", 1, 0},
		{"complete", 2, 1},
		{"complete", 50, 1},
		{"hypercube", 64, 6},
		{"hypercube", 1, 0},
		{"torus:4x4x4", 0, 6},
		{"torus:5x3x2", 0, 2 + 1 + 1},
		{"torus:1x1x1", 0, 0},
		{"torus:2x2x2x2", 0, 4},
		{"torus:1x7x1x2", 0, 3 + 1},
		{"ring", 1, 0},
		{"ring", 2, 1},
		{"ring", 10, 5},
		{"ring", 11, 5},
		{"bmg", 1, 0},
		{"bmg", 16, 2}, // offsets ±1, ±2, ±4, ±8: any of 0…15 in two hops
		{"dhypercube", 1, 0},
	} {
		g, err := topology.Parse(tc.spec, tc.n)
		require.NoError(t, err)
		d, err := topology.Diameter(g)
		require.NoError(t, err, tc.spec)
		assert.Equal(t, tc.want, d, "%s n=%d", tc.spec, tc.n)
	}
	g, err := topology.Parse("dhypercube", 16)
	require.NoError(t, err)
	_, err = topology.Diameter(g)
	assert.ErrorIs(t, err, gossip.ErrInvalidConfig, "acyclic: the sink reaches nobody")
	assert.EqualError(t, err, "topology: dhypercube: invalid configuration: node 0 reaches only 1 of 16 nodes")
}

// searchSources is how many sources the reference search in checkDiameter
// uses: every node while that costs at most about 2^20 neighbour visits, and
// fewer (at least node 0) on denser graphs. One source suffices for the
// vertex-transitive overlays of this package, all sources make the check
// independent of that claim.
func searchSources(g topology.Graph) int {
	n := g.Len()
	visits := max(n*g.Degree(0), n)
	return min(n, max(1, (1<<20)/visits))
}

// checkDiameter asserts that Diameter(g), which asks g's own Diameter
// method, agrees with the breadth-first search from the first sources nodes,
// result or error.
func checkDiameter(t *testing.T, g topology.Graph, sources int) {
	t.Helper()
	want, wantErr := topology.SearchDiameter(g, sources)
	got, err := topology.Diameter(g)
	if wantErr != nil {
		require.Error(t, err, "%s on %d nodes: the search fails with %v", g.Name(), g.Len(), wantErr)
		require.ErrorIs(t, err, gossip.ErrInvalidConfig)
		require.Equal(t, wantErr.Error(), err.Error(), "%s on %d nodes", g.Name(), g.Len())
		return
	}
	require.NoError(t, err, "%s on %d nodes", g.Name(), g.Len())
	require.Equal(t, want, got, "%s on %d nodes, searched from %d sources", g.Name(), g.Len(), sources)
}

// TestDiameterMatchesSearch checks every overlay's closed form (or, for the
// binomial graph, its own search over the offsets) against the general
// breadth-first search over Degree and Neighbor, so that the formulas cannot
// drift from the neighbour functions.
func TestDiameterMatchesSearch(t *testing.T) {
	for _, spec := range topology.Names() {
		t.Run(spec, func(t *testing.T) {
			t.Parallel()
			sizes := make([]int, 0, 320)
			for n := 1; n <= 300; n++ {
				sizes = append(sizes, n)
			}
			sizes = append(sizes, 343, 512, 1000, 1024, 4096, 4099, 32768, 65536, 65537)
			checked := 0
			for _, n := range sizes {
				g, err := topology.Parse(spec, n)
				if err != nil {
					require.ErrorIs(t, err, gossip.ErrInvalidConfig, "%s n=%d", spec, n)
					continue
				}
				if n > 4096 && g.Degree(0) > 64 {
					continue // one search of the complete graph is N² visits
				}
				checkDiameter(t, g, searchSources(g))
				checked++
			}
			assert.GreaterOrEqual(t, checked, 9, "%s: too few sizes accepted", spec)
		})
	}
}

// TestTorusDiameterMatchesSearch checks the torus formula on every shape of
// one to three dimensions with sides 1 … 7, and on some larger and
// higher-dimensional ones.
func TestTorusDiameterMatchesSearch(t *testing.T) {
	var shapes [][]int
	for a := 1; a <= 7; a++ {
		shapes = append(shapes, []int{a})
		for b := 1; b <= 7; b++ {
			shapes = append(shapes, []int{a, b})
			for c := 1; c <= 7; c++ {
				shapes = append(shapes, []int{a, b, c})
			}
		}
	}
	shapes = append(shapes,
		[]int{1, 1, 1, 1}, []int{2, 2, 2, 2}, []int{3, 2, 1, 4}, []int{5, 1, 5, 1}, []int{2, 6, 1, 3, 2},
		[]int{3, 3, 3, 3, 3}, []int{2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, []int{1, 1000}, []int{1000, 1},
		[]int{2, 999}, []int{16, 16, 16}, []int{7, 9, 11, 2}, []int{32, 32, 32}, []int{64, 128, 128},
	)
	for _, sides := range shapes {
		g, err := topology.Torus(sides...)
		require.NoError(t, err, "%v", sides)
		checkDiameter(t, g, searchSources(g))
	}
}

func TestDirectedHypercubeDiameter(t *testing.T) {
	for d := 0; d <= 12; d++ {
		g, err := topology.DirectedHypercube(1 << d)
		require.NoError(t, err)
		checkDiameter(t, g, g.Len())
	}
	g, err := topology.DirectedHypercube(1 << 32)
	require.NoError(t, err)
	_, err = topology.Diameter(g)
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	assert.EqualError(t, err, "topology: dhypercube: invalid configuration: node 0 reaches only 1 of 4294967296 nodes")
}

// TestEveryOverlayKnowsItsDiameter checks that no overlay of this package
// takes the all-pairs search, and that the closed forms cost nothing even on
// the largest graphs.
func TestEveryOverlayKnowsItsDiameter(t *testing.T) {
	for _, spec := range topology.Names() {
		g, err := topology.Parse(spec, 8)
		require.NoError(t, err)
		_, ok := g.(interface{ Diameter() (int, error) })
		assert.True(t, ok, "%s has no Diameter method: Diameter would search from every node", spec)
	}
	c, err := topology.Complete(topology.MaxNodes)
	require.NoError(t, err)
	h, err := topology.Hypercube(topology.MaxNodes)
	require.NoError(t, err)
	tr, err := topology.Torus(1<<16, 1<<15, 2)
	require.NoError(t, err)
	r, err := topology.Ring(topology.MaxNodes)
	require.NoError(t, err)
	for _, tc := range []struct {
		g    topology.Graph
		want int
	}{{c, 1}, {h, 32}, {tr, 1<<15 + 1<<14 + 1}, {r, 1 << 31}} {
		var d int
		allocs := testing.AllocsPerRun(100, func() {
			d, err = topology.Diameter(tc.g)
		})
		require.NoError(t, err, tc.g.Name())
		assert.Equal(t, tc.want, d, tc.g.Name())
		assert.Zero(t, allocs, "%s: the diameter is a formula", tc.g.Name())
	}
}

func TestDiameterFallsBackToSearch(t *testing.T) {
	for n := 1; n <= 40; n++ {
		d, err := topology.Diameter(pathGraph{n})
		require.NoError(t, err)
		assert.Equal(t, n-1, d, "path of %d nodes", n)
	}
	for leaves, want := range []int{0, 1, 2, 2, 2} {
		d, err := topology.Diameter(starGraph{leaves})
		require.NoError(t, err)
		assert.Equal(t, want, d, "star with %d leaves", leaves)
	}
	_, err := topology.Diameter(twoRings{n: 5})
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	assert.EqualError(t, err, "topology: tworings: invalid configuration: node 0 reaches only 5 of 10 nodes")
	_, err = topology.Diameter(pathGraph{4097})
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "topology: diameter of path4097 with 4097 nodes")
}

var slowBench = flag.Bool("topology.slowbench", false,
	"run the benchmarks that search the complete graph of 65536 nodes (10 to 15 s each)")

// BenchmarkDiameter compares Diameter ("diameter": the graph's own method)
// with one breadth-first search from node 0 ("bfs"), which is what Diameter
// did for these vertex-transitive overlays before they had closed forms, and
// for the 4096-node hypercube with the search from every node ("bfs-all"),
// what it does for a graph it knows nothing about.
func BenchmarkDiameter(b *testing.B) {
	for _, spec := range []string{"complete", "hypercube", "torus", "ring", "bmg"} {
		for _, n := range []int{4096, 65536} {
			g := mustParse(b, spec, n)
			name := fmt.Sprintf("%s-%d", spec, n)
			b.Run(name+"/diameter", func(b *testing.B) {
				for b.Loop() {
					if _, err := topology.Diameter(g); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(name+"/bfs", func(b *testing.B) {
				if spec == "complete" && n > 4096 && !*slowBench {
					b.Skip("N² neighbour visits; -topology.slowbench runs it")
				}
				for b.Loop() {
					if _, err := topology.SearchDiameter(g, 1); err != nil {
						b.Fatal(err)
					}
				}
			})
			if spec == "hypercube" && n == 4096 {
				b.Run(name+"/bfs-all", func(b *testing.B) {
					for b.Loop() {
						if _, err := topology.SearchDiameter(g, n); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}
