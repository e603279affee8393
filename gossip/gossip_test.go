package gossip_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// ring is a tiny overlay for tests; package topology has the real ones.
type ring int

func (r ring) Len() int                 { return int(r) }
func (r ring) Degree(gossip.NodeID) int { return 2 }
func (r ring) Neighbor(v gossip.NodeID, k int) gossip.NodeID {
	if k == 0 {
		return gossip.NodeID((int(v) + 1) % int(r))
	}
	return gossip.NodeID((int(v) + int(r) - 1) % int(r))
}

func TestConfigValidate(t *testing.T) {
	good := gossip.Config{ID: 2, Overlay: ring(4), Value: []float64{1, 2}}
	require.NoError(t, good.Validate())

	cases := []struct {
		name string
		edit func(*gossip.Config)
		want error
	}{
		{"no overlay", func(c *gossip.Config) { c.Overlay = nil }, gossip.ErrInvalidConfig},
		{"empty overlay", func(c *gossip.Config) { c.Overlay = ring(0) }, gossip.ErrInvalidConfig},
		{"id out of range", func(c *gossip.Config) { c.ID = 4 }, gossip.ErrInvalidConfig},
		{"empty value", func(c *gossip.Config) { c.Value = nil }, gossip.ErrLength},
		{"NaN input", func(c *gossip.Config) { c.Value = []float64{1, math.NaN()} }, gossip.ErrNotFinite},
		{"Inf input", func(c *gossip.Config) { c.Value = []float64{math.Inf(-1)} }, gossip.ErrNotFinite},
		{"bad mode", func(c *gossip.Config) { c.Mode = 7 }, gossip.ErrInvalidConfig},
		{"negative tau", func(c *gossip.Config) { c.Tau = -1 }, gossip.ErrInvalidConfig},
		{"NaN tau", func(c *gossip.Config) { c.Tau = math.NaN() }, gossip.ErrInvalidConfig},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.edit(&c)
			err := c.Validate()
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.want)
			assert.Contains(t, err.Error(), "gossip:")
		})
	}
}

func TestWeightModes(t *testing.T) {
	c := gossip.Config{Overlay: ring(8), Value: []float64{1}}
	assert.Equal(t, 1.0, c.Weight())
	c.Mode = gossip.Sum
	assert.Equal(t, 1.0/8, c.Weight())

	m, err := gossip.ParseWeightMode("sum")
	require.NoError(t, err)
	assert.Equal(t, gossip.Sum, m)
	_, err = gossip.ParseWeightMode("median")
	assert.ErrorIs(t, err, gossip.ErrInvalidConfig)
}

func TestAggregateIsCompensated(t *testing.T) {
	// 1e16 + 1 + … - 1e16: a plain float64 sum loses every 1 (the spacing of
	// float64 at 1e16 is 2), the compensated sum keeps them.
	values := [][]float64{{1e16}, {1}, {1}, {1}, {1}, {-1e16}}
	weights := []float64{1, 1, 1, 1, 1, 1}
	got, err := gossip.Aggregate(values, weights)
	require.NoError(t, err)
	assert.Equal(t, 4.0/6, got[0])
}

func TestAggregateErrors(t *testing.T) {
	_, err := gossip.Aggregate(nil, nil)
	assert.ErrorIs(t, err, gossip.ErrLength)
	_, err = gossip.Aggregate([][]float64{{1, 2}, {3}}, []float64{1, 1})
	assert.ErrorIs(t, err, gossip.ErrLength)
	_, err = gossip.Aggregate([][]float64{{1}, {math.NaN()}}, []float64{1, 1})
	assert.ErrorIs(t, err, gossip.ErrNotFinite)
	_, err = gossip.Aggregate([][]float64{{1}}, []float64{0})
	assert.ErrorIs(t, err, gossip.ErrInvalidConfig)
}

