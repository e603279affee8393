// Package parallel runs many independent jobs on a few goroutines: the
// simulators' campaigns of runs.
package parallel

import (
	"context"
	"runtime"
	"sync"
)

// For calls fn(ctx, i) for every i in [0, n) on workers goroutines (0:
// GOMAXPROCS), each i exactly once unless it stops early. fn stores its own
// result (by index, so results come out in order whatever the schedule).
// After each successful call progress, if set, is called with the number
// done so far; calls to progress are serialised. The first error cancels
// the context the remaining calls see and is returned; a cancelled ctx
// stops feeding new jobs and returns ctx's error.
func For(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error, progress func(done, total int)) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, n))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var (
		mu    sync.Mutex
		done  int
		first error
		wg    sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for i := range next {
				err := fn(ctx, i)
				mu.Lock()
				switch {
				case err != nil && first == nil:
					first = err
					cancel()
				case err == nil:
					done++
					if progress != nil {
						progress(done, n)
					}
				}
				mu.Unlock()
			}
		})
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}
