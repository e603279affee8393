package broadcast

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
)

func TestParseScheme(t *testing.T) {
	for in, want := range map[string]Scheme{
		"tree:binomial": {Kind: SchemeTree, Tree: TreeSpec{Kind: Binomial}},
		"tree:kary:4":   {Kind: SchemeTree, Tree: TreeSpec{Kind: KAry, K: 4}},
		"tree:lame:2":   {Kind: SchemeTree, Tree: TreeSpec{Kind: Lame, K: 2}},
		"tree:optimal":  {Kind: SchemeTree, Tree: TreeSpec{Kind: Optimal}},
		"gossip":        {Kind: SchemeGossip},
		"bmg":           {Kind: SchemeBMG},
		"ack:binomial":  {Kind: SchemeAck, Tree: TreeSpec{Kind: Binomial}},
		"ack:kary:3":    {Kind: SchemeAck, Tree: TreeSpec{Kind: KAry, K: 3}},
	} {
		got, err := ParseScheme(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
		assert.Equal(t, in, got.String())
	}
	for _, bad := range []string{"", "tree", "tree:", "tree:kary", "tree:kary:x", "tree:kary:0", "tree:binomial:2", "tree:fib", "star", "ack:lame"} {
		_, err := ParseScheme(bad)
		assert.ErrorIs(t, err, gossip.ErrInvalidConfig, bad)
	}
}

func TestParseCorrection(t *testing.T) {
	for in, want := range map[string]Correction{
		"none":                           {},
		"opportunistic:4":                {Kind: CorrectionOpportunistic, D: 4},
		"optimized:2":                    {Kind: CorrectionOptimized, D: 2},
		"opportunistic-synchronized:3":   {Kind: CorrectionOpportunistic, D: 3, Synchronized: true},
		"optimized-synchronized:1":       {Kind: CorrectionOptimized, D: 1, Synchronized: true},
		"checked":                        {Kind: CorrectionChecked, Synchronized: true},
		"checked-overlapped":             {Kind: CorrectionChecked},
		"failproof:2":                    {Kind: CorrectionFailProof, F: 2, Synchronized: true},
		"optimized:4/2":                  {Kind: CorrectionOptimized, D: 4, Split: true},
		"opportunistic-synchronized:5/2": {Kind: CorrectionOpportunistic, D: 5, Split: true, Synchronized: true},
	} {
		got, err := ParseCorrection(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
		assert.Equal(t, in, got.String())
	}
	for _, bad := range []string{"", "opportunistic", "opportunistic:0", "optimized:-1", "checked:2", "failproof", "failproof:x", "delayed",
		"optimized:4/3", "optimized:/2", "opportunistic:0/2", "checked:4/2", "failproof:2/2"} {
		_, err := ParseCorrection(bad)
		assert.ErrorIs(t, err, gossip.ErrInvalidConfig, bad)
	}
}

// Split opportunistic correction sends ⌊D/2⌋ to the left and the rest to
// the right, alternating from the left, as corrected trees' reference
// simulator reads d; unsplit it sends D each way; a small ring clamps both.
func TestOpportunisticSplit(t *testing.T) {
	tree := Scheme{Kind: SchemeTree, Tree: TreeSpec{Kind: Binomial}}
	type msg struct {
		left bool
		dist int
	}
	sends := func(corr string, n int) []msg {
		c, err := ParseCorrection(corr)
		require.NoError(t, err)
		p, err := NewPlan(Spec{Nodes: n, Scheme: tree, Correction: c, Model: LogP{L: 2, O: 1}})
		require.NoError(t, err)
		var cs CorrectionState
		var out []msg
		for {
			left, dist, ok := cs.Next(p)
			if !ok {
				return out
			}
			out = append(out, msg{left, dist})
		}
	}
	assert.Equal(t, []msg{{true, 1}, {false, 1}, {true, 2}, {false, 2}, {false, 3}}, sends("opportunistic:5/2", 100))
	assert.Equal(t, []msg{{true, 1}, {false, 1}, {true, 2}, {false, 2}}, sends("optimized:4/2", 100))
	assert.Equal(t, []msg{{false, 1}}, sends("opportunistic:1/2", 100))
	assert.Len(t, sends("opportunistic:4", 100), 8)
	// Four others on a ring of 5: two each way, whatever D.
	assert.Len(t, sends("opportunistic:9/2", 5), 4)
}

func TestNewPlanValidates(t *testing.T) {
	tree := Scheme{Kind: SchemeTree, Tree: TreeSpec{Kind: Binomial}}
	good := Spec{Nodes: 10, Scheme: tree, Correction: Correction{Kind: CorrectionChecked, Synchronized: true}, Model: LogP{L: 2, O: 1}}
	_, err := NewPlan(good)
	require.NoError(t, err)
	for name, edit := range map[string]func(*Spec){
		"no nodes":           func(s *Spec) { s.Nodes = 0 },
		"too many":           func(s *Spec) { s.Nodes = MaxNodes + 1 },
		"o = 0":              func(s *Spec) { s.Model.O = 0 },
		"negative L":         func(s *Spec) { s.Model.L = -1 },
		"live > N":           func(s *Spec) { s.Live = 11 },
		"delta ≥ 1":          func(s *Spec) { s.Delta = 1 },
		"NaN delta":          func(s *Spec) { s.Delta = math.NaN() },
		"negative T":         func(s *Spec) { s.GossipT = -1 },
		"D = 0":              func(s *Spec) { s.Correction = Correction{Kind: CorrectionOpportunistic} },
		"F too big":          func(s *Spec) { s.Correction = Correction{Kind: CorrectionFailProof, F: MaxFailProof + 1} },
		"unknown correction": func(s *Spec) { s.Correction.Kind = 99 },
		"unknown scheme":     func(s *Spec) { s.Scheme.Kind = 99 },
		"bad tree":           func(s *Spec) { s.Scheme.Tree = TreeSpec{Kind: KAry} },
		"bmg + correction":   func(s *Spec) { s.Scheme = Scheme{Kind: SchemeBMG} },
		"ack + correction":   func(s *Spec) { s.Scheme.Kind = SchemeAck },
		"gossip alone":       func(s *Spec) { s.Nodes, s.Scheme, s.GossipT = 1, Scheme{Kind: SchemeGossip}, 5 },
	} {
		s := good
		edit(&s)
		_, err := NewPlan(s)
		assert.ErrorIs(t, err, gossip.ErrInvalidConfig, name)
	}
}
