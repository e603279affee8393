package topology_test

import (
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
		{"complete", 50, 1},
		{"hypercube", 64, 6},
		{"hypercube", 1, 0},
		{"torus:4x4x4", 0, 6},
		{"torus:5x3x2", 0, 2 + 1 + 1},
		{"ring", 10, 5},
		{"ring", 11, 5},
		{"bmg", 16, 2}, // offsets ±1, ±2, ±4, ±8: any of 0…15 in two hops
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
}
