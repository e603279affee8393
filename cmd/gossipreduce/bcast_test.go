package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Lamé tree of figure 5 as JSON, children in send order.
func TestBcastTreeJSON(t *testing.T) {
	code, out, errs := runCLI(t, "bcast", "tree", "--scheme", "tree:lame:3", "--nodes", "9", "--json")
	require.Equal(t, 0, code, errs)
	var got struct {
		Children map[string][]int `json:"children"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, []int{1, 2, 3, 4, 6}, got.Children["0"])
	assert.Equal(t, []int{5, 7}, got.Children["1"])
	assert.Equal(t, []int{8}, got.Children["2"])
	assert.Equal(t, []int{}, got.Children["8"])
	assert.Len(t, got.Children, 9)
	// Keys come in numeric order.
	assert.Less(t, strings.Index(out, `"2":`), strings.Index(out, `"10":`)+len(out))
	code, out, _ = runCLI(t, "bcast", "tree", "--scheme", "tree:binomial", "--nodes", "8", "--order", "inorder")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "0: 1 5 7\n1: 2 4\n")
	assert.Contains(t, out, "fault-free latency 12")
}

func TestBcastSimJSON(t *testing.T) {
	code, out, errs := runCLI(t, "bcast", "--scheme", "tree:binomial", "--correction", "checked", "--nodes", "1024",
		"--fault-rate", "1%", "--runs", "20", "--seed", "5", "--json")
	require.Equal(t, 0, code, errs)
	var r map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	for _, f := range []string{"coloring_latency", "quiescence_latency", "correction_latency", "msgs_per_process", "correction_msgs_per_process", "uncolored", "g_max", "correction_participants"} {
		d, ok := r[f].(map[string]any)
		require.True(t, ok, f)
		for _, p := range []string{"p50", "p99", "p99_9", "max", "mean"} {
			assert.Contains(t, d, p, f)
		}
	}
	assert.Equal(t, 10.0, r["faults"], "1 % of 1024, rounded")
	assert.Equal(t, 5.0, r["seed"])
	assert.Equal(t, 0.0, r["uncolored_runs"])
	assert.Equal(t, "fast", r["engine"])
	// The same seed replays the same numbers.
	code, again, _ := runCLI(t, "bcast", "--scheme", "tree:binomial", "--correction", "checked", "--nodes", "1024",
		"--fault-rate", "0.01", "--runs", "20", "--seed", "5", "--json")
	require.Equal(t, 0, code)
	var r2 map[string]any
	require.NoError(t, json.Unmarshal([]byte(again), &r2))
	for _, f := range []string{"coloring_latency", "quiescence_latency", "g_max", "msgs_per_process"} {
		assert.Equal(t, r[f], r2[f], f)
	}
	// Run 3 alone, replayed with seed 5+3, matches its line in --per-run.
	code, lines, _ := runCLI(t, "bcast", "--nodes", "1024", "--faults", "10", "--runs", "5", "--seed", "5", "--json", "--per-run")
	require.Equal(t, 0, code)
	code, single, _ := runCLI(t, "bcast", "--nodes", "1024", "--faults", "10", "--runs", "1", "--seed", "8", "--json", "--per-run")
	require.Equal(t, 0, code)
	all := strings.Split(strings.TrimSpace(lines), "\n")
	require.Len(t, all, 5)
	var third, one map[string]any
	require.NoError(t, json.Unmarshal([]byte(all[3]), &third))
	require.NoError(t, json.Unmarshal([]byte(single), &one))
	delete(third, "run")
	delete(one, "run")
	assert.Equal(t, third, one)
}

func TestBcastSimText(t *testing.T) {
	code, out, errs := runCLI(t, "bcast", "--scheme", "gossip", "--correction", "opportunistic:4", "--nodes", "512", "--runs", "3", "--seed", "1")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "gossip time T=")
	assert.Contains(t, out, "coloring latency")
	code, out, errs = runCLI(t, "bcast", "--scheme", "bmg", "--nodes", "64", "--faults", "5", "--runs", "3", "--seed", "1")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "BMG degree 11") // ±1, ±2, ±4, ±8, ±16, 32
	assert.Contains(t, out, "engine machines")
	code, out, errs = runCLI(t, "bcast", "--scheme", "tree:binomial", "--correction", "failproof:1", "--nodes", "64",
		"--faults", "3", "--online-faults", "1", "--runs", "4", "--seed", "1")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "+ 1 during the run")
	code, out, errs = runCLI(t, "bcast", "gossip-time", "--nodes", "1024", "--L", "1", "--o", "1")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "ocg: T=24")
	assert.Contains(t, out, "ccg: T=25")
}

func TestBcastUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"bcast", "--scheme", "star"},
		{"bcast", "--correction", "sometimes"},
		{"bcast", "--order", "backwards"},
		{"bcast", "--fault-rate", "1%", "--faults", "3"},
		{"bcast", "--fault-rate", "150%"},
		{"bcast", "--seed", "minus-one"},
		{"bcast", "--nodes", "0"},
		{"bcast", "--nodes", "10", "--faults", "10"},
		{"bcast", "--engine", "warp"},
		{"bcast", "--scheme", "bmg", "--engine", "fast"},
		{"bcast", "tree", "--scheme", "gossip"},
		{"bcast", "extra-argument"},
		{"bcast", "gossip-time", "--nodes", "1"},
	} {
		code, _, errs := runCLI(t, args...)
		assert.Equal(t, 2, code, "%v: %s", args, errs)
		assert.Contains(t, errs, "gossipreduce bcast", args)
	}
}
