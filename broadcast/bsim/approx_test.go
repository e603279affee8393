package bsim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/broadcast"
	"github.com/gossipreduce/gossipreduce/gossip"
)

// Corrected gossip, Lemma 1 and equations 2-4, N = n = 1024, L = O = 1,
// δ = 6.93·10⁻⁷: c(t) grows fastest around 512 colored (the paper's
// figure 1: "up to around 512 nodes (t ≈ 18)"), and the approximations
// choose T = 24 for OCG, as in the paper, and 27 for CCG: equation 4 is
// minimal at T = 24 and 26, and the paper's tie rule keeps the T that
// withstands the largest reduction in δ, 26 (the paper reports 25, the
// smaller minimiser plus one O).
func TestGossipApproximations(t *testing.T) {
	m := GossipModel{Nodes: 1024, Model: broadcast.LogP{L: 1, O: 1}, Delta: broadcast.DefaultDelta, F: 1}
	c, err := ExpectedColored(m, 40)
	require.NoError(t, err)
	assert.Equal(t, 1.0, c[0])
	assert.Equal(t, 1.0, c[2], "the first message is received at 2O+L = 3")
	assert.InDelta(t, 2.0, c[3], 1e-12, "1 + 1023·(1/1023)")
	fastest := 0
	for i := 1; i < len(c); i++ {
		if c[i]-c[i-1] > c[fastest+1]-c[fastest] {
			fastest = i - 1
		}
	}
	assert.InDelta(t, 18, fastest, 1, "steepest step")
	assert.InDelta(t, 512, c[fastest], 200)
	// The uncolored remainder shrinks by a factor of about e per step once
	// nearly all are colored; at t = 40 it is a few millionths.
	assert.InDelta(t, 1024, c[40], 1e-4)
	ocg, err := OptimalGossipTime(m, GossipOpportunistic)
	require.NoError(t, err)
	assert.Equal(t, 24, ocg.T)
	assert.Equal(t, 23, ocg.ArgMin)
	assert.Equal(t, []int{23, 24}, ocg.Ties)
	ccg, err := OptimalGossipTime(m, GossipChecked)
	require.NoError(t, err)
	assert.Equal(t, 27, ccg.T)
	assert.Equal(t, 26, ccg.ArgMin)
	assert.Equal(t, []int{24, 26}, ccg.Ties)
	// The tie rule: the kept minimiser's K̂ holds for a smaller δ than the
	// other's. Just below the other's tail, the other's K̂ grows and the
	// kept one is the only minimiser left.
	other, err := OptimalGossipTime(GossipModel{Nodes: 1024, Model: m.Model, Delta: 4e-7}, GossipChecked)
	require.NoError(t, err)
	assert.Equal(t, []int{26}, other.Ties, "δ = 4·10⁻⁷ lies between the tails 3.4·10⁻⁷ (T = 26) and 5.9·10⁻⁷ (T = 24)")
	assert.Equal(t, 27, other.T)
	fcg, err := OptimalGossipTime(m, GossipFailProof)
	require.NoError(t, err)
	assert.Greater(t, fcg.T, ccg.T, "fail-proof correction takes longer, so gossip longer")
	// K̂ shrinks as more processes are colored, and the tail is below δ.
	k1, tail1 := MaxGapQuantile(1024, 900, broadcast.DefaultDelta)
	k2, tail2 := MaxGapQuantile(1024, 1020, broadcast.DefaultDelta)
	assert.Greater(t, k1, k2)
	assert.Less(t, tail1, broadcast.DefaultDelta)
	assert.Less(t, tail2, broadcast.DefaultDelta)
	// Everyone colored: no gap.
	k0, _ := MaxGapQuantile(1024, 1024, broadcast.DefaultDelta)
	assert.Zero(t, k0)
	_, err = OptimalGossipTime(GossipModel{Nodes: 1}, GossipChecked)
	assert.ErrorIs(t, err, gossip.ErrInvalidConfig)
	_, err = OptimalGossipTime(GossipModel{Nodes: 100, Delta: 0.1, Model: broadcast.LogP{O: 1}}, GossipFailProof)
	assert.ErrorIs(t, err, gossip.ErrInvalidConfig, "f = 0")
}
