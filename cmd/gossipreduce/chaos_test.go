package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestChaosSimulatedJSON(t *testing.T) {
	code, stdout, stderr := runCmd(t, "chaos", "--ops", "6", "--seed", "3", "--json")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "seed 3")
	var got chaosOutput
	require.NoError(t, json.Unmarshal([]byte(stdout), &got))
	assert.Equal(t, "simulated", got.Mode)
	assert.GreaterOrEqual(t, got.Operations, 6)
	assert.Equal(t, 0, got.Violations)
	assert.Empty(t, got.Cases)
}

func TestChaosLiveOverEmbeddedNATS(t *testing.T) {
	code, stdout, stderr := runCmd(t, "chaos", "--real-nats", "--ops", "3", "--seed", "8", "--scenario", "loss,crash", "--json")
	require.Equal(t, 0, code, stderr)
	var got chaosOutput
	require.NoError(t, json.Unmarshal([]byte(stdout), &got))
	assert.Equal(t, "nats", got.Mode)
	assert.Equal(t, 3, got.Operations)
	assert.Equal(t, 0, got.Violations)
}

func TestChaosBadFlags(t *testing.T) {
	code, _, stderr := runCmd(t, "chaos", "--scenario", "meteor")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "meteor")
	code, _, _ = runCmd(t, "chaos", "--real-nats", "--scenario", "pause")
	assert.Equal(t, 2, code, "pauses need the simulator")
	code, _, _ = runCmd(t, "chaos", "--ops", "0")
	assert.Equal(t, 2, code)
}
