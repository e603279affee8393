package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/gossipreduce/gossipreduce/sim"
	"github.com/gossipreduce/gossipreduce/topology"
)

// modelSizes are the overlays of the model data, per family: a few dozen to
// a few thousand nodes, the range of thesis figures 5.3, 5.5 and 5.9.
var modelSizes = map[string][]string{
	"complete":  {"complete:32", "complete:64", "complete:128", "complete:256", "complete:512", "complete:1024", "complete:2048", "complete:4096"},
	"hypercube": {"hypercube:32", "hypercube:64", "hypercube:128", "hypercube:256", "hypercube:512", "hypercube:1024", "hypercube:2048", "hypercube:4096"},
	"torus3":    {"torus:4x4x4", "torus:5x5x5", "torus:6x6x6", "torus:8x8x8", "torus:10x10x10", "torus:12x12x12", "torus:14x14x14", "torus:16x16x16"},
}

// overlay builds "name:N" or "torus:AxBxC".
func overlay(spec string) (topology.Graph, error) {
	var name string
	var n int
	if _, err := fmt.Sscanf(spec, "complete:%d", &n); err == nil {
		name = "complete"
	} else if _, err := fmt.Sscanf(spec, "hypercube:%d", &n); err == nil {
		name = "hypercube"
	} else {
		name = spec
	}
	g, err := topology.Parse(name, n)
	if err != nil {
		return nil, fmt.Errorf("figures: %w", err)
	}
	return g, nil
}

// simulateModels runs the simulations behind topology/modeldata.json at ε =
// topology.ModelEpsilon and writes the document to path: syncRuns runs of
// each synchronous kind and asyncRuns of each asynchronous one per overlay,
// seeds seed, seed+1, …. It logs each point, with its seeds, to log.
func simulateModels(ctx context.Context, path string, syncRuns, asyncRuns int, seed uint64, log io.Writer) error {
	d := topology.ModelData{Epsilon: topology.ModelEpsilon}
	for _, kind := range topology.ModelKinds {
		for _, fam := range topology.ModelFamilies {
			s := topology.ModelSeries{Kind: kind.String(), Family: fam}
			for _, spec := range modelSizes[fam] {
				g, err := overlay(spec)
				if err != nil {
					return err
				}
				cf, _ := topology.ClosedForm(g)
				costs, err := simulateModel(ctx, kind, g, syncRuns, asyncRuns, seed)
				if err != nil {
					return err
				}
				mean, sd := meanSD(costs)
				p := topology.ModelPoint{Nodes: g.Len(), Gap: cf.Gap, Mean: mean, SD: sd, Runs: len(costs), FirstSeed: seed}
				s.Points = append(s.Points, p)
				fmt.Fprintf(log, "%-18s %-16s runs %3d seeds %d…%d  mean %8.2f  sd %6.2f\n",
					kind, spec, p.Runs, seed, seed+uint64(p.Runs)-1, mean, sd)
			}
			d.Series = append(d.Series, s)
		}
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("figures: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("figures: %w", err)
	}
	return nil
}

// simulateModel returns the cost of each run of kind on g.
func simulateModel(ctx context.Context, kind topology.ModelKind, g topology.Graph, syncRuns, asyncRuns int, seed uint64) ([]float64, error) {
	var costs []float64
	switch kind {
	case topology.ModelSyncRounds, topology.ModelSyncJacobiRounds:
		for i := range syncRuns {
			r, err := sim.RunSync(ctx, sim.SyncConfig{Overlay: g, Epsilon: topology.ModelEpsilon, Seed: seed + uint64(i),
				Sequential: kind == topology.ModelSyncRounds})
			if err != nil {
				return nil, fmt.Errorf("figures: %w", err)
			}
			if !r.Converged {
				return nil, fmt.Errorf("figures: %s on %s, seed %d did not converge", kind, g.Name(), r.Seed)
			}
			costs = append(costs, float64(r.Rounds))
		}
	default:
		stop := sim.StopAll
		if kind == topology.ModelAsyncFirstMsgs {
			stop = sim.StopFirst
		}
		rs, err := sim.RunMany(ctx, sim.Config{Algorithm: "ps", Overlay: g, Epsilon: topology.ModelEpsilon,
			Stop: stop, Seed: seed, MaxMsgs: 100_000}, asyncRuns, 0, nil)
		if err != nil {
			return nil, fmt.Errorf("figures: %w", err)
		}
		for _, r := range rs {
			if !r.Converged {
				return nil, fmt.Errorf("figures: %s on %s, seed %d did not converge", kind, g.Name(), r.Seed)
			}
			costs = append(costs, float64(r.MaxMsgs))
		}
	}
	return costs, nil
}

// meanSD is the mean and the sample standard deviation.
func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x / float64(len(xs))
	}
	if len(xs) < 2 {
		return mean, 0
	}
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)-1))
}
