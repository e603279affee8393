package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/member"
	"github.com/gossipreduce/gossipreduce/member/simnet"
)

func TestChaosSimulatedJSON(t *testing.T) {
	got, stderr := chaosJSON(t, "--ops", "6", "--seed", "3", "--json")
	assert.Contains(t, stderr, "seed 3")
	assert.Equal(t, "simulated", got.Mode)
	assert.GreaterOrEqual(t, got.Operations, 6)
	assert.Equal(t, 0, got.Violations)
	assert.Empty(t, got.Cases)
}

func TestChaosLiveOverEmbeddedNATS(t *testing.T) {
	got, _ := chaosJSON(t, "--real-nats", "--ops", "3", "--seed", "8", "--scenario", "loss,crash", "--json")
	assert.Equal(t, "nats", got.Mode)
	assert.Equal(t, 3, got.Operations)
	assert.Equal(t, 0, got.Violations)
}

func TestChaosBadFlags(t *testing.T) {
	code, _, stderr := runCLI(t, "chaos", "--scenario", "meteor")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "meteor")
	code, _, _ = runCLI(t, "chaos", "--real-nats", "--scenario", "pause")
	assert.Equal(t, 2, code, "pauses need the simulator")
	code, _, stderr = runCLI(t, "chaos", "--memory", "--scenario", "restart")
	assert.Equal(t, 2, code, "no server to restart")
	assert.Contains(t, stderr, "restart")
	code, _, _ = runCLI(t, "chaos", "--nats", "nats://127.0.0.1:1", "--scenario", "restart")
	assert.Equal(t, 2, code, "an external server is not ours to restart")
	code, _, _ = runCLI(t, "chaos", "--memory", "--real-nats")
	assert.Equal(t, 2, code)
	code, _, _ = runCLI(t, "chaos", "--memory", "--token", "x")
	assert.Equal(t, 2, code, "credentials are for NATS")
	code, _, _ = runCLI(t, "chaos", "--ops", "0")
	assert.Equal(t, 2, code)
}

// Replay over the memory transport: traffic recorded in one operation of
// each replay case is published into a second operation of new members of
// the same group, under the same key; the session layer drops it all but
// the handshakes that name no incarnation, and the invariant holds.
func TestChaosMemoryReplay(t *testing.T) {
	got, _ := chaosJSON(t, "--memory", "--ops", "6", "--seed", "1", "--scenario", "replay,loss", "--json")
	assert.Equal(t, "memory", got.Mode)
	assert.GreaterOrEqual(t, got.Operations, 6)
	assert.Equal(t, 0, got.Violations)
	assert.Empty(t, got.Cases)
	require.NotNil(t, got.Replay)
	r := got.Replay
	assert.Positive(t, r.Operations, "seed 1 draws replay cases")
	assert.Positive(t, r.Recorded)
	assert.Positive(t, r.Injected)
	// Every injected message that names an incarnation (all but the
	// probes) reached an open endpoint and was dropped as a replay; the
	// answers to replayed probes, bound to dead incarnations, add more.
	assert.GreaterOrEqual(t, r.Dropped, uint64(r.Injected-r.Probes))
	assert.Nil(t, got.Restart)
}

// A restart of the embedded NATS server in the middle of operations:
// members may fail, but none may break the invariant.
func TestChaosNATSRestart(t *testing.T) {
	got, _ := chaosJSON(t, "--real-nats", "--ops", "3", "--seed", "1", "--scenario", "restart", "--json")
	assert.Equal(t, "nats", got.Mode)
	assert.Equal(t, 3, got.Operations)
	assert.Equal(t, 0, got.Violations)
	require.NotNil(t, got.Restart)
	assert.Positive(t, got.Restart.Restarts, "seed 1 draws restarts")
}

// Violating cases go to stderr as soon as they are found, and the final
// report keeps them.
func TestChaosReportCase(t *testing.T) {
	var b strings.Builder
	reportCase(&b, simnet.Case{Seed: 42, Schedule: "nodes 3: loss 0.2", Violations: []member.Violation{{Epoch: 1, Member: 2, What: "bad"}}})
	assert.Contains(t, b.String(), "case seed 42")
	assert.Contains(t, b.String(), "--seed 42")
	assert.Contains(t, b.String(), "nodes 3: loss 0.2")
	assert.Contains(t, b.String(), "epoch 1, member 2: bad")
}

// chaosJSON runs the chaos verb with args, requires success, and returns
// its JSON report and stderr.
func chaosJSON(t *testing.T, args ...string) (chaosOutput, string) {
	t.Helper()
	code, stdout, stderr := runCLI(t, append([]string{"chaos"}, args...)...)
	require.Equal(t, 0, code, stderr)
	var got chaosOutput
	require.NoError(t, json.Unmarshal([]byte(stdout), &got))
	return got, stderr
}
