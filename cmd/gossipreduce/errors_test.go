package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
		{"spectral", "--topology", "torus:0x3"},
	} {
		code, _, stderr := runCLI(t, args...)
		assert.Equal(t, 2, code, "%v: %s", args, stderr)
		line, _, _ := strings.Cut(stderr, "\n")
		msg, ok := strings.CutPrefix(line, "gossipreduce "+args[0]+": ")
		assert.True(t, ok, "%v: %q names the verb first", args, line)
		assert.Equal(t, 1, gossiptest.PrefixCount(errors.New(msg)), "%v: %q", args, msg)
	}
}

// TestFlagErrors: a bad flag is reported once, in the command's words:
// the verb, the flag as the help writes it (--name) and the problem, with
// no package or "usage" prefix before it ("gossipreduce run: usage:
// invalid value "x" for flag -algo: algo: unknown algorithm" was the old
// shape), then a usage line instead of the whole help; the exit status
// is 2.
func TestFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--algo", "nosuch"}, `--algo: unknown algorithm "nosuch" (known: `},
		{[]string{"sdc", "--algo", "pfcc,magic"}, `--algo: unknown algorithm "magic" (known: `},
		{[]string{"run", "--nodes", "x"}, `--nodes: "x" is not a valid int`},
		{[]string{"run", "--nodes", "1e99"}, `--nodes: "1e99" is not a valid int`},
		{[]string{"run", "--nodes", "99999999999999999999"}, `--nodes: "99999999999999999999" is out of range`},
		{[]string{"run", "--timeout", "5"}, `--timeout: "5" is not a valid duration`},
		{[]string{"run", "--json=maybe"}, `--json: "maybe" is not true or false`},
		{[]string{"run", "--loss", "2"}, `--loss: "2": want a probability in [0, 1)`},
		{[]string{"run", "--nodes"}, "--nodes needs a value"},
		{[]string{"run", "--bogus"}, "unknown flag --bogus"},
		{[]string{"bcast", "tree", "--bogus"}, "unknown flag --bogus"},
		{[]string{"run", "--nodes", "0"}, "--nodes 0 must be at least 1"},
	} {
		code, stdout, stderr := runCLI(t, c.args...)
		assert.Equal(t, 2, code, "%v: %s", c.args, stderr)
		assert.Empty(t, stdout, c.args)
		verb := c.args[0]
		if verb == "bcast" {
			verb += " " + c.args[1]
		}
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		require.Len(t, lines, 2, "%v: the error and a usage line: %s", c.args, stderr)
		assert.True(t, strings.HasPrefix(lines[0], "gossipreduce "+verb+": "+c.want), "%v: %q, want %q", c.args, lines[0], c.want)
		assert.Equal(t, "usage: gossipreduce "+verb+" [flags] (gossipreduce help "+verb+" lists them)", lines[1], c.args)
	}

	// A deprecated name is still reported by the name given, after its
	// warning.
	code, _, stderr := runCLI(t, "bench", "--algos", "nosuch")
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "gossipreduce: --algos is deprecated; use --algo\ngossipreduce bench: --algos: unknown algorithm \"nosuch\"")
}
