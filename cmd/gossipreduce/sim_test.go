package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/topology"
)

// runCLI runs `gossipreduce args...` and returns the exit status, stdout
// and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdio{Stdout: &stdout, Stderr: &stderr})
	return code, stdout.String(), stderr.String()
}

// jsonObject runs a verb that must succeed and decodes its one JSON object.
func jsonObject(t *testing.T, args ...string) map[string]any {
	t.Helper()
	code, stdout, stderr := runCLI(t, args...)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	dec := json.NewDecoder(bytes.NewBufferString(stdout))
	var obj map[string]any
	require.NoError(t, dec.Decode(&obj), stdout)
	require.False(t, dec.More(), "exactly one JSON object")
	return obj
}

func TestSimJSONContract(t *testing.T) {
	obj := jsonObject(t, "sim", "--algo", "ps", "--topology", "hypercube", "--nodes", "32",
		"--eps", "1e-9", "--runs", "4", "--seed", "11", "--json")
	// The field names DESIGN.md promises.
	for _, f := range []string{"algo", "topology", "nodes", "runs", "converged", "max_rel_error", "max_msgs", "mean_msgs", "sim_time", "seed"} {
		assert.Contains(t, obj, f)
	}
	assert.Equal(t, "ps", obj["algo"])
	assert.Equal(t, "hypercube", obj["topology"])
	assert.Equal(t, 32.0, obj["nodes"])
	assert.Equal(t, 4.0, obj["runs"])
	assert.Equal(t, 4.0, obj["converged"])
	assert.Equal(t, 11.0, obj["seed"])
	assert.Equal(t, 14.0, obj["last_seed"])
	assert.LessOrEqual(t, obj["max_rel_error"].(float64), 1e-9)
	assert.Positive(t, obj["max_msgs"].(float64))
}

func TestSimReplaysBySeed(t *testing.T) {
	// Run 3 of a campaign is run 1 of a campaign starting at its seed.
	code, stdout, _ := runCLI(t, "sim", "--nodes", "16", "--eps", "1e-10", "--runs", "3", "--seed", "5", "--per-run", "--json")
	require.Equal(t, 0, code)
	dec := json.NewDecoder(bytes.NewBufferString(stdout))
	var runs []map[string]any
	for dec.More() {
		var r map[string]any
		require.NoError(t, dec.Decode(&r))
		runs = append(runs, r)
	}
	require.Len(t, runs, 3)
	code, stdout, _ = runCLI(t, "sim", "--nodes", "16", "--eps", "1e-10", "--seed", "7", "--per-run", "--json")
	require.Equal(t, 0, code)
	var one map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &one))
	assert.Equal(t, runs[2], one)
}

func TestSimWithoutSeedPrintsOne(t *testing.T) {
	code, stdout, stderr := runCLI(t, "sim", "--nodes", "8", "--eps", "1e-6")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "replay with")
	assert.Contains(t, stdout, "--seed ")
}

func TestSimFaultFlags(t *testing.T) {
	obj := jsonObject(t, "sim", "--algo", "ps", "--nodes", "32", "--eps", "1e-9", "--seed", "3", "--dead", "2", "--json")
	assert.Equal(t, 1.0, obj["converged"], "dead nodes excluded at once: Push-Sum computes the survivors' average")
	obj = jsonObject(t, "sim", "--algo", "ps", "--nodes", "32", "--eps", "1e-9", "--seed", "3", "--loss", "0.1", "--max-msgs", "300", "--json")
	assert.Equal(t, 0.0, obj["converged"], "Push-Sum loses mass with the messages")
	assert.Positive(t, obj["lost"].(float64))
	obj = jsonObject(t, "sim", "--algo", "rdb", "--topology", "complete", "--nodes", "100", "--eps", "1e-13", "--seed", "3", "--json")
	assert.Equal(t, 1.0, obj["converged"])
	assert.LessOrEqual(t, obj["max_msgs"].(float64), 7.0, "⌊log2 100⌋ exchanges + 1 fold message")
	obj = jsonObject(t, "sim", "--topology", "torus", "--nodes", "27", "--cost", "torus3d", "--eps", "1e-9", "--seed", "3", "--json")
	assert.Equal(t, "torus:3x3x3", obj["topology"])
	assert.Equal(t, 1.0, obj["converged"])
}

