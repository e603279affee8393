package main

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestRunLiveJSONContract(t *testing.T) {
	obj := jsonObject(t, "run", "--nodes", "8", "--eps", "1e-9", "--seed", "3", "--runs", "2", "--json")
	for _, f := range []string{"algo", "topology", "nodes", "result", "exact", "max_rel_error", "identical", "messages", "max_msgs", "seconds", "excluded", "overflow"} {
		assert.Contains(t, obj, f)
	}
	assert.Equal(t, "pfcc", obj["algo"])
	assert.Equal(t, 8.0, obj["nodes"])
	assert.Equal(t, true, obj["identical"])
	assert.Equal(t, 0.0, obj["failed_runs"])
	assert.Equal(t, 0.0, obj["worse_than_eps"])
	assert.LessOrEqual(t, obj["max_rel_error"].(float64), 1e-9)
	assert.Positive(t, obj["messages"].(float64))
	assert.Contains(t, obj["nats"], "nats://127.0.0.1:", "the embedded server listens on loopback")
}

func TestRunLiveFaults(t *testing.T) {
	obj := jsonObject(t, "run", "--nodes", "8", "--eps", "1e-9", "--seed", "4", "--crash", "1", "--crash-root",
		"--suspect", "200ms", "--flip-bit", "60", "--loss", "0.05", "--json")
	assert.Equal(t, true, obj["identical"])
	assert.Equal(t, 6.0, obj["live"])
	assert.LessOrEqual(t, obj["max_rel_error"].(float64), 1e-9, "within eps of the survivors' average")
	assert.GreaterOrEqual(t, obj["excluded"].(float64), 2.0, "both crashed members were declared dead by somebody")
}

func TestSharedIdleGrowsWithMembersPerCore(t *testing.T) {
	cores := runtime.GOMAXPROCS(0)
	assert.Equal(t, 4*time.Millisecond, sharedIdle(1), "one member keeps the library default")
	// 120 µs per member per core: 1000·cores members give 120 ms.
	assert.Equal(t, 120*time.Millisecond, sharedIdle(1000*cores))
	assert.Greater(t, sharedIdle(2000*cores), sharedIdle(1000*cores))
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
