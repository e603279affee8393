package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHelpAndVersion(t *testing.T) {
	code, stdout, stderr := runCmd(t, "help", "run")
	assert.Equal(t, 0, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "usage: gossipreduce run [flags]: a live all-reduce")
	assert.Contains(t, stderr, "\n  --nodes int\n", "flags are written --name, as the README does")

	code, _, stderr = runCmd(t, "help", "magic")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `unknown verb "magic"`)

	code, _, stderr = runCmd(t, "help")
	assert.Equal(t, 0, code)
	assert.Contains(t, stderr, "  run       a live all-reduce")

	for _, arg := range []string{"--version", "version"} {
		code, stdout, _ = runCmd(t, arg)
		assert.Equal(t, 0, code)
		assert.Regexp(t, `^gossipreduce \S+ .*go1\.\d+`, stdout)
	}
}
