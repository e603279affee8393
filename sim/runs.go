package sim

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/gossipreduce/gossipreduce/internal/parallel"
)

// RunMany simulates runs all-reduces of cfg with the seeds cfg.Seed,
// cfg.Seed+1, …, cfg.Seed+runs-1, on workers goroutines (0: GOMAXPROCS).
// Results come back in seed order, so run i is replayed by Run with Seed
// cfg.Seed+i. progress, if set, is called after each finished run with the
// number done so far; calls are serialised. The first configuration error
// stops everything; a cancelled context returns the runs finished so far.
func RunMany(ctx context.Context, cfg Config, runs, workers int, progress func(done, total int)) ([]Result, error) {
	if runs < 1 {
		return nil, fmt.Errorf("sim: runs = %d, need at least 1", runs)
	}
	results := make([]Result, runs)
	finished := make([]bool, runs)
	err := parallel.For(ctx, runs, workers, func(ctx context.Context, i int) error {
		c := cfg
		c.Seed = cfg.Seed + uint64(i)
		r, err := Run(ctx, c)
		if err != nil {
			return err
		}
		results[i], finished[i] = r, true
		return nil
	}, progress)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("sim: %w", err)
		}
		return keep(results, finished), err
	}
	return results, nil
}

func keep(rs []Result, ok []bool) []Result {
	out := rs[:0:0]
	for i, r := range rs {
		if ok[i] {
			out = append(out, r)
		}
	}
	return out
}

// Summary condenses many runs of one configuration.
type Summary struct {
	Runs      int `json:"runs"`
	Converged int `json:"converged"`
	// MaxRelError is the worst final error over all runs.
	MaxRelError float64 `json:"max_rel_error"`
	// MaxMsgs is the mean over runs of each run's max messages per node,
	// the thesis's cost metric; MaxMaxMsgs its maximum over runs.
	MaxMsgs    float64 `json:"max_msgs"`
	MaxMaxMsgs int     `json:"max_max_msgs"`
	// MeanMsgs is the mean over runs of the mean messages per node.
	MeanMsgs float64 `json:"mean_msgs"`
	SimTime  float64 `json:"sim_time"` // mean over runs
	Lost     int64   `json:"lost"`
	Rejected int64   `json:"rejected"`
	// Seeds are the first and last seed of the runs; WorstSeed is the seed
	// of the run with the largest error (the first such), to replay it.
	FirstSeed uint64 `json:"seed"`
	LastSeed  uint64 `json:"last_seed"`
	WorstSeed uint64 `json:"worst_seed"`
}

// Summarize condenses results (all of one configuration).
func Summarize(rs []Result) Summary {
	var s Summary
	if len(rs) == 0 {
		return s
	}
	s.Runs = len(rs)
	s.FirstSeed, s.LastSeed = rs[0].Seed, rs[0].Seed
	for i, r := range rs {
		if r.Converged {
			s.Converged++
		}
		if i == 0 || r.MaxRelError > s.MaxRelError || math.IsNaN(r.MaxRelError) {
			s.MaxRelError, s.WorstSeed = r.MaxRelError, r.Seed
		}
		s.MaxMsgs += float64(r.MaxMsgs)
		s.MaxMaxMsgs = max(s.MaxMaxMsgs, r.MaxMsgs)
		s.MeanMsgs += r.MeanMsgs
		s.SimTime += r.SimTime
		s.Lost += r.Lost
		s.Rejected += r.Rejected
		s.FirstSeed = min(s.FirstSeed, r.Seed)
		s.LastSeed = max(s.LastSeed, r.Seed)
	}
	n := float64(len(rs))
	s.MaxMsgs /= n
	s.MeanMsgs /= n
	s.SimTime /= n
	return s
}
