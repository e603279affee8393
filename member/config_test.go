package member_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/algo"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/member"
)

// TestOverlay: exchange falls back on the binomial graph where the
// complete overlay is asked for, and on any other overlay as asked; the
// gossip algorithms run on what is asked.
func TestOverlay(t *testing.T) {
	spec := func(name string) algo.Spec {
		s, err := algo.Lookup(name)
		require.NoError(t, err)
		return s
	}
	for _, c := range []struct {
		topology, algo, want string
		n                    int
	}{
		{"complete", "exchange", "bmg", 100},
		{"complete", "exchange", "bmg", 2},
		{"hypercube", "exchange", "hypercube", 64},
		{"torus", "exchange", "torus:4x4x4", 64},
		{"complete", "pfcc", "complete", 100},
		{"complete", "rdb", "complete", 100}, // no fallback: no gossip at all
	} {
		g, err := member.Overlay(c.topology, c.n, spec(c.algo))
		require.NoError(t, err)
		assert.Equal(t, c.want, g.Name(), "%s on %s", c.algo, c.topology)
		assert.Equal(t, c.n, g.Len())
	}
	_, err := member.Overlay("moebius", 4, spec("exchange"))
	assert.Error(t, err)
}

// The runtime refuses an algorithm known to return wrong values under its
// faults (algo.Spec.Unsafe: Push-Cancel-Flow as published), with the
// reason, and builds every other.
func TestUnsafeAlgorithmsAreRefused(t *testing.T) {
	refused := 0
	for _, name := range algo.Names() {
		cfg := testConfig(t, 1, 4, name)
		spec := cfg.Algorithm
		_, err := member.New(cfg)
		if spec.Unsafe == "" {
			assert.NoError(t, err, name)
			continue
		}
		refused++
		require.ErrorIs(t, err, gossip.ErrInvalidConfig, name)
		assert.ErrorContains(t, err, spec.Unsafe, name)
	}
	assert.Equal(t, 1, refused, "pcf-published alone")
}
