package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"time"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/internal/livegroup"
	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/gossipreduce/gossipreduce/transport/natsserver"
)

// liveNet is the NATS a live verb uses: an embedded server on a random
// loopback port, or external servers.
type liveNet struct {
	srv *natsserver.Server
	tr  *transport.NATS
	url string
}

func (l *liveNet) Close() {
	l.tr.Close()
	if l.srv != nil {
		l.srv.Shutdown()
	}
}

// sharedIdle is the aggregate.Config.Idle for n members sharing this
// process's cores: the default 4 ms, or 120 µs per member per core if that
// is longer (15 ms for 256 members on two cores).
//
// A member takes a gossip step on its own after a silence of Idle, and
// every such step adds a message that circulates until the operation ends.
// On its own machine a member hears a message every few microseconds and a
// 4 ms silence means loss; members sharing two cores hear one every
// 0.6 ms at 256 members (about 100,000 messages per second and core
// through the embedded server), a 4 ms silence came by chance once in
// e^6.7 ≈ 800 gaps, and the added messages drowned the exchange: 5,000 to
// 9,000 messages per member instead of 250, sometimes no result in 30 s.
// 120 µs·N/cores makes the silence about twelve average gaps (once in
// e^12 ≈ 160,000).
func sharedIdle(n int) time.Duration {
	return max(4*time.Millisecond, time.Duration(n)*120*time.Microsecond/time.Duration(runtime.GOMAXPROCS(0)))
}

// runGroup runs one operation of a fresh group of len(inputs) members (see
// livegroup.Run), with the Idle of members that share this process's
// cores unless tmpl sets one.
func runGroup(ctx context.Context, tr transport.Transport, tmpl aggregate.Config, inputs [][]float64, f livegroup.Faults, timeout time.Duration) (*livegroup.Outcome, error) {
	if tmpl.Idle == 0 {
		tmpl.Idle = sharedIdle(len(inputs))
	}
	o, err := livegroup.Run(ctx, tr, tmpl, inputs, f, timeout)
	if err != nil {
		return nil, fmt.Errorf("%w (within --timeout %v)", err, timeout)
	}
	return o, nil
}

// drawInputs returns n vectors of k values uniform in [0, 1) for a seed.
func drawInputs(n, k int, seed uint64) [][]float64 {
	r := rand.New(rand.NewPCG(seed, 0x1e7))
	in := make([][]float64, n)
	for i := range in {
		in[i] = make([]float64, k)
		for c := range in[i] {
			in[i][c] = r.Float64()
		}
	}
	return in
}

// median returns the median of xs (which it sorts).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	m := len(xs) / 2
	if len(xs)%2 == 1 {
		return xs[m]
	}
	return (xs[m-1] + xs[m]) / 2
}
