package campaign

import (
	"context"
	"fmt"

	"github.com/gossipreduce/gossipreduce/algo"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/sdc"
)

// DefaultAfter is the thesis's trigger for single flips: once the first node
// has sent 150 messages.
const DefaultAfter = 150

// Sweep flips one bit per run, at every bit position of Bits, for every
// algorithm and target (thesis 4.3.2).
type Sweep struct {
	Common
	Bits    []int
	Targets []sdc.Target
	// After is the trigger of the flip (sdc.Single.After). Negative selects
	// it per algorithm: 0 (before the first message) for recursive doubling
	// and for target input on machines without input words (Push-Sum), as in
	// the thesis; DefaultAfter otherwise.
	After int
	// Baseline, if not empty, is run without flips on the same seeds, for
	// the message overhead of figure 4.13 (the thesis compared with "ps").
	Baseline string
}

// Point is one (algorithm, target, bit) of a sweep.
type Point struct {
	Algo   string `json:"algo"`
	Target string `json:"target"`
	Bit    int    `json:"bit"`
	After  int    `json:"after"`
	Stats
	// FlippedRuns counts the runs in which the flip happened (a run that
	// converged before the trigger, or whose node had no such word, has
	// none).
	FlippedRuns int `json:"flipped_runs"`
}

// Baseline is the fault-free reference of a sweep.
type Baseline struct {
	Algo string `json:"algo"`
	Stats
}

// SweepResult is what Sweep.Run returns.
type SweepResult struct {
	Points   []Point   `json:"points"`
	Baseline *Baseline `json:"baseline,omitempty"`
}

// AfterFor returns the trigger a negative After selects for algorithm name
// and target t.
func (s *Sweep) AfterFor(name string, t sdc.Target) (int, error) {
	if s.After >= 0 {
		return s.After, nil
	}
	spec, err := algo.Lookup(name)
	if err != nil {
		return 0, err
	}
	if spec.Finite {
		return 0, nil
	}
	if t == sdc.Input {
		m, err := spec.New(gossip.Config{Overlay: s.Overlay, Value: []float64{0.5}})
		if err != nil {
			return 0, err
		}
		for w := range m.Words() {
			if w.Place == gossip.PlaceInput {
				return DefaultAfter, nil
			}
		}
		return 0, nil
	}
	return DefaultAfter, nil
}

// Run simulates Runs runs per point and condenses them.
func (s *Sweep) Run(ctx context.Context) (SweepResult, error) {
	if err := s.validate(); err != nil {
		return SweepResult{}, err
	}
	if len(s.Bits) == 0 || len(s.Targets) == 0 {
		return SweepResult{}, fmt.Errorf("campaign: %w: no bits or no targets", gossip.ErrInvalidConfig)
	}
	n := s.Overlay.Len()
	var jobs []job
	var points []Point
	for _, a := range s.Algorithms {
		for _, t := range s.Targets {
			after, err := s.AfterFor(a, t)
			if err != nil {
				return SweepResult{}, err
			}
			for _, b := range s.Bits {
				proto, err := sdc.NewSingle(b, t, after, n)
				if err != nil {
					return SweepResult{}, err
				}
				points = append(points, Point{Algo: a, Target: t.String(), Bit: b, After: after})
				for r := range s.Runs {
					jobs = append(jobs, job{cfg: s.config(a, r), inj: proto.Fresh()})
				}
			}
		}
	}
	if s.Baseline != "" {
		if _, err := algo.Lookup(s.Baseline); err != nil {
			return SweepResult{}, fmt.Errorf("baseline: %w", err)
		}
		for r := range s.Runs {
			jobs = append(jobs, job{cfg: s.config(s.Baseline, r)})
		}
	}
	outs, err := runAll(ctx, jobs, s.Workers, s.Progress)
	if err != nil {
		return SweepResult{}, err
	}
	var res SweepResult
	for i := range points {
		chunk := outs[i*s.Runs : (i+1)*s.Runs]
		points[i].Stats = summarize(chunk)
		for _, o := range chunk {
			if o.flips > 0 {
				points[i].FlippedRuns++
			}
		}
	}
	res.Points = points
	if s.Baseline != "" {
		res.Baseline = &Baseline{Algo: s.Baseline, Stats: summarize(outs[len(points)*s.Runs:])}
	}
	return res, nil
}
