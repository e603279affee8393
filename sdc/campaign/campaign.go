// Package campaign runs the silent-data-corruption and message-loss
// experiments of thesis chapter 4 on the discrete-event simulator, in
// parallel over the cores, and draws their figures with gonum/plot.
//
//   - [Sweep]: a single bit flip at every bit position, R runs each, per
//     algorithm and target (figures 4.6-4.13).
//   - [Rates]: flips at a rate per word per message, runs grouped by the
//     number of flips they suffered (figure 4.14).
//   - [Loss]: message loss rates against the 1/(1-p) bound (figures 4.1 and
//     4.2).
//
// Run i of every configuration uses seed Seed+i, so all algorithms and bit
// positions see the same inputs and, for algorithms that draw their
// neighbours alike, the same neighbour choices (the thesis ran all
// algorithms "with the same sequence of random numbers"); any single run is
// replayed with Runs 1 and that seed.
package campaign

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/gossipreduce/gossipreduce/algo"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/parallel"
	"github.com/gossipreduce/gossipreduce/sdc"
	"github.com/gossipreduce/gossipreduce/sim"
	"github.com/gossipreduce/gossipreduce/topology"
)

// Common is what every campaign needs.
type Common struct {
	// Algorithms are algo names ("ps", "pfcc", …).
	Algorithms []string
	// Overlay is the communication graph.
	Overlay topology.Graph
	// Epsilon is the target accuracy (the thesis used 1e-14).
	Epsilon float64
	// Runs per point, with seeds Seed … Seed+Runs-1.
	Runs int
	Seed uint64
	// MaxMsgs caps a run (thesis: 500 for single flips, 1000 for rates).
	MaxMsgs int
	// Tau is the checksum threshold passed to PFLC and PFCC (0: default).
	Tau float64
	// Workers run in parallel (0: GOMAXPROCS).
	Workers int
	// Progress, if set, is called after each finished run; calls are
	// serialised.
	Progress func(done, total int)
}

func (c *Common) validate() error {
	if len(c.Algorithms) == 0 {
		return fmt.Errorf("campaign: %w: no algorithm", gossip.ErrInvalidConfig)
	}
	for _, a := range c.Algorithms {
		if _, err := algo.Lookup(a); err != nil {
			return err
		}
	}
	if c.Overlay == nil {
		return fmt.Errorf("campaign: %w: no overlay", gossip.ErrInvalidConfig)
	}
	if c.Runs < 1 {
		return fmt.Errorf("campaign: %w: %d runs", gossip.ErrInvalidConfig, c.Runs)
	}
	return nil
}

func (c *Common) config(name string, run int) sim.Config {
	return sim.Config{
		Algorithm: name, Overlay: c.Overlay, Epsilon: c.Epsilon, MaxMsgs: c.MaxMsgs,
		Seed: c.Seed + uint64(run), Tau: c.Tau,
	}
}

// job is one simulated run; inj, if set, is its own injector.
type job struct {
	cfg sim.Config
	inj sdc.Injector
}

type outcome struct {
	res   sim.Result
	flips int // how many
}

// runAll simulates every job on the workers and returns the outcomes in job
// order. The first error stops everything.
func runAll(ctx context.Context, jobs []job, workers int, progress func(done, total int)) ([]outcome, error) {
	out := make([]outcome, len(jobs))
	err := parallel.For(ctx, len(jobs), workers, func(ctx context.Context, i int) error {
		j := jobs[i]
		if j.inj != nil {
			j.cfg.Injector = j.inj
		}
		r, err := sim.Run(ctx, j.cfg)
		if err != nil {
			return err
		}
		out[i] = outcome{res: r}
		if j.inj != nil {
			out[i].flips = j.inj.Count()
		}
		return nil
	}, progress)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("campaign: %w", err)
		}
		return nil, err
	}
	return out, nil
}

// Stats condenses the runs of one point: the figures of sim.Summarize
// (which computes them), under the field names of the sdc output
// contract (converged_runs, worst_seed).
type Stats struct {
	Runs          int `json:"runs"`
	ConvergedRuns int `json:"converged_runs"`
	// MaxRelError is the largest final error over the runs. Infinite and
	// NaN errors (a run whose estimates blew up) are reported as
	// math.MaxFloat64, since JSON has no infinity.
	MaxRelError float64 `json:"max_rel_error"`
	// MeanMsgs is the mean over runs of the mean messages sent per node;
	// MaxMsgs the mean over runs of the maximum over nodes (the thesis's
	// cost metric).
	MeanMsgs float64 `json:"mean_msgs"`
	MaxMsgs  float64 `json:"max_msgs"`
	// WorstSeed is the seed of the run with the largest error, to replay it.
	WorstSeed uint64 `json:"worst_seed"`
}

func summarize(os []outcome) Stats {
	rs := make([]sim.Result, len(os))
	for i, o := range os {
		rs[i] = o.res
	}
	sum := sim.Summarize(rs)
	s := Stats{Runs: sum.Runs, ConvergedRuns: sum.Converged, MaxRelError: sum.MaxRelError,
		MeanMsgs: sum.MeanMsgs, MaxMsgs: sum.MaxMsgs, WorstSeed: sum.WorstSeed}
	if !(s.MaxRelError <= math.MaxFloat64) {
		s.MaxRelError = math.MaxFloat64
	}
	return s
}
