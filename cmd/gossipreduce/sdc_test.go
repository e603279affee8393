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
	code, out, errOut := runCLI(t, "sdc", "--algo", "pf,pfcc", "--nodes", "16", "--flip-bit", "30,62", "--runs", "3",
		"--seed", "5", "--flip-after", "40", "--eps", "1e-12", "--json", "--plot", png, "--plot-overhead", svg)
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
		"--flip-rate", "1e-3", "--flip-target", "flow", "--eps", "1e-10")
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
		{"sdc", "--flip-bit", "70"},
		{"sdc", "--flip-bit", "-1"},
		{"sdc", "--flip-target", "heap"},
		{"sdc", "--eps", "2"},
		{"sdc", "--loss", "1.5"},
		{"sdc", "--flip-rate", "1e-4", "--flip-target", "value,weight"},
		{"sdc", "--flip-rate", "1e-4", "--flip-bit", "3,5"},
		{"sdc", "--plot-overhead", "o.svg", "--baseline", ""},
	} {
		code, _, _ := runCLI(t, args...)
		assert.Equal(t, 2, code, "%v", args)
	}
}

// TestSDCPlotPathCheckedFirst: a --plot or --plot-overhead that cannot be
// saved (no such directory, a format the plots are not written in) is a
// usage error before the campaign, not a failure after it: nothing is
// run (sdc says its seed when it starts) and nothing is written.
func TestSDCPlotPathCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	for _, c := range []struct {
		flag, path, say string
	}{
		{"--plot", "/nonexistent/dir/x.png", "--plot: campaign: plot /nonexistent/dir/x.png: stat /nonexistent/dir: no such file or directory"},
		{"--plot", filepath.Join(dir, "x.txt"), `unsupported format: "txt"`},
		{"--plot", filepath.Join(dir, "x"), `unsupported format: ""`},
		{"--plot", filepath.Join(file, "x.png"), file + " is not a directory"},
		{"--plot", dir + "/", `unsupported format`},
		{"--plot-overhead", filepath.Join(dir, "missing", "o.svg"), "--plot-overhead: campaign: plot"},
	} {
		// The default campaign: 64 bits, 100 runs each, were it to run.
		code, stdout, stderr := runCLI(t, "sdc", "--algo", "pf,pfcc", c.flag, c.path)
		assert.Equal(t, 2, code, "%s %s: %s", c.flag, c.path, stderr)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, c.say, "%s %s", c.flag, c.path)
		assert.NotContains(t, stderr, "sdc: seed", "%s %s: the campaign did not start", c.flag, c.path)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the file the test made: the check leaves nothing behind")
}

// TestSDCDeprecatedNames: the names sdc had before the flags were shared
// (--bits, --target, --after) still work, each saying once on stderr that
// it is deprecated, and give the same campaign as the new names.
func TestSDCDeprecatedNames(t *testing.T) {
	common := []string{"sdc", "--algo", "pfcc", "--nodes", "8", "--runs", "2", "--seed", "3", "--eps", "1e-10", "--json"}
	code, old, stderr := runCLI(t, append(common, "--bits", "62", "--target", "flow", "--after", "5")...)
	require.Equal(t, 0, code, stderr)
	for _, name := range []string{"bits", "target", "after"} {
		assert.Equal(t, 1, strings.Count(stderr, "--"+name+" is deprecated"), name)
	}
	assert.Contains(t, stderr, "gossipreduce: --bits is deprecated; use --flip-bit\n")
	code, now, stderr := runCLI(t, append(common, "--flip-bit", "62", "--flip-target", "flow", "--flip-after", "5")...)
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, stderr, "deprecated")
	var a, b map[string]any
	require.NoError(t, json.Unmarshal([]byte(old), &a))
	require.NoError(t, json.Unmarshal([]byte(now), &b))
	delete(a, "seconds")
	delete(b, "seconds")
	assert.Equal(t, b, a)
}
