package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gossipreduce/gossipreduce/algo"
	"github.com/gossipreduce/gossipreduce/member/simnet"
)

// runtimeSimFlags are the sim flags that --runtime uses.
type runtimeSimFlags struct {
	algo, topo  string
	nodes, runs int
	eps, loss   float64
	crash, slow float64
	slowBy      float64
	pause       time.Duration
	window      time.Duration
	json        bool
	seed        *seedFlag
}

// runtimeSimOutput is the JSON of sim --runtime (field names are a
// contract, see docs/design.md).
type runtimeSimOutput struct {
	Algo     string  `json:"algo"`
	Topology string  `json:"topology"`
	Nodes    int     `json:"nodes"`
	Mode     string  `json:"mode"`
	Eps      float64 `json:"eps"`
	Loss     float64 `json:"loss"`
	Crash    float64 `json:"crash"`
	Slow     float64 `json:"slow"`
	WindowMS float64 `json:"window_ms"`
	Seed     uint64  `json:"seed"`
	LastSeed uint64  `json:"last_seed"`
	simnet.MeasureReport
	WallSeconds float64 `json:"wall_seconds"`
	Replay      string  `json:"replay"`
}

// runtimeFlags are the flags sim --runtime takes;
// the others describe the algorithm-only simulator and are refused.
var runtimeFlags = []string{"algo", "topology", "nodes", "eps", "runs", "loss", "crash", "slow", "slow-factor", "pause", "window", "json", "seed", "runtime", "quiet"}

func runRuntimeSim(ctx context.Context, fs *flag.FlagSet, args []string, f runtimeSimFlags, out *stdio) error {
	var stray []string
	epsSet, algoSet := false, false
	fs.Visit(func(fl *flag.Flag) {
		epsSet = epsSet || fl.Name == "eps"
		algoSet = algoSet || fl.Name == "algo"
		if !slices.Contains(runtimeFlags, fl.Name) {
			stray = append(stray, "--"+fl.Name)
		}
	})
	if len(stray) > 0 { // Visit goes in lexical order
		return usagef("%s: not used by --runtime (it takes %s)", strings.Join(stray, ", "), "--"+strings.Join(runtimeFlags, ", --"))
	}
	if !algoSet {
		f.algo = "pfcc" // the runtime's default, not the algorithm simulator's
	}
	if _, err := algo.Lookup(f.algo); err != nil {
		return usagef("%v", err)
	}
	if err := checkProb("slow", f.slow, 1); err != nil {
		return err
	}
	if !(f.slowBy >= 1) || math.IsInf(f.slowBy, 1) {
		return usagef("--slow-factor %v must be at least 1", f.slowBy)
	}
	if f.pause < 0 {
		return usagef("--pause %v must be ≥ 0", f.pause)
	}
	if f.window <= 0 {
		return usagef("--window %v must be > 0", f.window)
	}
	crash := f.crash
	if crash >= 1 {
		crash /= float64(f.nodes)
	}
	cfg := simnet.MeasureConfig{
		Net:  simnet.Config{Nodes: f.nodes, Topology: f.topo, Algorithm: f.algo, Loss: f.loss},
		Runs: f.runs, Crash: crash, Slow: f.slow, SlowFactor: f.slowBy, Pause: f.pause,
		Window: f.window,
	}
	if epsSet {
		cfg.Net.Epsilon = f.eps // else the runtime's default, not the simulator's
	}
	seedGiven := f.seed.set
	cfg.Net.Seed = f.seed.value()
	if f.runs > 1 {
		cfg.Progress = newProgress(out, "sim --runtime").update
	}
	start := time.Now()
	rep, err := simnet.Measure(ctx, cfg)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	replay := "gossipreduce sim " + strings.Join(args, " ")
	if !seedGiven {
		replay += fmt.Sprintf(" --seed %d", cfg.Net.Seed)
	}
	o := runtimeSimOutput{
		Algo: f.algo, Topology: f.topo, Nodes: f.nodes, Mode: "runtime", Eps: f.eps, Loss: f.loss,
		Crash: crash, Slow: f.slow, WindowMS: float64(f.window) / float64(time.Millisecond), Seed: cfg.Net.Seed, LastSeed: cfg.Net.Seed + uint64(rep.Runs) - 1,
		MeasureReport: rep, WallSeconds: time.Since(start).Seconds(), Replay: replay,
	}
	if !epsSet {
		o.Eps = 1e-9
	}
	if f.json {
		return writeJSON(out.Stdout, o)
	}
	fmt.Fprintf(out.Stdout, "runtime of %s on %s, %d members, eps %g, %d run(s), seeds %d…%d\n",
		o.Algo, o.Topology, o.Nodes, o.Eps, o.Runs, o.Seed, o.LastSeed)
	fmt.Fprintf(out.Stdout, "  faults           crash %g, slow %g (×%g, paused once), loss %g, within the first %v\n", o.Crash, o.Slow, f.slowBy, o.Loss, f.window)
	fmt.Fprintf(out.Stdout, "  failed           %d of %d runs (%d members)\n", o.Failed, o.Runs, o.FailedMembers)
	fmt.Fprintf(out.Stdout, "  wrong            %d\n", o.Wrong)
	fmt.Fprintf(out.Stdout, "  false deaths     %d\n", o.FalseDeaths)
	fmt.Fprintf(out.Stdout, "  msgs/member      %.1f (mean), %d (most by one)\n", o.MsgsPerNode, o.MaxMsgs)
	fmt.Fprintf(out.Stdout, "  time             %.0f L (%.2f ms simulated, L = %g µs)\n", o.TimeL, o.TimeMS, o.LatencyUS)
	fmt.Fprintf(out.Stdout, "  wall             %.1f s\n", o.WallSeconds)
	fmt.Fprintf(out.Stdout, "  replay with      %s\n", o.Replay)
	return nil
}