func TestSimBadInput(t *testing.T) {
	for name, args := range map[string][]string{
		"unknown flag":     {"sim", "--nodez", "3"},
		"stray argument":   {"sim", "extra"},
		"eps zero":         {"sim", "--eps", "0"},
		"eps negative":     {"sim", "--eps", "-1e-3"},
		"eps NaN":          {"sim", "--eps", "NaN"},
		"eps Inf":          {"sim", "--eps", "Inf"},
		"hypercube N":      {"sim", "--topology", "hypercube", "--nodes", "100"},
		"unknown topology": {"sim", "--topology", "moebius"},
		"unknown algo":     {"sim", "--algo", "push-magic"},
		"zero nodes":       {"sim", "--nodes", "0"},
		"loss one":         {"sim", "--loss", "1"},
		"bad weights":      {"sim", "--weights", "median"},
		"bad stop":         {"sim", "--stop", "never"},
		"bad mode":         {"sim", "--mode", "quantum"},
		"all dead":         {"sim", "--nodes", "4", "--dead", "4"},
		"bad dead id":      {"sim", "--nodes", "4", "--dead-ids", "9"},
		"bad seed":         {"sim", "--seed", "minus-one"},
		"bad cost":         {"sim", "--cost", "euclid"},
		"zero runs":        {"sim", "--runs", "0"},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := runCLI(t, args...)
			assert.Equal(t, 2, code, stderr)
			assert.NotEmpty(t, stderr)
			assert.NotContains(t, stderr, "panic")
		})
	}
	code, _, _ := runCLI(t, "no-such-verb")
	assert.Equal(t, 2, code)
}

func TestSimSyncMode(t *testing.T) {
	obj := jsonObject(t, "sim", "--mode", "sync", "--topology", "hypercube", "--nodes", "1024", "--eps", "1e-12", "--seed", "2", "--runs", "2", "--json")
	assert.Equal(t, "sync", obj["mode"])
	assert.Equal(t, 2.0, obj["converged"])
	assert.LessOrEqual(t, obj["max_rel_error"].(float64), 1e-12)
	rounds := obj["rounds"].(float64)
	seq := jsonObject(t, "sim", "--mode", "sync", "--sequential", "--topology", "hypercube", "--nodes", "1024", "--eps", "1e-12", "--seed", "2", "--runs", "2", "--json")
	assert.Equal(t, "sync-sequential", seq["mode"])
	// Algorithm 7 updates in place, which mixes faster than synchronous
	// rounds: fewer rounds (about 1.3x fewer at this size).
	assert.Less(t, seq["rounds"].(float64), rounds)
	code, _, stderr := runCLI(t, "sim", "--mode", "sync", "--algo", "pfcc")
	assert.Equal(t, 2, code, stderr)
	assert.NotContains(t, obj, "model", "the models are for eps 1e-14 only")
}

func TestSimModelPrediction(t *testing.T) {
	g, err := topology.Parse("hypercube", 512)
	require.NoError(t, err)
	for _, c := range []struct {
		args []string
		kind topology.ModelKind
	}{
		{[]string{"--mode", "sync"}, topology.ModelSyncJacobiRounds},
		{[]string{"--mode", "sync", "--sequential"}, topology.ModelSyncRounds},
		{[]string{"--algo", "ps"}, topology.ModelAsyncMsgs},
		{[]string{"--algo", "ps", "--stop", "first"}, topology.ModelAsyncFirstMsgs},
	} {
		args := append([]string{"sim", "--topology", "hypercube", "--nodes", "512", "--seed", "1", "--runs", "2", "--json"}, c.args...)
		obj := jsonObject(t, args...)
		want, ok := topology.Model(c.kind, g)
		require.True(t, ok)
		assert.Equal(t, want, obj["model"], "%v", c.args)
	}
	code, stdout, stderr := runCLI(t, "sim", "--mode", "sync", "--topology", "hypercube", "--nodes", "512", "--seed", "1")
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `(?m)^  model +\d+\.\d rounds \(our fit`, stdout)
	obj := jsonObject(t, "sim", "--algo", "pfcc", "--topology", "hypercube", "--nodes", "64", "--seed", "1", "--json")
	assert.NotContains(t, obj, "model", "the models are Push-Sum's")
	obj = jsonObject(t, "sim", "--algo", "ps", "--loss", "0.1", "--topology", "hypercube", "--nodes", "64", "--seed", "1", "--json")
	assert.NotContains(t, obj, "model", "the models know no loss")
}

