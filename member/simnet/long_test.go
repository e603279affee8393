//go:build chaos

package simnet

import (
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestChaosLong is the long campaign, behind the chaos build tag:
//
//	go test -tags chaos -run TestChaosLong -timeout 3h ./member/simnet
//
// CHAOS_OPS (default 10000), CHAOS_SEED (default 1) and CHAOS_ALGO
// (default exchange) set its size, seed and algorithm; a failing case replays
// with ChaosCase(seed, ChaosConfig{Scenarios: Scenarios, Algorithm: algorithm}).
func TestChaosLong(t *testing.T) {
	ops, seed := 10_000, uint64(1)
	if s := os.Getenv("CHAOS_OPS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "CHAOS_OPS")
		ops = n
	}
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "CHAOS_SEED")
		seed = n
	}
	campaign(t, ops, seed, os.Getenv("CHAOS_ALGO"))
}
