package campaign_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/sdc"
	"github.com/gossipreduce/gossipreduce/sdc/campaign"
	"github.com/gossipreduce/gossipreduce/topology"
)

func common(t *testing.T, algos ...string) campaign.Common {
	g, err := topology.Hypercube(16)
	require.NoError(t, err)
	return campaign.Common{Algorithms: algos, Overlay: g, Epsilon: 1e-12, Runs: 3, Seed: 1, MaxMsgs: 400}
}

func TestSweepSeparatesPushSumFromPFCC(t *testing.T) {
	s := campaign.Sweep{Common: common(t, "ps", "pfcc"), Bits: []int{2, 60}, Targets: []sdc.Target{sdc.Value}, After: 40, Baseline: "ps"}
	res, err := s.Run(context.Background())
	require.NoError(t, err)
	require.Len(t, res.Points, 4)
	require.NotNil(t, res.Baseline)
	assert.Equal(t, 3, res.Baseline.ConvergedRuns)
	for _, p := range res.Points {
		assert.Equal(t, 3, p.FlippedRuns)
		switch {
		case p.Algo == "pfcc":
			assert.Equal(t, 3, p.ConvergedRuns, "bit %d", p.Bit)
		case p.Bit == 60:
			assert.Zero(t, p.ConvergedRuns, "Push-Sum keeps a flipped exponent for good")
		}
	}
	require.NoError(t, campaign.PlotErrors(res.Points, 1e-12, "t", filepath.Join(t.TempDir(), "e.svg")))
	require.NoError(t, campaign.PlotOverhead(res.Points, *res.Baseline, "t", filepath.Join(t.TempDir(), "o.png")))
}

func TestAfterForRecursiveDoublingAndInputs(t *testing.T) {
	s := campaign.Sweep{Common: common(t, "rdb"), After: -1}
	for name, want := range map[string]int{"rdb": 0, "ps": 0, "pfcc": campaign.DefaultAfter} {
		got, err := s.AfterFor(name, sdc.Input)
		require.NoError(t, err)
		assert.Equal(t, want, got, name)
	}
	got, err := s.AfterFor("ps", sdc.Value)
	require.NoError(t, err)
	assert.Equal(t, campaign.DefaultAfter, got)
}

func TestRatesAndLoss(t *testing.T) {
	r := campaign.Rates{Common: common(t, "pfcc"), Rate: 1e-3, Target: sdc.Flow, Lo: 0, Hi: 63}
	runs, err := r.Run(context.Background())
	require.NoError(t, err)
	require.Len(t, runs, 3)
	flips := 0
	for _, x := range runs {
		flips += x.Flips
	}
	assert.Positive(t, flips, "16 nodes × ~100 msgs × 12 words × 1e-3 ≈ 19 flips per run expected")
	require.NoError(t, campaign.PlotRates(runs, "t", filepath.Join(t.TempDir(), "r.png")))

	l := campaign.Loss{Common: common(t, "pf"), Rates: []float64{0.3}}
	pts, err := l.Run(context.Background())
	require.NoError(t, err)
	require.Len(t, pts, 2)
	assert.Zero(t, pts[0].Overhead)
	assert.Equal(t, 3, pts[1].ConvergedRuns, "flows recover from loss")
	// The thesis's bound: at least 1/(1-p) times the messages.
	assert.InDelta(t, 1/(1-0.3)-1, pts[1].Bound, 1e-15)
	assert.Greater(t, pts[1].Overhead, 0.8*pts[1].Bound, "overhead close to or above the bound (20 %% slack for 3 runs)")
	require.NoError(t, campaign.PlotLoss(pts, "t", filepath.Join(t.TempDir(), "l.png")))

	_, err = (&campaign.Loss{Common: common(t, "pf"), Rates: []float64{1}}).Run(context.Background())
	assert.ErrorIs(t, err, gossip.ErrInvalidConfig)
}