func TestSimRuntimeJSONContract(t *testing.T) {
	args := []string{"sim", "--runtime", "--nodes", "32", "--algo", "pfcc", "--crash", "0.05", "--slow", "0.1", "--loss", "0.01", "--runs", "2", "--seed", "4", "--json"}
	obj := jsonObject(t, args...)
	// The field names issue 10 and docs/design.md promise.
	for _, f := range []string{"failed", "wrong", "false_deaths", "msgs_per_node", "time_L", "wall_seconds", "seed", "replay", "window_ms"} {
		assert.Contains(t, obj, f)
	}
	assert.Equal(t, "runtime", obj["mode"])
	assert.Equal(t, 2.0, obj["runs"])
	assert.Equal(t, 0.0, obj["wrong"], "the safety invariant holds")
	assert.Equal(t, 4.0, obj["crashed"], "5 % of 32 rounds to 2 per run")
	assert.Equal(t, 6.0, obj["slow_members"], "10 % of 32 rounds to 3 per run")
	assert.Positive(t, obj["msgs_per_node"].(float64))
	assert.Positive(t, obj["time_L"].(float64))

	// The seed replays the simulation exactly (wall time aside).
	again := jsonObject(t, args...)
	for _, f := range []string{"failed", "false_deaths", "msgs_per_node", "max_msgs", "time_L", "events"} {
		assert.Equal(t, obj[f], again[f], f)
	}
}

func TestSimRuntimeRefusesAlgorithmSimulatorFlags(t *testing.T) {
	for _, args := range [][]string{
		{"sim", "--runtime", "--L", "3"},
		{"sim", "--runtime", "--mode", "sync"},
		{"sim", "--runtime", "--slow", "1"},
		{"sim", "--runtime", "--slow-factor", "0.5"},
		{"sim", "--runtime", "--crash", "2.5"},
		{"sim", "--runtime", "--nodes", "8", "--crash", "8"},
		{"sim", "--runtime", "--window", "0s"},
		{"sim", "--slow", "0.1"},
		{"sim", "--window", "1ms"},
		{"sim", "--every-tick"},
		{"sim", "--runtime", "--workers", "-1"},
	} {
		code, _, stderr := runCLI(t, args...)
		assert.Equal(t, 2, code, "%v: %s", args, stderr)
		assert.Contains(t, stderr, "usage", "%v", args)
	}
}

// TestSimRuntimeEveryTick: --every-tick ticks every member every Tick
// and so handles more events, and the simulated operation is the same
// kind of result (no failure, no wrong result, no false death).
func TestSimRuntimeEveryTick(t *testing.T) {
	args := []string{"sim", "--runtime", "--nodes", "32", "--topology", "hypercube", "--algo", "pfcc", "--crash", "0.05", "--seed", "3", "--json"}
	lean := jsonObject(t, args...)
	every := jsonObject(t, append(args, "--every-tick")...)
	for _, obj := range []map[string]any{lean, every} {
		assert.Equal(t, 0.0, obj["failed"])
		assert.Equal(t, 0.0, obj["wrong"])
		assert.Equal(t, 0.0, obj["false_deaths"])
	}
	assert.Greater(t, every["events"].(float64), lean["events"].(float64), "ticking everyone every Tick handles more events")
}

// TestSimRuntimeWorkers: the figures of sim --runtime do not depend on how
// many shards simulate the group side by side, only the wall time does.
func TestSimRuntimeWorkers(t *testing.T) {
	args := []string{"sim", "--runtime", "--nodes", "64", "--topology", "hypercube", "--algo", "pfcc", "--crash", "0.05", "--loss", "0.01", "--seed", "3", "--json"}
	one := jsonObject(t, append(args, "--workers", "1")...)
	three := jsonObject(t, append(args, "--workers", "3")...)
	for _, k := range []string{"wall_seconds", "replay"} {
		delete(one, k)
		delete(three, k)
	}
	assert.Equal(t, one, three)
	assert.Positive(t, one["events"])
}

func TestSimCrashShare(t *testing.T) {
	// A share below 1 is a share of the nodes in the algorithm simulator
	// too: 0.25 of 16 is 4 crashed nodes, as --crash 4.
	a := jsonObject(t, "sim", "--nodes", "16", "--algo", "pcf", "--crash", "0.25", "--detect-after", "5", "--seed", "9", "--json")
	b := jsonObject(t, "sim", "--nodes", "16", "--algo", "pcf", "--crash", "4", "--detect-after", "5", "--seed", "9", "--json")
	assert.Equal(t, a["mean_msgs"], b["mean_msgs"])
	assert.Equal(t, a["max_rel_error"], b["max_rel_error"])
}

func TestSimRuntimeDefaultsAreTheRuntimes(t *testing.T) {
	obj := jsonObject(t, "sim", "--runtime", "--nodes", "8", "--seed", "1", "--json")
	assert.Equal(t, "pfcc", obj["algo"])
	assert.Equal(t, 1e-9, obj["eps"])
	assert.Equal(t, 50.0, obj["latency_us"])
}
