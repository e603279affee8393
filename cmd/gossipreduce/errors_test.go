package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
)

// A failing command names the verb, then the package that found the
// problem, once ("gossipreduce sim: sim: simnet: topology: …" was the
// old shape).
func TestErrorsNameOnePackage(t *testing.T) {
	for _, args := range [][]string{
		{"sim", "--runtime", "--nodes", "100"},
		{"sim", "--nodes", "100"},
		{"run", "--nodes", "6", "--topology", "hypercube"},
		{"sdc", "--algo", "magic"},
		{"spectral", "--topology", "torus:0x3"},
	} {
		code, _, stderr := runCLI(t, args...)
		assert.Equal(t, 2, code, "%v: %s", args, stderr)
		// The last line: a flag error prints the verb's help first.
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		line := lines[len(lines)-1]
		msg, ok := strings.CutPrefix(line, "gossipreduce "+args[0]+": ")
		assert.True(t, ok, "%v: %q names the verb first", args, line)
		msg, _ = strings.CutPrefix(msg, "usage: ")
		assert.Equal(t, 1, gossiptest.PrefixCount(errors.New(msg)), "%v: %q", args, msg)
	}
}