// TestPublishedCheckedVariants: PFLC and PFCC on the thesis's own flows
// still recover from a flipped exponent bit, and their loss overhead stays
// near the thesis's bound, unlike the acknowledged engine's.
func TestPublishedCheckedVariants(t *testing.T) {
	// 500: the published flows need about 1.5 times Push-Sum's messages
	// (215 against 142 here at eps 1e-12, docs/sdc.md's table 2.1 ratio).
	c := common(t, "pflc-published", "pfcc-published")
	c.MaxMsgs = 500
	s := campaign.Sweep{Common: c, Bits: []int{60}, Targets: []sdc.Target{sdc.Value}, After: 40}
	res, err := s.Run(context.Background())
	require.NoError(t, err)
	require.Len(t, res.Points, 2)
	for _, p := range res.Points {
		assert.Equal(t, 3, p.FlippedRuns, p.Algo)
		assert.Equal(t, 3, p.ConvergedRuns, p.Algo)
	}

	g, err := topology.Hypercube(32)
	require.NoError(t, err)
	l := campaign.Loss{Common: campaign.Common{Algorithms: []string{"pf", "pfcc-published"}, Overlay: g,
		Epsilon: 1e-14, Runs: 10, Seed: 1, MaxMsgs: 5000}, Rates: []float64{0.2}}
	pts, err := l.Run(context.Background())
	require.NoError(t, err)
	require.Len(t, pts, 4)
	ack, pub := pts[1], pts[3]
	require.Equal(t, "pfcc-published", pub.Algo)
	assert.Equal(t, 10, pub.ConvergedRuns)
	// Measured with these seeds: +23.6 % for the published flows (bound
	// 25 %), +117 % for acknowledged ones; the slack of a fifth of the
	// bound covers the spread between 10 and 20 runs (+23.6 against
	// +25.9 %).
	assert.Less(t, pub.Overhead, 1.2*pub.Bound)
	assert.Greater(t, ack.Overhead, 3*pub.Overhead, "acknowledged flows repair a loss only on the sender's next push")
}

func TestFlipBins(t *testing.T) {
	// 5 runs with 2 flips, 30 with 3, 10 with 4, 10 with 6, 3 with 9: bins
	// of at least 20 are [2, 3] (35), then [4, 9] (23: 10 + 10 + 3, the
	// last bin reaching 20 only at 9).
	counts := map[int]int{2: 5, 3: 30, 4: 10, 6: 10, 9: 3}
	assert.Equal(t, [][2]int{{2, 3}, {4, 9}}, campaign.FlipBins(counts, 20))
	// A tail that never reaches 20 (4 to 12: 10 + 5 + 3 + 1 = 19) joins
	// the bin before it.
	counts[12] = 1
	counts[6] = 5
	assert.Equal(t, [][2]int{{2, 12}}, campaign.FlipBins(counts, 20))
	// Every count its own bin when each has enough runs.
	assert.Equal(t, [][2]int{{0, 0}, {1, 1}}, campaign.FlipBins(map[int]int{0: 20, 1: 25}, 20))
	// Too few runs in all: one bin.
	assert.Equal(t, [][2]int{{3, 7}}, campaign.FlipBins(map[int]int{3: 1, 7: 2}, 20))
	assert.Empty(t, campaign.FlipBins(nil, 20))
	assert.Empty(t, campaign.FlipBins(map[int]int{4: 0}, 20), "no runs, no bins")
}

// TestCheckPath: a figure's path is accepted when it can be saved, and
// CheckPath leaves the directory as it found it: no temporary file, and
// a file already at the path untouched.
func TestCheckPath(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"e.png", "o.svg", "f.PDF", "g.eps"} {
		assert.NoError(t, campaign.CheckPath(filepath.Join(dir, name)), name)
	}
	old := filepath.Join(dir, "old.png")
	require.NoError(t, os.WriteFile(old, []byte("kept"), 0o600))
	require.NoError(t, campaign.CheckPath(old))
	got, err := os.ReadFile(old)
	require.NoError(t, err)
	assert.Equal(t, "kept", string(got), "an existing file is not truncated")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no file is left behind")

	sub := filepath.Join(dir, "sub.png")
	require.NoError(t, os.Mkdir(sub, 0o700))
	for _, path := range []string{
		filepath.Join(dir, "x.txt"),
		filepath.Join(dir, "noext"),
		filepath.Join(dir, "missing", "x.png"),
		filepath.Join(old, "x.png"),
		sub, // a directory, not a file
	} {
		err := campaign.CheckPath(path)
		require.Error(t, err, path)
		assert.True(t, strings.HasPrefix(err.Error(), "campaign: plot "+path+": "), err.Error())
	}
}
