package aggregate_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
)

// leaveRun is a two-member exchange in which member 1 misses member 0's
// vouch, the message of the exchange's second pass: once both have
// joined, every message from 0 to 1 after the first (0's step message) is
// held (for an hour: longer than the test lives) until 0 has its result.
// Member 0 then leaves by calling leave with a context that ends once
// member 1 has returned; leaveRun returns member 1's error.
func leaveRun(t *testing.T, leave func(context.Context, *aggregate.Node) error) error {
	t.Helper()
	var hold atomic.Bool
	var passed atomic.Int32
	tr, err := transport.NewMemory(transport.MemoryOptions{Delay: func(from, to gossip.NodeID) time.Duration {
		if from == 0 && to == 1 && hold.Load() && passed.Add(1) > 1 {
			return time.Hour
		}
		return 0
	}})
	require.NoError(t, err)
	t.Cleanup(func() { tr.Close() })
	cfg := aggregate.Config{Group: "leave", Nodes: 2, Algorithm: "exchange"}
	a := joinOne(t, tr, cfg)
	cfg.ID = 1
	b := joinOne(t, tr, cfg)
	hold.Store(true)

	errb := make(chan error, 1)
	go func() {
		_, err := b.Average(timeout(t, 2*time.Second), []float64{3})
		errb <- err
	}()
	res, err := a.Average(timeout(t, 10*time.Second), []float64{1})
	require.NoError(t, err)
	assert.Equal(t, []float64{2}, res.Value)
	hold.Store(false)

	ctx, cancel := context.WithCancel(context.Background())
	left := make(chan error, 1)
	go func() { left <- leave(ctx, a) }()
	err = <-errb
	cancel()
	require.NoError(t, <-left)
	return err
}

// A member that leaves with Leave answers a partner that missed its vouch,
// so the partner finishes too.
func TestLeaveAnswersTheLate(t *testing.T) {
	err := leaveRun(t, func(ctx context.Context, a *aggregate.Node) error { return a.Leave(ctx) })
	assert.NoError(t, err)
}

// The contrast that shows what Leave is for: a member that closes at once
// takes the partner's result with it (the vouch it holds is the partner's
// only source; the partner falls back to PFCC, in which one member of two
// is no majority), and the partner ends with ErrNotConverged.
func TestCloseAtOnceStrandsTheLate(t *testing.T) {
	err := leaveRun(t, func(_ context.Context, a *aggregate.Node) error { return a.Close() })
	assert.ErrorIs(t, err, aggregate.ErrNotConverged)
}
