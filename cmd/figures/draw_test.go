package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDrawAll(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		// An algorithm this command has never heard of is drawn all the same.
		"loss-8.json": `{"mode": "loss", "topology": "hypercube", "nodes": 8, "eps": 1e-9, "runs": 2, "loss": [
			{"algo": "pf", "loss": 0, "overhead": 0}, {"algo": "pf", "loss": 0.2, "overhead": 0.5},
			{"algo": "pflc-published", "loss": 0, "overhead": 0}, {"algo": "pflc-published", "loss": 0.2, "overhead": 0.6}]}`,
		"sdc-rate.json": `{"mode": "rate", "topology": "hypercube", "nodes": 8, "eps": 1e-9, "injector": "rate(p=0.1)", "runs_detail": [
			{"algo": "pfcc", "flips": 1, "converged": true, "max_msgs": 10}, {"algo": "pfcc", "flips": 2, "converged": true, "max_msgs": 12},
			{"algo": "pflc", "flips": 3, "converged": false, "max_msgs": 50}]}`,
		"sdc-bits-value.json": `{"mode": "bits", "topology": "hypercube", "nodes": 8, "eps": 1e-9, "runs": 1,
			"baseline": {"algo": "ps", "mean_msgs": 10},
			"points": [{"algo": "ps", "target": "value", "bit": 0, "max_rel_error": 1e-10, "mean_msgs": 10},
				{"algo": "ps", "target": "value", "bit": 1, "max_rel_error": 1e-9, "mean_msgs": 11}]}`,
		"bcast-fig67.json": `{"L": 2, "o": 1, "gossip_runs": 3, "series": [
			{"Name": "binomial checked", "P": [1024, 2048], "Msgs": [6, 6], "Quiescence": [48, 52]},
			{"Name": "binomial optimized:4", "P": [1024, 2048], "Msgs": [5.6, 5.6], "Quiescence": [42, 46]},
			{"Name": "gossip opportunistic:4 (OCG)", "P": [1024, 2048], "Msgs": [13, 14], "Quiescence": [46, 48], "Q5": [45, 47], "Q95": [48, 49]}]}`,
		"bcast-table1.json": `{"nodes": 64, "L": 2, "o": 1, "l_ff": 8, "runs": 10, "fig10_pairs": [
			{"tree": "tree:binomial", "g_max": 1, "l_scc": 10, "runs": 7}, {"tree": "tree:kary:4", "g_max": 3, "l_scc": 13, "runs": 3}]}`,
		"bcast-other.json": `{"rows": [{"Tree": "x"}]}`,
	}
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	var log bytes.Buffer
	require.NoError(t, drawAll(dir, &log))
	for _, png := range []string{"loss-8.png", "sdc-rate.png", "sdc-bits-value.png", "sdc-overhead-value.png",
		"model-sync-rounds.png", "model-async-msgs.png", "model-async-first-msgs.png", "model-sync-jacobi-rounds.png",
		"bcast-fig6-messages.png", "bcast-fig7-quiescence.png", "bcast-fig10-gmax-lscc.png"} {
		st, err := os.Stat(filepath.Join(dir, png))
		require.NoError(t, err, png)
		assert.Positive(t, st.Size(), png)
		assert.Contains(t, log.String(), png)
	}
	_, err := os.Stat(filepath.Join(dir, "bcast-other.png"))
	assert.True(t, os.IsNotExist(err), "a file without a figure's data draws nothing")

	// A series whose values do not match its sizes is an error, not a
	// figure with a line missing.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bcast-fig67.json"), []byte(`{"series": [{"Name": "binomial ack", "P": [1024, 2048], "Msgs": [2]}]}`), 0o644))
	err = drawAll(dir, &log)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "binomial ack: 1 values for 2 sizes")
	require.NoError(t, os.Remove(filepath.Join(dir, "bcast-fig67.json")))

	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.json"), []byte("{"), 0o644))
	err = drawAll(dir, &log)
	require.Error(t, err)
	assert.Regexp(t, "^figures: .*bad.json", err.Error())
}

// TestEveryFigureHasADrawer redraws every figure from the data in
// docs/figures and requires that each PNG there is one of them and is what
// go run ./cmd/figures draws now: no figure is left stale, drawn by a
// command that no longer runs or from data that has changed since.
func TestEveryFigureHasADrawer(t *testing.T) {
	docs := filepath.Join("..", "..", "docs", "figures")
	data, err := filepath.Glob(filepath.Join(docs, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, data)
	dir := t.TempDir()
	for _, f := range data {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644))
	}
	var log bytes.Buffer
	require.NoError(t, drawAll(dir, &log))
	pngs, err := filepath.Glob(filepath.Join(docs, "*.png"))
	require.NoError(t, err)
	require.NotEmpty(t, pngs)
	for _, png := range pngs {
		name := filepath.Base(png)
		fresh, err := os.ReadFile(filepath.Join(dir, name))
		if !assert.NoError(t, err, "%s: no data file in docs/figures draws it", name) {
			continue
		}
		old, err := os.ReadFile(png)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(old, fresh), "%s is not what its data draws now: run go run ./cmd/figures", name)
	}
}

func TestMeanSD(t *testing.T) {
	mean, sd := meanSD([]float64{2, 4, 4, 4, 5, 5, 7, 9})
	assert.InDelta(t, 5.0, mean, 1e-15)
	// Sample variance 32/7 by hand.
	assert.InDelta(t, 2.1380899352993947, sd, 1e-15)
	_, sd = meanSD([]float64{3})
	assert.Zero(t, sd)
}
