package pushsum_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
	"github.com/gossipreduce/gossipreduce/pushsum"
)

func asMachine(f func(gossip.Config) (*pushsum.Machine, error)) func(gossip.Config) (gossip.Machine, error) {
	return func(c gossip.Config) (gossip.Machine, error) { return f(c) }
}

// totalMass sums (x, w) over all machines.
func totalMass(t *testing.T, ms []gossip.Machine) (x, w float64) {
	t.Helper()
	for _, m := range ms {
		mx, mw := m.(*pushsum.Machine).Mass()
		x += mx[0]
		w += mw
	}
	return x, w
}

func TestAsyncConvergesWithVectors(t *testing.T) {
	for _, mode := range []gossip.WeightMode{gossip.Average, gossip.Sum} {
		t.Run(mode.String(), func(t *testing.T) {
			overlay := gossiptest.Hypercube(4)
			inputs := gossiptest.Inputs(16, 3, 1)
			ms, err := gossiptest.Build(overlay, inputs, mode, 7, asMachine(pushsum.New))
			require.NoError(t, err)
			weights := make([]float64, 16)
			for i := range weights {
				weights[i] = 1
				if mode == gossip.Sum {
					weights[i] = 1.0 / 16
				}
			}
			exact, err := gossip.Aggregate(inputs, weights)
			require.NoError(t, err)

			net := gossiptest.NewNet(ms, 3)
			net.Start()
			// 1e-12 is well above the rounding floor of Push-Sum at N = 16
			// (a few hundred ulps) and far below the initial error (~1).
			require.NoError(t, net.RunUntil(200000, func() bool { return net.MaxError(exact) <= 1e-12 }))
			// One send per receive: the number in flight never changes.
			assert.Equal(t, 16, net.InFlight())
		})
	}
}

func TestMassIsConserved(t *testing.T) {
	overlay := gossiptest.Complete(8)
	inputs := gossiptest.Inputs(8, 1, 2)
	ms, err := gossiptest.Build(overlay, inputs, gossip.Average, 1, asMachine(pushsum.NewIterative))
	require.NoError(t, err)
	var want float64
	for _, in := range inputs {
		want += in[0]
	}
	net := gossiptest.NewNet(ms, 9)
	for range 100 {
		for i := range ms {
			net.Tick(gossip.NodeID(i))
		}
		for net.InFlight() > 0 {
			_, err := net.DeliverOne()
			require.NoError(t, err)
		}
		x, w := totalMass(t, ms)
		// Halving is exact and each addition rounds once: 100 rounds of 16
		// sends stay within a few hundred ulps of the total.
		assert.InDelta(t, want, x, 1e-12)
		assert.InDelta(t, 8.0, w, 1e-12)
	}
}

func TestIterativeOnlySendsOnTick(t *testing.T) {
	cfg := gossip.Config{ID: 0, Overlay: gossiptest.Ring(4), Value: []float64{4}}
	m, err := pushsum.NewIterative(cfg)
	require.NoError(t, err)
	out := m.Tick(nil)
	require.Len(t, out, 1)
	assert.Equal(t, []float64{2, 0.5}, out[0].Payload)
	reply, err := m.Step(gossip.Message{From: 1, To: 0, Kind: gossip.KindPush, Payload: []float64{1, 1}}, nil)
	require.NoError(t, err)
	assert.Empty(t, reply, "Algorithm 2 absorbs without answering")
	assert.Equal(t, []float64{3.0 / 1.5}, m.Estimate(nil))
}

func TestBadConfig(t *testing.T) {
	_, err := pushsum.New(gossip.Config{Overlay: gossiptest.Ring(3), Value: []float64{math.NaN()}})
	assert.ErrorIs(t, err, gossip.ErrNotFinite)
	_, err = pushsum.New(gossip.Config{Value: []float64{1}})
	assert.ErrorIs(t, err, gossip.ErrInvalidConfig)
}

func TestExcludeNeverSendsToPeer(t *testing.T) {
	m, err := pushsum.New(gossip.Config{ID: 0, Overlay: gossiptest.Complete(4), Value: []float64{1}})
	require.NoError(t, err)
	m.Exclude(2)
	m.Exclude(2)  // twice: no effect
	m.Exclude(0)  // itself, not a neighbour: no effect
	m.Exclude(99) // not in the group: no effect
	seen := map[gossip.NodeID]int{}
	for range 300 {
		for _, msg := range m.Tick(nil) {
			seen[msg.To]++
		}
	}
	assert.Zero(t, seen[2])
	assert.Positive(t, seen[1])
	assert.Positive(t, seen[3])
	m.Exclude(1)
	m.Exclude(3)
	assert.Empty(t, m.Tick(nil), "no live neighbour: nothing to send")
}

func TestWordsNameTheState(t *testing.T) {
	m, err := pushsum.New(gossip.Config{Overlay: gossiptest.Ring(3), Value: []float64{1, 2}})
	require.NoError(t, err)
	var names []string
	for w := range m.Words() {
		names = append(names, w.Name())
	}
	assert.Equal(t, []string{"value[0]", "value[1]", "weight"}, names)
	for w := range m.Words() {
		if w.Part == gossip.PartWeight {
			*w.Ptr = 2
		}
	}
	assert.Equal(t, []float64{0.5, 1}, m.Estimate(nil))
}
