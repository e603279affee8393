package main

import (
	"bytes"
	"io"
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
