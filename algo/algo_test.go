package algo_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/algo"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
)

func TestEveryAlgorithmBuildsAndRejectsBadInput(t *testing.T) {
	for _, name := range algo.Names() {
		t.Run(name, func(t *testing.T) {
			m, err := algo.New(name, gossip.Config{ID: 1, Overlay: gossiptest.Hypercube(3), Value: []float64{1, 2}})
			require.NoError(t, err)
			assert.Equal(t, gossip.NodeID(1), m.ID())
			_, err = algo.New(name, gossip.Config{ID: 9, Overlay: gossiptest.Hypercube(3), Value: []float64{1}})
			assert.ErrorIs(t, err, gossip.ErrInvalidConfig)
		})
	}
}

func TestUnknownAlgorithm(t *testing.T) {
	_, err := algo.Lookup("push-magic")
	require.ErrorIs(t, err, gossip.ErrUnknownAlgorithm)
	assert.Contains(t, err.Error(), "ps")
}