func TestRelError(t *testing.T) {
	assert.Equal(t, 0.0, gossip.RelError([]float64{2, 3}, []float64{2, 3}))
	assert.InDelta(t, 0.5, gossip.RelError([]float64{1, 3}, []float64{2, 3}), 1e-15)
	// Zero exact value: absolute error.
	assert.Equal(t, 0.25, gossip.RelError([]float64{0.25}, []float64{0}))
	assert.True(t, math.IsInf(gossip.RelError([]float64{math.NaN()}, []float64{1}), 1))
	assert.True(t, math.IsInf(gossip.RelError([]float64{1}, []float64{1, 2}), 1))
}

func TestWordNamesAndPayloadLayout(t *testing.T) {
	assert.Equal(t, "value[2]", gossip.Word{Place: gossip.PlaceState, Part: gossip.PartValue, Component: 2}.Name())
	assert.Equal(t, "input.weight", gossip.Word{Place: gossip.PlaceInput, Part: gossip.PartWeight}.Name())
	assert.Equal(t, "flow[3].checksum", gossip.Word{Place: gossip.PlaceFlow, Peer: 3, Part: gossip.PartChecksum}.Name())
	assert.Equal(t, "flow[3]#1.value[0]", gossip.Word{Place: gossip.PlaceFlow, Peer: 3, Slot: 1}.Name())

	p, _, ok := gossip.PayloadPart(gossip.KindCheckedFlow, 2, 3)
	assert.True(t, ok)
	assert.Equal(t, gossip.PartChecksum, p)
	p, c, ok := gossip.PayloadPart(gossip.KindCancelFlow, 2, 4)
	assert.True(t, ok)
	assert.Equal(t, gossip.PartValue, p)
	assert.Equal(t, 1, c)
	_, _, ok = gossip.PayloadPart(gossip.KindPush, 2, 3)
	assert.False(t, ok)
	_, _, ok = gossip.PayloadPart(gossip.KindBroadcast, 2, 0)
	assert.False(t, ok)
}

// TestPartialSums: SumWords names and reaches the words of x…, w in
// place, and AppendRatios divides by the last word into dst's storage.
func TestPartialSums(t *testing.T) {
	y := []float64{3, 6, 1.5}
	var names []string
	for w := range gossip.SumWords(y) {
		names = append(names, w.Name())
		*w.Ptr *= 2
	}
	assert.Equal(t, []string{"value[0]", "value[1]", "weight"}, names)
	assert.Equal(t, []float64{6, 12, 3}, y)
	for range gossip.SumWords(y) {
		break // stopping early must not panic
	}
	dst := make([]float64, 5)
	got := gossip.AppendRatios(dst, y)
	assert.Equal(t, []float64{2, 4}, got)
	assert.Same(t, &dst[0], &got[0])
}

func TestKindNames(t *testing.T) {
	assert.Equal(t, "checked-flow", gossip.KindCheckedFlow.String())
	assert.Equal(t, "kind(200)", gossip.Kind(200).String())
	assert.False(t, gossip.Kind(200).Valid())
	assert.False(t, gossip.KindInvalid.Valid())
	assert.True(t, errors.Is(gossip.ErrLength, gossip.ErrLength))
}

func TestCheckHeader(t *testing.T) {
	ok := gossip.Message{Kind: gossip.KindRing, Epoch: 3, To: 2}
	require.NoError(t, gossip.CheckHeader(ok, gossip.KindRing, 3, 2))
	for _, c := range []struct {
		kind  gossip.Kind
		epoch uint64
		to    gossip.NodeID
		want  string
	}{
		{gossip.KindRDB, 3, 2, "kind"},
		{gossip.KindRing, 4, 2, "epoch 3, want 4"},
		{gossip.KindRing, 3, 1, "addressed to 2, this is 1"},
	} {
		err := gossip.CheckHeader(ok, c.kind, c.epoch, c.to)
		require.ErrorIs(t, err, gossip.ErrForeignMessage)
		require.ErrorContains(t, err, c.want)
	}
}
