package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunLiveJSONContract(t *testing.T) {
	obj := jsonObject(t, "run", "--nodes", "8", "--eps", "1e-9", "--seed", "3", "--runs", "2", "--json")
	for _, f := range []string{"algo", "topology", "nodes", "result", "exact", "max_rel_error", "identical", "messages", "max_msgs", "seconds", "excluded",
		"live", "absent", "coverage_differs", "per_run", "forged", "replayed", "malformed", "foreign", "overflow", "incomplete", "warnings"} {
		assert.Contains(t, obj, f)
	}
	assert.NotContains(t, obj, "error")
	assert.Equal(t, 8.0, obj["live"], "from the results")
	assert.Equal(t, []any{}, obj["absent"])
	assert.Equal(t, false, obj["coverage_differs"])
	assert.Len(t, obj["per_run"], 2)
	assert.Equal(t, 0.0, obj["forged"])
	assert.Equal(t, []any{}, obj["warnings"], "the embedded server needs no key; exchange is fault-tolerant")
	assert.Equal(t, "exchange", obj["algo"])
	assert.Equal(t, 8.0, obj["nodes"])
	assert.Equal(t, true, obj["identical"])
	assert.Equal(t, 0.0, obj["failed_runs"])
	assert.Equal(t, 0.0, obj["worse_than_eps"])
	assert.LessOrEqual(t, obj["max_rel_error"].(float64), 1e-9)
	assert.Positive(t, obj["messages"].(float64))
	assert.Contains(t, obj["nats"], "nats://127.0.0.1:", "the embedded server listens on loopback")
}

func TestRunLiveFaults(t *testing.T) {
	obj := jsonObject(t, "run", "--algo", "pfcc", "--nodes", "8", "--eps", "1e-9", "--seed", "4", "--crash", "1", "--crash-root",
		"--crash-after", "10", "--suspect", "200ms", "--flip-bit", "60", "--loss", "0.05", "--json")
	assert.Equal(t, true, obj["identical"])
	// What the results say they cover: the root and one other crashed.
	assert.Equal(t, 6.0, obj["live"])
	absent := obj["absent"].([]any)
	require.Len(t, absent, 2)
	assert.Equal(t, 0.0, absent[0], "the root crashed")
	assert.Equal(t, absent, obj["per_run"].([]any)[0].(map[string]any)["absent"])
	assert.LessOrEqual(t, obj["max_rel_error"].(float64), 1e-9, "within eps of the survivors' average")
	assert.GreaterOrEqual(t, obj["excluded"].(float64), 2.0, "both crashed members were declared dead by somebody")
	assert.Equal(t, []any{}, obj["warnings"], "pfcc tolerates the faults")
}

// TestRunLiveFaultsExchange: the default algorithm under the same faults,
// with the crashes before a member's first message (its input leaves with
// it, and PFCC leaves it out) and after its second (its input is out, and
// the result keeps it); the kill races with the sends, so the coverage is
// checked as a bound.
func TestRunLiveFaultsExchange(t *testing.T) {
	for _, after := range []string{"0", "2"} {
		obj := jsonObject(t, "run", "--nodes", "8", "--seed", "4", "--runs", "2", "--crash", "1", "--crash-root",
			"--crash-after", after, "--suspect", "200ms", "--flip-bit", "60", "--loss", "0.05", "--json")
		assert.Equal(t, "exchange", obj["algo"])
		assert.Equal(t, true, obj["identical"], "after %s", after)
		assert.Equal(t, 0.0, obj["failed_runs"], "after %s", after)
		assert.LessOrEqual(t, obj["max_rel_error"].(float64), 1e-9, "within eps of what the result covers")
		assert.GreaterOrEqual(t, obj["live"].(float64), 6.0)
		for _, r := range obj["per_run"].([]any) {
			absent := r.(map[string]any)["absent"].([]any)
			assert.LessOrEqual(t, len(absent), 2, "after %s: only the two crashed members may be left out", after)
			if len(absent) == 2 {
				assert.Equal(t, 0.0, absent[0], "the root is one of them")
			}
		}
		assert.Equal(t, []any{}, obj["warnings"])
	}
}

