//go:build chaos

package simnet

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/parallel"
	"github.com/gossipreduce/gossipreduce/member"
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

// TestSmallSlowGroups is the search that found PFCC members certifying
// themselves on one neighbour's late messages (trace stale_agreement.txt),
// behind the chaos build tag:
//
//	go test -tags chaos -run TestSmallSlowGroups -timeout 1h ./member/simnet
//
// Each run is one operation of a PFCC group of 3 to 5 members on a
// complete overlay, Suspect 200 ms, messages 20 to 220 ms plus up to 320
// ms late, 5 % lost in half the runs, and in half a member killed and
// started again (durable) in its first 200 ms, all drawn from the run's
// seed; every outcome is checked with member.Check. The chaos campaigns
// rarely draw a group that small and that slow: before the fix this
// search found 12 wrong results in seeds 10,000 to 129,999 (relative
// errors 1.9e-9 to 0.14), the campaigns none in 117,000 operations.
// SMALLSLOW_RUNS (default 120000) and SMALLSLOW_SEED (default 10000) set
// its size and first seed.
func TestSmallSlowGroups(t *testing.T) {
	runs, first := 120_000, 10_000
	for _, v := range []struct {
		env string
		dst *int
	}{{"SMALLSLOW_RUNS", &runs}, {"SMALLSLOW_SEED", &first}} {
		if s := os.Getenv(v.env); s != "" {
			n, err := strconv.Atoi(s)
			require.NoError(t, err, v.env)
			*v.dst = n
		}
	}
	t.Logf("seeds %d to %d (SMALLSLOW_SEED, SMALLSLOW_RUNS)", first, first+runs-1)
	var mu sync.Mutex
	bad := 0
	err := parallel.For(context.Background(), runs, 0, func(_ context.Context, i int) error {
		seed := uint64(first + i)
		cfg, restart, in := smallSlowGroup(seed)
		net, err := New(cfg)
		if err != nil {
			return err
		}
		net.MaxEvents = 200_000
		if restart.ok {
			net.Restart(restart.id, restart.at, true)
		}
		outs := net.Run(1, in, nil, 8*time.Second)
		if vs := member.Check(cfg.Nodes, 1, in, outs, net.cfg.Epsilon); len(vs) > 0 {
			mu.Lock()
			defer mu.Unlock()
			bad++
			again := "none"
			if restart.ok {
				again = fmt.Sprintf("member %d at %v", restart.id, restart.at)
			}
			t.Errorf("seed %d (%d members, latency %v, jitter %v, loss %g, restarted: %s): %v", seed, cfg.Nodes, cfg.Latency, cfg.Jitter, cfg.Loss, again, vs[0])
		}
		return nil
	}, nil)
	require.NoError(t, err)
	t.Logf("%d runs, %d with a violation", runs, bad)
}

// smallSlowGroup draws TestSmallSlowGroups' run of seed: the group's
// configuration, a member to kill and start again, and the inputs.
func smallSlowGroup(seed uint64) (cfg Config, restart struct {
	ok bool
	id gossip.NodeID
	at time.Duration
}, in [][]float64) {
	r := rand.New(rand.NewPCG(seed, 7))
	n := 3 + r.IntN(3)
	cfg = Config{Nodes: n, Algorithm: "pfcc", Seed: seed, Suspect: 200 * time.Millisecond,
		Latency: time.Duration(20+r.IntN(200)) * time.Millisecond, Jitter: time.Duration(20+r.IntN(300)) * time.Millisecond}
	if r.IntN(2) == 0 {
		cfg.Loss = 0.05
	}
	if r.IntN(2) == 0 {
		restart.ok = true
		restart.id = gossip.NodeID(r.IntN(n))
		restart.at = time.Duration(r.IntN(200)) * time.Millisecond
	}
	in = make([][]float64, n)
	for i := range in {
		in[i] = []float64{float64(1 + r.IntN(1000)), r.NormFloat64()}
	}
	return cfg, restart, in
}
