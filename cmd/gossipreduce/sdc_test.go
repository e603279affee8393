package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSDCBitSweepJSONAndPlots(t *testing.T) {
	dir := t.TempDir()
	png, svg := filepath.Join(dir, "e.png"), filepath.Join(dir, "o.svg")
	code, out, errOut := runCLI(t, "sdc", "--algo", "pf,pfcc", "--nodes", "16", "--bits", "30,62", "--runs", "3",
		"--seed", "5", "--after", "40", "--eps", "1e-12", "--json", "--plot", png, "--plot-overhead", svg)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "seed 5")
	var rep struct {
		Points []struct {
			Algo          string  `json:"algo"`
			Bit           int     `json:"bit"`
			Target        string  `json:"target"`
			MaxRelError   float64 `json:"max_rel_error"`
			MeanMsgs      float64 `json:"mean_msgs"`
			ConvergedRuns int     `json:"converged_runs"`
			FlippedRuns   int     `json:"flipped_runs"`
		} `json:"points"`
		Baseline struct {
			Algo string `json:"algo"`
		} `json:"baseline"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Len(t, rep.Points, 4)
	assert.Equal(t, "ps", rep.Baseline.Algo)
	for _, p := range rep.Points {
		assert.Equal(t, "value", p.Target)
		assert.Equal(t, 3, p.FlippedRuns, "16 nodes send 40 messages before converging to 1e-12")
		assert.Positive(t, p.MeanMsgs)
		if p.Algo == "pfcc" {
			assert.Equal(t, 3, p.ConvergedRuns, "PFCC recovers from bit %d", p.Bit)
		}
	}
	for _, f := range []string{png, svg} {
		st, err := os.Stat(f)
		require.NoError(t, err)
		assert.Positive(t, st.Size())
	}
}

func TestSDCCSVRateAndLoss(t *testing.T) {
	code, out, errOut := runCLI(t, "sdc", "--algo", "pfcc", "--nodes", "8", "--runs", "2", "--seed", "1",
		"--flip-rate", "1e-3", "--target", "flow", "--eps", "1e-10")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	assert.Equal(t, "algo,seed,flips,converged,max_rel_error,max_msgs,mean_msgs", lines[0])
	assert.Len(t, lines, 3)

	code, out, errOut = runCLI(t, "sdc", "--algo", "pf", "--nodes", "8", "--runs", "2", "--seed", "1",
		"--loss", "0.2", "--eps", "1e-10")
	require.Equal(t, 0, code, errOut)
	lines = strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, "loss 0 is added as the reference")
	assert.True(t, strings.HasPrefix(lines[2], "pf,0.2,2,2,"), lines[2])
}

func TestSDCBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"sdc", "--algo", "nope"},
		{"sdc", "--bits", "70"},
		{"sdc", "--target", "heap"},
		{"sdc", "--eps", "2"},
		{"sdc", "--loss", "1.5"},
		{"sdc", "--flip-rate", "1e-4", "--target", "value,weight"},
	} {
		code, _, _ := runCLI(t, args...)
		assert.Equal(t, 2, code, "%v", args)
	}
}