// TestRunPushSumWarning: Push-Sum with faults is warned about, on stderr
// and in the JSON; without faults, or with pfcc, it is not.
func TestRunPushSumWarning(t *testing.T) {
	code, stdout, stderr := runCLI(t, "run", "--algo", "ps", "--loss", "0.1", "--nodes", "4", "--seed", "2", "--timeout", "2s", "--json")
	assert.NotEqual(t, 2, code, stderr) // lost mass may make the result wrong (exit 1)
	assert.Contains(t, stderr, "gossipreduce run: warning: Push-Sum (ps) is not fault-tolerant (requested: --loss 0.1)")
	assert.Contains(t, stderr, "use the default, exchange, or pfcc")
	var obj map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &obj), stdout)
	require.Len(t, obj["warnings"], 1)
	assert.Contains(t, obj["warnings"].([]any)[0], "not fault-tolerant")

	// The other faults, against a server that is not there: the warning
	// comes before the connection fails.
	for _, faults := range [][]string{{"--crash", "1"}, {"--crash-root"}, {"--flip-bit", "3"}, {"--flip-rate", "0.001"}} {
		args := append([]string{"run", "--algo", "ps-iter", "--nodes", "4", "--nats", "nats://127.0.0.1:1"}, faults...)
		code, _, stderr := runCLI(t, args...)
		assert.Equal(t, 1, code, stderr)
		assert.Contains(t, stderr, "Push-Sum (ps-iter) is not fault-tolerant (requested: "+strings.Join(faults, " ")+")")
	}
	code, _, stderr = runCLI(t, "run", "--algo", "pcf", "--loss", "0.1", "--nodes", "4", "--nats", "nats://127.0.0.1:1")
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "Push-Cancel-Flow (pcf) is not fault-tolerant (requested: --loss 0.1)")
	for _, args := range [][]string{
		{"run", "--algo", "ps", "--loss", "0", "--flip-bit", "-1", "--crash", "0"},
		{"run", "--algo", "pfcc", "--loss", "0.1", "--crash", "1"},
	} {
		code, _, stderr := runCLI(t, append(args, "--nodes", "4", "--nats", "nats://127.0.0.1:1")...)
		assert.Equal(t, 1, code, stderr)
		assert.NotContains(t, stderr, "fault-tolerant", args)
	}
}

// TestRunFailed: when no member returns a result, run says it failed and
// why, and prints none of the figures that need a result.
func TestRunFailed(t *testing.T) {
	// A deadline that has passed before the members have joined: the
	// timeout bounds the set-up too.
	args := []string{"run", "--nodes", "2", "--seed", "1", "--timeout", "1ns"}
	code, stdout, stderr := runCLI(t, append(args, "--json")...)
	assert.Equal(t, 1, code, stderr)
	var obj map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &obj), stdout)
	assert.Contains(t, obj["error"], "1 of 1 runs failed")
	// Where the deadline is noticed (before the join, or inside the
	// transport's subscribe) is a race; both say what ran out and why.
	assert.Contains(t, obj["error"], "joining 2 members: ")
	assert.Contains(t, obj["error"], "context deadline exceeded (within --timeout 1ns)")
	assert.Equal(t, 1.0, obj["failed_runs"])
	for _, f := range []string{"result", "exact", "max_rel_error", "identical", "live", "absent"} {
		assert.Contains(t, obj, f)
		assert.Nil(t, obj[f], f)
	}
	assert.Nil(t, obj["per_run"].([]any)[0].(map[string]any)["live"])
	assert.NotContains(t, stdout, "1.797")

	code, stdout, stderr = runCLI(t, args...)
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stdout, "error           1 of 1 runs failed")
	assert.Contains(t, stdout, "result          none")
	for _, s := range []string{"max rel error", "identical", "Inf", "exact", "covers"} {
		assert.NotContains(t, stdout, s)
	}
}

func TestRunLiveBadInput(t *testing.T) {
	for name, args := range map[string][]string{
		"hypercube N":  {"run", "--topology", "hypercube", "--nodes", "12"},
		"unknown algo": {"run", "--algo", "magic"},
		"eps":          {"run", "--eps", "0"},
		"crash all":    {"run", "--nodes", "4", "--crash", "3", "--crash-root"},
		"flip bit":     {"run", "--flip-bit", "64"},
		"flip target":  {"run", "--flip-target", "soul"},
		"loss":         {"run", "--loss", "1.5"},
		"unknown flag": {"run", "--turbo"},
	} {
		code, _, stderr := runCLI(t, args...)
		assert.Equal(t, 2, code, "%s: %s", name, stderr)
		assert.NotContains(t, stderr, "panic")
	}
}

// A text report shows a long vector's first components and its length,
// not a million numbers; a short one whole.
func TestBriefVector(t *testing.T) {
	assert.Equal(t, "[1 2 3]", brief([]float64{1, 2, 3}))
	long := make([]float64, 1_000_000)
	long[0] = 7
	got := brief(long)
	assert.Equal(t, "[7 0 0 0 0 0 0 0 … 1000000 components (--json has all)]", got)
}

// TestRunRing: the ring baseline runs live like rdb: a result at every
// member, the same bits, exact to rounding, and 2(N−1) messages per member
// when the vector has at least N words.
func TestRunRing(t *testing.T) {
	obj := jsonObject(t, "run", "--algo", "ring", "--nodes", "6", "--components", "40", "--seed", "2", "--runs", "2", "--json")
	assert.NotContains(t, obj, "error")
	assert.Equal(t, "ring", obj["algo"])
	assert.Equal(t, 0.0, obj["failed_runs"])
	assert.Equal(t, true, obj["identical"])
	assert.Equal(t, 6.0, obj["live"])
	assert.LessOrEqual(t, obj["max_rel_error"].(float64), 1e-15)
	assert.Equal(t, 6.0*10, obj["messages"], "2(6−1) per member")
}
