package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHelpAndVersion(t *testing.T) {
	code, stdout, stderr := runCLI(t, "help", "run")
	assert.Equal(t, 0, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "usage: gossipreduce run [flags]: a live all-reduce")
	assert.Contains(t, stderr, "\n  --nodes int\n", "flags are written --name, as the README does")

	code, _, stderr = runCLI(t, "help", "magic")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `unknown verb "magic"`)

	code, _, stderr = runCLI(t, "help")
	assert.Equal(t, 0, code)
	assert.Contains(t, stderr, "  run       a live all-reduce")

	for _, arg := range []string{"--version", "version"} {
		code, stdout, _ = runCLI(t, arg)
		assert.Equal(t, 0, code)
		assert.Regexp(t, `^gossipreduce \S+ .*go1\.\d+`, stdout)
	}
}

// TestProgressOffTerminal: progress written to a file or a pipe is plain
// lines, no carriage return (a log would keep every overwritten state), and
// --quiet silences it. A run that ends within the first interval says
// nothing.
func TestProgressOffTerminal(t *testing.T) {
	var buf bytes.Buffer
	out := &stdio{Stdout: io.Discard, Stderr: &buf}
	p := newProgress(out, "sim")
	assert.False(t, p.terminal)
	p.update(5, 5)
	assert.Empty(t, buf.String(), "finished within the first interval")
	p = newProgress(out, "sim")
	p.every = 0
	p.update(1, 3)
	p.update(3, 3)
	assert.Equal(t, "sim: 1/3\nsim: 3/3\n", buf.String())

	buf.Reset()
	fs := newFlags("sim", out)
	require.NoError(t, fs.Parse([]string{"--quiet"}))
	p = newProgress(out, "sim")
	p.every = 0
	p.update(1, 3)
	assert.Empty(t, buf.String())
}

// TestFailuresAreJSON: every verb that fails (exit 1) with --json prints
// one JSON object with an error field, and, when it failed before it had a
// report, nothing else: no figure of work that did not happen. Without
// --json it prints nothing on stdout and the error on stderr. A cancelled
// context makes every verb that does work fail.
func TestFailuresAreJSON(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range [][]string{
		{"run", "--nodes", "4"},
		{"bench", "--nodes", "4", "--runs", "1"},
		{"chaos", "--ops", "2"},
		{"chaos", "--memory", "--ops", "2"},
		{"sim"},
		{"sim", "--mode", "sync"},
		{"sim", "--runtime", "--nodes", "8"},
		{"sdc", "--runs", "2"},
		{"spectral", "--topology", "bmg", "--nodes", "64"},
		{"bcast", "--runs", "10"},
		{"server", "--port", "0"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(ctx, append(args, "--json"), &stdio{Stdout: &stdout, Stderr: &stderr})
		assert.Equal(t, 1, code, "%v: %s", args, stderr.String())
		dec := json.NewDecoder(&stdout)
		var obj map[string]any
		require.NoError(t, dec.Decode(&obj), "%v", args)
		assert.False(t, dec.More(), "%v: exactly one JSON object", args)
		assert.Equal(t, []string{"error"}, slices.Collect(maps.Keys(obj)), "%v", args)
		assert.Contains(t, obj["error"], "context canceled", args)

		stdout.Reset()
		stderr.Reset()
		code = run(ctx, args, &stdio{Stdout: &stdout, Stderr: &stderr})
		assert.Equal(t, 1, code, "%v", args)
		assert.Empty(t, stdout.String(), "%v", args)
		assert.Contains(t, stderr.String(), "gossipreduce "+args[0]+": ", args)
		assert.Contains(t, stderr.String(), "context canceled", args)
	}
}

// TestSimFailed: a simulation that fails says so, in text and in JSON, and
// prints no figure (converged, max_rel_error, …) of the runs it did not
// finish.
func TestSimFailed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"sim", "--runs", "3", "--seed", "1", "--json"}, &stdio{Stdout: &stdout, Stderr: &stderr})
	assert.Equal(t, 1, code)
	// Where the simulator notices the cancellation decides how often its
	// error is wrapped ("sim: sim: context canceled").
	msg := `^(sim: )+context canceled$`
	var obj map[string]any
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &obj), stdout.String())
	assert.Len(t, obj, 1, "the error, and no figure")
	assert.Regexp(t, msg, obj["error"])
	assert.Equal(t, "gossipreduce sim: "+obj["error"].(string)+"\n", stderr.String())

	stdout.Reset()
	stderr.Reset()
	code = run(ctx, []string{"sim", "--runs", "3", "--seed", "1"}, &stdio{Stdout: &stdout, Stderr: &stderr})
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout.String(), "no converged count, error or replay line of runs that did not happen")
	assert.Regexp(t, `^gossipreduce sim: (sim: )+context canceled\n$`, stderr.String())
}

// TestUsageErrorsAreNotJSON: a command line that is wrong (exit 2) is
// answered on stderr only, --json or not: it is not a result.
func TestUsageErrorsAreNotJSON(t *testing.T) {
	code, stdout, stderr := runCLI(t, "sim", "--json", "--eps", "0")
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "--eps 0 must be in (0, 1)")
}
