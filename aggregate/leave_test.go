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
// held (for an hour: longer than the test lives) until 0 has its result
// and member 1 has sent it asks messages since. Member 0 then leaves by
// calling leave with a context that ends once member 1 has returned (or
// after a minute); leaveRun returns member 0 and member 1's error. Member
// 1's operation has a deadline of a minute, or wait if it is positive.
func leaveRun(t *testing.T, asks int32, wait time.Duration, leave func(context.Context, *aggregate.Node) error) (*aggregate.Node, error) {
	t.Helper()
	var hold, finished atomic.Bool
	var passed, asked atomic.Int32
	tr, err := transport.NewMemory(transport.MemoryOptions{Delay: func(from, to gossip.NodeID) time.Duration {
		if from == 1 && to == 0 && finished.Load() {
			asked.Add(1)
		}
		if from == 0 && to == 1 && hold.Load() && passed.Add(1) > 1 && (!finished.Load() || asked.Load() < asks) {
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
		d := time.Minute
		if wait > 0 {
			d = wait
		}
		_, err := b.Average(timeout(t, d), []float64{3})
		errb <- err
	}()
	res, err := a.Average(timeout(t, 10*time.Second), []float64{1})
	require.NoError(t, err)
	assert.Equal(t, []float64{2}, res.Value)
	finished.Store(true)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	left := make(chan error, 1)
	go func() { left <- leave(ctx, a) }()
	err = <-errb
	cancel()
	require.NoError(t, <-left)
	return a, err
}

// A member that leaves with Leave answers a partner that missed its vouch,
// so the partner finishes too.
func TestLeaveAnswersTheLate(t *testing.T) {
	_, err := leaveRun(t, 0, 0, func(ctx context.Context, a *aggregate.Node) error { return a.Leave(ctx) })
	assert.NoError(t, err)
}

// The contrast that shows what Leave is for: a member that stops at once
// without a word takes the partner's result with it (the vouch it holds
// is the partner's only source; the partner falls back to PFCC, in which
// one member of two is no majority), and the partner ends with
// ErrNotConverged at its deadline (2 s here: nothing tells it that member
// 0 has gone).
func TestStopAtOnceStrandsTheLate(t *testing.T) {
	_, err := leaveRun(t, 0, 2*time.Second, func(_ context.Context, a *aggregate.Node) error { return a.Stop() })
	assert.ErrorIs(t, err, aggregate.ErrNotConverged)
}

// A member that closes at once says in its leave notice that it returned
// the exchange's result, and with which hash: the partner, which accepted
// the same result and waits only for the vouch, returns it (before the
// notice said so, this partner ended with ErrNotConverged too).
func TestCloseAtOnceSaysTheResultIsChosen(t *testing.T) {
	_, err := leaveRun(t, 0, 0, func(_ context.Context, a *aggregate.Node) error { return a.Close() })
	assert.NoError(t, err)
}

// A member that leaves stays while a member still at the operation keeps
// asking it (Stats.Late grows), past the Suspect of quiet after which it
// would go: member 1 misses member 0's vouch until it has sent member 0
// 120 messages since 0 had its result (asks, probes and heartbeats:
// about three seconds, three times the Suspect of quiet), and member 0 must
// still be there to answer. With Stats.Late left uncounted, member 0 left
// after one second and member 1 ran into its deadline.
func TestLeaveStaysForAStraggler(t *testing.T) {
	a, err := leaveRun(t, 120, 0, func(ctx context.Context, a *aggregate.Node) error { return a.Leave(ctx) })
	assert.NoError(t, err, "the straggler did not finish: its partner left")
	assert.GreaterOrEqual(t, a.Stats().Late, 120)
}

// Leave does not wait out a generous deadline when no member is still at
// the operation: it goes once nobody has sent it anything for Suspect.
func TestLeaveGoesWhenNobodyAsks(t *testing.T) {
	tr, err := transport.NewMemory(transport.MemoryOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { tr.Close() })
	cfg := aggregate.Config{Group: "quiet", Nodes: 2, Algorithm: "exchange", Suspect: 100 * time.Millisecond}
	a := joinOne(t, tr, cfg)
	cfg.ID = 1
	b := joinOne(t, tr, cfg)
	errb := make(chan error, 1)
	go func() {
		_, err := b.Average(timeout(t, time.Minute), []float64{3})
		errb <- err
	}()
	_, err = a.Average(timeout(t, time.Minute), []float64{1})
	require.NoError(t, err)
	require.NoError(t, <-errb)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	require.NoError(t, a.Leave(ctx))
	assert.NoError(t, ctx.Err(), "Leave waited for its deadline with nobody asking")
}
