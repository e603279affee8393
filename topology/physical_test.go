package topology_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/topology"
)

// bfsHops returns the hop distances from src in the physical torus net,
// found by breadth-first search over its edges: an independent check of
// PhysicalTorus's coordinate arithmetic.
func bfsHops(net topology.Graph, src gossip.NodeID) []int {
	dist := make([]int, net.Len())
	for i := range dist {
		dist[i] = -1
	}
	dist[src] = 0
	queue := []gossip.NodeID{src}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range topology.Neighbors(net, v) {
			if dist[w] < 0 {
				dist[w] = dist[v] + 1
				queue = append(queue, w)
			}
		}
	}
	return dist
}

func TestPhysicalTorusIdentityForA3DTorus(t *testing.T) {
	for _, spec := range []string{"torus", "torus:2x4x4", "torus:1x1x7", "torus:3x5x2"} {
		overlay := mustParse(t, spec, map[string]int{"torus": 512}[spec])
		p, err := topology.NewPhysicalTorus(overlay, 42)
		require.NoError(t, err)
		assert.True(t, p.Identity(), spec)
		assert.Equal(t, overlay.(*topology.TorusGraph).Sides(), p.Sides(), spec)
		for v := range overlay.Len() {
			require.Equal(t, gossip.NodeID(v), p.Position(gossip.NodeID(v)))
			for _, w := range topology.Neighbors(overlay, gossip.NodeID(v)) {
				require.Equal(t, 1, p.Hops(gossip.NodeID(v), w), "%s: neighbourhood-only communication is one hop", spec)
			}
		}
	}
}

func TestPhysicalTorusRandomPlacement(t *testing.T) {
	for _, c := range []struct {
		spec string
		n    int
	}{{"hypercube", 64}, {"complete", 60}, {"bmg", 90}, {"torus:8x8", 0}, {"ring", 30}, {"dhypercube", 32}} {
		overlay := mustParse(t, c.spec, c.n)
		n := overlay.Len()
		p, err := topology.NewPhysicalTorus(overlay, 7)
		require.NoError(t, err)
		assert.False(t, p.Identity(), c.spec)
		assert.Equal(t, uint64(7), p.Seed())
		assert.Equal(t, n, p.Len())
		net, err := topology.TorusN(n)
		require.NoError(t, err)
		assert.Equal(t, net.Sides(), p.Sides(), "the network is TorusN(N)")

		// A permutation, replayable from the seed, different for another
		// seed.
		again, err := topology.NewPhysicalTorus(overlay, 7)
		require.NoError(t, err)
		other, err := topology.NewPhysicalTorus(overlay, 8)
		require.NoError(t, err)
		seen := make([]bool, n)
		moved, differ := 0, 0
		for v := range n {
			pv := p.Position(gossip.NodeID(v))
			require.False(t, seen[pv], "%s: physical node %d used twice", c.spec, pv)
			seen[pv] = true
			require.Equal(t, pv, again.Position(gossip.NodeID(v)), "same seed, same placement")
			if pv != gossip.NodeID(v) {
				moved++
			}
			if pv != other.Position(gossip.NodeID(v)) {
				differ++
			}
		}
		// A uniform permutation of n ≥ 30 fixes about 1 point; the chance
		// that more than half stay put, or that two seeds agree on more
		// than half, is below 1e-10.
		assert.Greater(t, moved, n/2, c.spec)
		assert.Greater(t, differ, n/2, c.spec)

		// Hops equals the breadth-first distance between the physical
		// positions, for every pair; the largest is the diameter.
		far := 0
		for u := range n {
			dist := bfsHops(net, p.Position(gossip.NodeID(u)))
			for v := range n {
				h := p.Hops(gossip.NodeID(u), gossip.NodeID(v))
				if h != dist[p.Position(gossip.NodeID(v))] {
					require.Equal(t, dist[p.Position(gossip.NodeID(v))], h, "%s: hops %d→%d", c.spec, u, v)
				}
				far = max(far, h)
			}
		}
		assert.Equal(t, far, p.Diameter(), c.spec)
	}
}

func TestPhysicalTorusDiameter(t *testing.T) {
	for _, c := range []struct {
		spec string
		n    int
		want int
	}{
		{"torus:8x8x8", 0, 12}, {"torus:2x4x4", 0, 5}, {"torus:1x1x7", 0, 3},
		{"hypercube", 1024, 4 + 4 + 8}, // TorusN(1024) = 8x8x16
		{"complete", 1, 0},
	} {
		p, err := topology.NewPhysicalTorus(mustParse(t, c.spec, c.n), 1)
		require.NoError(t, err)
		assert.Equal(t, c.want, p.Diameter(), c.spec)
	}
}

func TestPhysicalTorusErrors(t *testing.T) {
	big := mustParse(t, "hypercube", 2*topology.MaxPhysicalNodes)
	_, err := topology.NewPhysicalTorus(big, 1)
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "topology: physical torus")

	p, err := topology.NewPhysicalTorus(mustParse(t, "ring", 10), 1)
	require.NoError(t, err)
	assert.Panics(t, func() { p.Hops(0, 10) })
	assert.Panics(t, func() { p.Position(11) })
}
