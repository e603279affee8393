package bsim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/broadcast"
	"github.com/gossipreduce/gossipreduce/broadcast/internal/pick"
	"github.com/gossipreduce/gossipreduce/broadcast/internal/plantest"
)

// The fast engine must reproduce the machine-driven reference exactly:
// the same processes colored at the same times, the same g-nodes, the
// same latencies and message counts, for every scheme and correction it
// supports, over many random failure sets, for P up to 1024.
func TestFastMatchesMachines(t *testing.T) {
	ctx := context.Background()
	sizes := []int{2, 3, 7, 64, 200, 1024}
	trials := 12
	if testing.Short() {
		sizes = []int{3, 64, 200}
		trials = 4
	}
	corrections := []string{"none", "checked", "checked-overlapped", "opportunistic:2", "optimized:5/2",
		"opportunistic-synchronized:4", "optimized-synchronized:2"}
	models := []broadcast.LogP{{L: 2, O: 1}, {L: 1, O: 2}}
	src := rand.NewPCG(77, 78)
	compared := 0
	for _, scheme := range []string{"tree:binomial", "tree:kary:3", "tree:lame:2", "tree:optimal", "gossip"} {
		for _, order := range []broadcast.Order{broadcast.Interleaved, broadcast.InOrder} {
			if scheme == "gossip" && order == broadcast.InOrder {
				continue
			}
			for _, corr := range corrections {
				if scheme == "gossip" && corr == "checked-overlapped" {
					continue
				}
				for _, m := range models {
					for _, n := range sizes {
						s, err := broadcast.ParseScheme(scheme)
						require.NoError(t, err)
						s.Tree.Order = order
						c, err := broadcast.ParseCorrection(corr)
						require.NoError(t, err)
						p, err := broadcast.NewPlan(broadcast.Spec{Nodes: n, Scheme: s, Correction: c, Model: m})
						require.NoError(t, err)
						sim, err := NewSimulator(p)
						require.NoError(t, err)
						for trial := 0; trial < trials; trial++ {
							// From none to a third of the processes failed.
							faults := int(pick.Uniform(src, uint64(n/3+1)))
							fails, err := DrawFailures(src, n, faults)
							require.NoError(t, err)
							seed := src.Uint64()
							want, err := SimulateMachines(ctx, p, fails, seed, true)
							require.NoError(t, err)
							got, err := sim.Run(ctx, fails.Dead, seed, true)
							require.NoError(t, err)
							require.Equal(t, want, got, "%s/%s %s %+v P=%d %d failed seed %d", scheme, order, corr, m, n, faults, seed)
							compared++
						}
					}
				}
			}
		}
	}
	assert.Greater(t, compared, 100)
}

// A Simulator is reusable: a run leaves nothing behind for the next, and
// the same seed gives the same result.
func TestSimulatorReuse(t *testing.T) {
	ctx := context.Background()
	p := plantest.MustPlan(t, "gossip", "checked", 500, broadcast.LogP{L: 2, O: 1})
	sim, err := NewSimulator(p)
	require.NoError(t, err)
	fails, err := DrawFailures(rand.NewPCG(1, 1), 500, 40)
	require.NoError(t, err)
	first, err := sim.Run(ctx, fails.Dead, 9, true)
	require.NoError(t, err)
	_, err = sim.Run(ctx, nil, 10, false)
	require.NoError(t, err)
	again, err := sim.Run(ctx, fails.Dead, 9, true)
	require.NoError(t, err)
	assert.Equal(t, first, again)
	fresh, err := NewSimulator(p)
	require.NoError(t, err)
	other, err := fresh.Run(ctx, fails.Dead, 9, true)
	require.NoError(t, err)
	assert.Equal(t, first, other)
}

func TestFastRejects(t *testing.T) {
	for _, c := range [][2]string{{"bmg", "none"}, {"ack:binomial", "none"}, {"gossip", "failproof:1"}, {"tree:binomial", "failproof:1"}} {
		p := plantest.MustPlan(t, c[0], c[1], 50, broadcast.LogP{L: 2, O: 1})
		assert.False(t, FastSupported(p), fmt.Sprint(c))
		_, err := NewSimulator(p)
		assert.Error(t, err)
	}
	p := plantest.MustPlan(t, "tree:binomial", "checked", 50, broadcast.LogP{L: 2, O: 1})
	sim, err := NewSimulator(p)
	require.NoError(t, err)
	_, err = sim.Run(context.Background(), make([]bool, 49), 1, false)
	assert.Error(t, err)
	dead := make([]bool, 50)
	dead[0] = true
	_, err = sim.Run(context.Background(), dead, 1, false)
	assert.Error(t, err)
}

// The bucket queue grows when an event lands beyond its ring and keeps
// every event at its time.
func TestTimelineGrows(t *testing.T) {
	var tl timeline
	tl.init(1)
	require.Len(t, tl.b, 64)
	tl.now = 100
	for _, at := range []int64{100, 130, 163, 250, 1000} {
		b := tl.at(at)
		b.recv = append(b.recv, uint64(at))
	}
	assert.GreaterOrEqual(t, len(tl.b), 1024)
	for _, at := range []int64{100, 130, 163, 250, 1000} {
		assert.Equal(t, []uint64{uint64(at)}, tl.b[at&tl.mask].recv, "time %d", at)
	}
}
