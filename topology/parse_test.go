package topology_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/topology"
)

func TestParseRoundTrip(t *testing.T) {
	cases := []struct {
		spec string
		n    int
		name string
	}{
		{"complete", 9, "complete"},
		{"hypercube", 64, "hypercube"},
		{"torus", 64, "torus:4x4x4"},
		{"torus", 32, "torus:2x4x4"},
		{"torus", 13, "torus:1x1x13"},
		{"torus:8x8x8", 0, "torus:8x8x8"},
		{"torus:8x8x8", 512, "torus:8x8x8"},
		{"torus:8x8", 0, "torus:8x8"},
		{"torus:5", 5, "torus:5"},
		{"torus:4x1x2x3", 0, "torus:4x1x2x3"},
		{"dhypercube", 32, "dhypercube"},
		{"bmg", 100, "bmg"},
		{"ring", 17, "ring"},
		{"  HyperCube ", 16, "hypercube"},
		{"Torus:2X3", 0, "torus:2x3"},
	}
	for _, c := range cases {
		g, err := topology.Parse(c.spec, c.n)
		require.NoError(t, err, c.spec)
		assert.Equal(t, c.name, g.Name(), c.spec)
		if c.n != 0 {
			assert.Equal(t, c.n, g.Len(), c.spec)
		}
		// Name() parses back to the same graph, with n given or (torus)
		// left to the sides.
		for _, n := range []int{g.Len(), 0} {
			if n == 0 && !isTorus(g) {
				continue
			}
			h, err := topology.Parse(g.Name(), n)
			require.NoError(t, err, "%s n=%d", g.Name(), n)
			require.Equal(t, g.Name(), h.Name())
			require.Equal(t, g.Len(), h.Len())
			require.Equal(t, g.Directed(), h.Directed())
			for v := range g.Len() {
				require.Equal(t, topology.Neighbors(g, gossip.NodeID(v)), topology.Neighbors(h, gossip.NodeID(v)))
			}
		}
	}
}

func isTorus(g topology.Graph) bool {
	_, ok := g.(*topology.TorusGraph)
	return ok
}

func TestNamesAllParse(t *testing.T) {
	names := topology.Names()
	assert.Equal(t, []string{"complete", "hypercube", "torus", "dhypercube", "bmg", "ring"}, names)
	for _, name := range names {
		g, err := topology.Parse(name, 64)
		require.NoError(t, err, name)
		assert.Equal(t, 64, g.Len(), name)
	}
	names[0] = "changed"
	assert.Equal(t, "complete", topology.Names()[0], "Names returns a fresh slice")
}

func TestParseErrors(t *testing.T) {
	t.Run("unknown", func(t *testing.T) {
		for _, spec := range []string{"foo", "", "tori", "hypercubes", "foo:3"} {
			_, err := topology.Parse(spec, 16)
			require.ErrorIs(t, err, topology.ErrUnknownTopology, "%q", spec)
			msg := err.Error()
			assert.Contains(t, msg, "topology: unknown topology")
			for _, name := range topology.Names() {
				assert.Contains(t, msg, name, "the error lists the known names")
			}
		}
		assert.Equal(t, "topology: unknown topology", topology.ErrUnknownTopology.Error())
	})
	t.Run("malformed", func(t *testing.T) {
		for _, c := range []struct{ spec, say string }{
			{"torus:8xx8", `side 1 is ""`},
			{"torus:0x4", `side 0 is "0"`},
			{"torus:-2", `side 0 is "-2"`},
			{"torus:", `side 0 is ""`},
			{"torus:8x", `side 1 is ""`},
			{"torus:axb", `side 0 is "a"`},
			{"torus:8 x8", `side 0 is "8 "`},
			{"hypercube:3", "only torus takes parameters"},
			{"torus:65536x65536x2", "more than"},
		} {
			_, err := topology.Parse(c.spec, 0)
			require.ErrorIs(t, err, gossip.ErrInvalidConfig, c.spec)
			assert.NotErrorIs(t, err, topology.ErrUnknownTopology, c.spec)
			assert.Contains(t, err.Error(), c.say, c.spec)
		}
	})
	t.Run("sizes", func(t *testing.T) {
		for _, c := range []struct {
			spec string
			n    int
			say  string
		}{
			{"hypercube", 100, "nearest: 64 or 128"},
			{"dhypercube", 100, "nearest: 64 or 128"},
			{"torus:8x8x8", 500, "torus:8x8x8 has 512 nodes, not 500"},
			{"torus:8x8x8", -1, "not -1"},
			{"complete", 0, "at least 1 node"},
			{"torus", 0, "at least 1 node"},
			{"bmg", -3, "at least 1 node"},
			{"ring", 0, "at least 1 node"},
		} {
			_, err := topology.Parse(c.spec, c.n)
			require.ErrorIs(t, err, gossip.ErrInvalidConfig, "%s n=%d", c.spec, c.n)
			assert.Contains(t, err.Error(), c.say, "%s n=%d", c.spec, c.n)
		}
	})
	t.Run("nil graph on error", func(t *testing.T) {
		g, err := topology.Parse("hypercube", 3)
		require.Error(t, err)
		assert.Nil(t, g, "a failed Parse returns a nil interface, not a typed nil")
	})
}
