package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/member/simnet"
)

// runtimeSimFlags are the flags of sim --runtime of its own.
type runtimeSimFlags struct {
	on, everyTick bool
	slow, slowBy  float64
	pause, window time.Duration
}

func (f *runtimeSimFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.on, "runtime", false, "simulate the live runtime (package member: failure detection, certificate, take-over, result broadcast) instead of the algorithm alone, "+
		"at the runtime's ε 1e-9 unless --eps is given; --workers then shares each run out over that many cores "+
		"(0: one per core from 4,096 members, else 1; the figures do not depend on it)")
	fs.Float64Var(&f.slow, "slow", 0, "with --runtime: share of the members that are starved (slowed and paused once)")
	fs.Float64Var(&f.slowBy, "slow-factor", 10, "with --runtime: how many times slower a starved member handles each event")
	fs.DurationVar(&f.pause, "pause", 0, "with --runtime: how long a starved member stops once (0: a fifth of the suspect timeout)")
	fs.DurationVar(&f.window, "window", 30*time.Millisecond, "with --runtime: crashes and pauses fall at moments drawn from this first stretch of each operation "+
		"(a fault-free exchange of 64 members takes about 0.4 ms, PFCC of 1,024 about 20 ms)")
	fs.BoolVar(&f.everyTick, "every-tick", false, "with --runtime: tick every member every millisecond, as the live driver does, "+
		"instead of only when its machine has something to do (slower; for comparison)")
}

// check refuses the algorithm simulator's flags and checks the runtime's.
func (f *runtimeSimFlags) check(set map[string]bool) error {
	var stray []string
	for name := range set {
		if !slices.Contains(runtimeFlags, name) {
			stray = append(stray, "--"+name)
		}
	}
	if len(stray) > 0 {
		slices.Sort(stray)
		return usagef("%s: not used by --runtime (it takes %s)", strings.Join(stray, ", "), "--"+strings.Join(runtimeFlags, ", --"))
	}
	if err := checkProb("slow", f.slow, 1); err != nil {
		return err
	}
	switch {
	case !(f.slowBy >= 1) || math.IsInf(f.slowBy, 1):
		return usagef("--slow-factor %v must be at least 1", f.slowBy)
	case f.pause < 0:
		return usagef("--pause %v must be ≥ 0", f.pause)
	case f.window <= 0:
		return usagef("--window %v must be > 0", f.window)
	}
	return nil
}

// notGiven refuses the runtime's flags without --runtime.
func (f *runtimeSimFlags) notGiven(set map[string]bool) error {
	var only []string
	for _, name := range []string{"pause", "slow", "slow-factor", "window", "every-tick"} {
		if set[name] {
			only = append(only, "--"+name)
		}
	}
	if len(only) > 0 {
		return usagef("%s: needs --runtime", strings.Join(only, ", "))
	}
	return nil
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

	slowBy float64       // for the text
	window time.Duration // for the text
}

// runtimeFlags are the flags sim --runtime takes;
// the others describe the algorithm-only simulator and are refused.
var runtimeFlags = []string{"algo", "topology", "nodes", "eps", "runs", "loss", "crash", "slow", "slow-factor", "pause", "window", "every-tick", "workers", "json", "seed", "runtime", "quiet"}

func (c *simCmd) execRuntime(ctx context.Context, out *stdio) error {
	n, f := c.group.nodes, &c.runtime
	crash := c.faults.crash.share(n)
	cfg := simnet.MeasureConfig{
		Net:  simnet.Config{Nodes: n, Topology: c.group.topology, Algorithm: c.algo.one(), Loss: c.faults.loss.one(), EveryTick: f.everyTick, Workers: c.workers},
		Runs: c.runs, Crash: crash, Slow: f.slow, SlowFactor: f.slowBy, Pause: f.pause, Window: f.window,
	}
	eps := familyDefaults[liveFamily].eps // the runtime's, which simnet applies
	if c.set["eps"] {
		cfg.Net.Epsilon, eps = c.group.eps, c.group.eps
	}
	cfg.Net.Seed = c.seed.value()
	if c.runs > 1 {
		cfg.Progress = newProgress(out, "sim --runtime").update
	}
	start := time.Now()
	rep, err := simnet.Measure(ctx, cfg)
	if errors.Is(err, gossip.ErrInvalidConfig) {
		return usagef("%v", err)
	}
	if err != nil {
		return err
	}
	return out.print(runtimeSimOutput{
		Algo: c.algo.one(), Topology: c.group.topology, Nodes: n, Mode: "runtime", Eps: eps, Loss: cfg.Net.Loss,
		Crash: crash, Slow: f.slow, WindowMS: float64(f.window) / float64(time.Millisecond), Seed: cfg.Net.Seed, LastSeed: cfg.Net.Seed + uint64(rep.Runs) - 1,
		MeasureReport: rep, WallSeconds: time.Since(start).Seconds(), Replay: replayLine("sim", c.fs, cfg.Net.Seed),
		slowBy: f.slowBy, window: f.window,
	})
}

func (o runtimeSimOutput) text(w io.Writer) error {
	fmt.Fprintf(w, "runtime of %s on %s, %d members, eps %g, %d run(s), seeds %d…%d\n",
		o.Algo, o.Topology, o.Nodes, o.Eps, o.Runs, o.Seed, o.LastSeed)
	fmt.Fprintf(w, "  faults           crash %g, slow %g (×%g, paused once), loss %g, within the first %v\n", o.Crash, o.Slow, o.slowBy, o.Loss, o.window)
	fmt.Fprintf(w, "  failed           %d of %d runs (%d members)\n", o.Failed, o.Runs, o.FailedMembers)
	fmt.Fprintf(w, "  wrong            %d\n", o.Wrong)
	fmt.Fprintf(w, "  false deaths     %d\n", o.FalseDeaths)
	fmt.Fprintf(w, "  msgs/member      %.1f (mean), %d (most by one)\n", o.MsgsPerNode, o.MaxMsgs)
	fmt.Fprintf(w, "  time             %.0f L (%.2f ms simulated, L = %g µs)\n", o.TimeL, o.TimeMS, o.LatencyUS)
	fmt.Fprintf(w, "  wall             %.1f s\n", o.WallSeconds)
	_, err := fmt.Fprintf(w, "  replay with      %s\n", o.Replay)
	return err
}
