package campaign

import (
	"context"
	"fmt"
	"math"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/sdc"
)

// Rates runs every algorithm with flips at a rate (thesis 4.3.4: 500 runs,
// rate 1e-4, cap 1000 messages) and reports each run with its number of
// flips.
type Rates struct {
	Common
	// Rate is the probability per selected word per message sent.
	Rate   float64
	Target sdc.Target
	// Lo and Hi bound the flipped bit positions (inclusive).
	Lo, Hi int
}

// RateRun is one run of a rate campaign.
type RateRun struct {
	Algo        string  `json:"algo"`
	Seed        uint64  `json:"seed"`
	Flips       int     `json:"flips"`
	Converged   bool    `json:"converged"`
	MaxRelError float64 `json:"max_rel_error"`
	MaxMsgs     int     `json:"max_msgs"`
	MeanMsgs    float64 `json:"mean_msgs"`
}

// Run simulates Runs runs per algorithm.
func (c *Rates) Run(ctx context.Context) ([]RateRun, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	proto, err := sdc.NewRate(c.Rate, c.Target, c.Lo, c.Hi)
	if err != nil {
		return nil, err
	}
	if c.Target == sdc.Input {
		return nil, fmt.Errorf("campaign: %w: a flip rate on the input is not a campaign of the thesis", gossip.ErrInvalidConfig)
	}
	var jobs []job
	for _, a := range c.Algorithms {
		for r := range c.Runs {
			jobs = append(jobs, job{cfg: c.config(a, r), inj: proto.Fresh()})
		}
	}
	outs, err := runAll(ctx, jobs, c.Workers, c.Progress)
	if err != nil {
		return nil, err
	}
	runs := make([]RateRun, len(outs))
	for i, o := range outs {
		runs[i] = RateRun{
			Algo: jobs[i].cfg.Algorithm, Seed: o.res.Seed, Flips: o.flips, Converged: o.res.Converged,
			MaxRelError: finite(o.res.MaxRelError), MaxMsgs: o.res.MaxMsgs, MeanMsgs: o.res.MeanMsgs,
		}
	}
	return runs, nil
}

// Loss runs every algorithm at several message-loss rates (thesis 4.2).
type Loss struct {
	Common
	Rates []float64
}

// LossPoint is one (algorithm, loss rate).
type LossPoint struct {
	Algo string  `json:"algo"`
	Loss float64 `json:"loss"`
	Stats
	// Overhead is MaxMsgs relative to the same algorithm's at loss 0, minus
	// one; Bound is the lower bound 1/(1-p) - 1.
	Overhead float64 `json:"overhead"`
	Bound    float64 `json:"bound"`
}

// Run simulates Runs runs per point. A loss rate of 0 is added if missing,
// as the reference of the overhead.
func (c *Loss) Run(ctx context.Context) ([]LossPoint, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	rates := []float64{0}
	for _, p := range c.Rates {
		if !(p >= 0 && p < 1) {
			return nil, fmt.Errorf("campaign: %w: loss rate %v", gossip.ErrInvalidConfig, p)
		}
		if p != 0 {
			rates = append(rates, p)
		}
	}
	var jobs []job
	var points []LossPoint
	for _, a := range c.Algorithms {
		for _, p := range rates {
			points = append(points, LossPoint{Algo: a, Loss: p, Bound: 1/(1-p) - 1})
			for r := range c.Runs {
				cfg := c.config(a, r)
				cfg.Loss = p
				jobs = append(jobs, job{cfg: cfg})
			}
		}
	}
	outs, err := runAll(ctx, jobs, c.Workers, c.Progress)
	if err != nil {
		return nil, err
	}
	var ref float64
	for i := range points {
		points[i].Stats = summarize(outs[i*c.Runs : (i+1)*c.Runs])
		if points[i].Loss == 0 {
			ref = points[i].MaxMsgs
		}
		points[i].Overhead = points[i].MaxMsgs/ref - 1
	}
	return points, nil
}

// finite reports non-finite errors as math.MaxFloat64, for JSON.
func finite(e float64) float64 {
	if !(e <= math.MaxFloat64) {
		return math.MaxFloat64
	}
	return e
}
