package broadcast_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/broadcast"
	"github.com/gossipreduce/gossipreduce/broadcast/internal/plantest"
)

// A plan resolves its defaults: the synchronized start is the tree's
// deadline or T+L+o, gossip and fail-proof correction are synchronized,
// opportunistic distances never wrap past the ring.
func TestPlanDefaults(t *testing.T) {
	p := plantest.MustPlan(t, "tree:lame:2", "checked", 100, broadcast.LogP{L: 2, O: 1})
	st, ok := p.CorrectionStart()
	require.True(t, ok)
	assert.Equal(t, p.Tree().Deadline(broadcast.LogP{L: 2, O: 1}), st)
	_, ok = plantest.MustPlan(t, "tree:lame:2", "checked-overlapped", 100, broadcast.LogP{L: 2, O: 1}).CorrectionStart()
	assert.False(t, ok)
	g := plantest.MustPlan(t, "gossip", "opportunistic:2", 1024, broadcast.LogP{L: 1, O: 1})
	T, k := g.GossipTime()
	assert.Equal(t, int64(24), T, "equation 3 with a margin of one O")
	assert.Equal(t, 4, k)
	st, ok = g.CorrectionStart()
	require.True(t, ok)
	assert.Equal(t, T+2, st, "T + L + o")
	small := plantest.MustPlan(t, "tree:binomial", "opportunistic:5", 4, broadcast.LogP{L: 2, O: 1})
	var cs broadcast.CorrectionState
	var sends []int // left negative
	for {
		left, d, ok := cs.Next(small)
		if !ok {
			break
		}
		if left {
			d = -d
		}
		sends = append(sends, d)
	}
	assert.Equal(t, []int{-1, 1, -2}, sends, "left distances 1, 2 (2 ≡ -2 mod 4), right 1, alternating")
	fp := plantest.MustPlan(t, "tree:binomial", "failproof:1", 64, broadcast.LogP{L: 2, O: 1}).Spec()
	assert.True(t, fp.Correction.Synchronized)
	assert.Equal(t, int64(2*64*1+2*4), fp.SOSTimeout, "2·N·o + 2(2o+L)")
	ack := plantest.MustPlan(t, "ack:binomial", "none", 64, broadcast.LogP{L: 2, O: 1}).Spec()
	assert.Positive(t, ack.AckTimeout)
}
