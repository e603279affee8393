package central_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/central"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
)

func build(c gossip.Config) (gossip.Machine, error) { return central.New(c) }

func TestGatherAndPublish(t *testing.T) {
	for _, n := range []int{1, 2, 7, 64} {
		inputs := gossiptest.Inputs(n, 2, 1)
		ms, err := gossiptest.Build(gossiptest.Complete(n), inputs, gossip.Average, 1, build)
		require.NoError(t, err)
		net := gossiptest.NewNet(ms, 2)
		net.Start()
		require.NoError(t, net.RunUntil(10*n, func() bool { return net.InFlight() == 0 }))
		first := ms[0].Estimate(nil)
		for i, m := range ms {
			require.True(t, m.(gossip.Finisher).Done(), "n=%d node %d", n, i)
			got := m.Estimate(nil)
			for c := range got {
				assert.Equal(t, math.Float64bits(first[c]), math.Float64bits(got[c]), "bitwise the same")
			}
		}
		assert.Equal(t, 2*(n-1), net.Delivered, "n-1 values in, n-1 results out")
	}
}

func TestSurvivesLossByResending(t *testing.T) {
	inputs := gossiptest.Inputs(16, 1, 3)
	ms, err := gossiptest.Build(gossiptest.Complete(16), inputs, gossip.Average, 1, build)
	require.NoError(t, err)
	net := gossiptest.NewNet(ms, 4)
	dropped := 0
	net.Drop = func(gossip.Message) bool { dropped++; return dropped%3 == 0 }
	net.Start()
	done := func() bool {
		for _, m := range ms {
			if !m.(gossip.Finisher).Done() {
				return false
			}
		}
		return true
	}
	for range 50 {
		if done() {
			break
		}
		for net.InFlight() > 0 {
			_, err := net.DeliverOne()
			require.NoError(t, err)
		}
		for i := range ms {
			net.Tick(gossip.NodeID(i))
		}
	}
	assert.True(t, done())
}

func TestRejectsForeign(t *testing.T) {
	m, err := central.New(gossip.Config{ID: 0, Overlay: gossiptest.Complete(3), Value: []float64{1}})
	require.NoError(t, err)
	_, err = m.Step(gossip.Message{From: 1, To: 0, Kind: gossip.KindPush, Payload: []float64{1, 1}}, nil)
	assert.ErrorIs(t, err, gossip.ErrForeignMessage)
	_, err = m.Step(gossip.Message{From: 1, To: 0, Kind: gossip.KindCentral, Payload: []float64{1}}, nil)
	assert.ErrorIs(t, err, gossip.ErrLength)
	_, err = m.Step(gossip.Message{From: 9, To: 0, Kind: gossip.KindCentral, Payload: []float64{1, 1}}, nil)
	assert.ErrorIs(t, err, gossip.ErrUnknownPeer)
	_, err = m.Step(gossip.Message{From: 1, To: 0, Kind: gossip.KindCentral, Tag: 1, Payload: []float64{1, 1}}, nil)
	assert.ErrorIs(t, err, gossip.ErrForeignMessage, "a result sent to the root")
}
