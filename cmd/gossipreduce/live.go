package main

import (
	"context"
	"fmt"
	"math/rand/v2"
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

// runGroup runs one operation of a fresh group of len(inputs) members (see
// livegroup.Run). The library's default Idle grows with the members that
// share this process's cores (aggregate.Config.Idle).
func runGroup(ctx context.Context, tr transport.Transport, tmpl aggregate.Config, inputs [][]float64, f livegroup.Faults, timeout time.Duration) (*livegroup.Outcome, error) {
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
