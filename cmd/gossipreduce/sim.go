package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/gossipreduce/gossipreduce/algo"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/sim"
	"github.com/gossipreduce/gossipreduce/topology"
)

func init() {
	registerLegacy("sim", "simulate all-reduce runs (discrete-event, or synchronous rounds with --mode sync)", runSim)
}

// simOutput is the JSON of the sim verb (field names are a contract, see
// DESIGN.md).
type simOutput struct {
	Algo        string  `json:"algo"`
	Topology    string  `json:"topology"`
	Nodes       int     `json:"nodes"`
	Mode        string  `json:"mode"`
	Eps         float64 `json:"eps"`
	Runs        int     `json:"runs"`
	Converged   int     `json:"converged"`
	MaxRelError float64 `json:"max_rel_error"`
	// MaxMsgs is the mean over runs of the max messages per node (the
	// thesis's metric); MaxMaxMsgs the largest over runs. In sync mode they
	// are rounds.
	MaxMsgs    float64 `json:"max_msgs"`
	MaxMaxMsgs int     `json:"max_max_msgs"`
	MeanMsgs   float64 `json:"mean_msgs"`
	SimTime    float64 `json:"sim_time"`
	Seed       uint64  `json:"seed"`
	LastSeed   uint64  `json:"last_seed"`
	Lost       int64   `json:"lost,omitempty"`
	Rejected   int64   `json:"rejected,omitempty"`
	Rounds     float64 `json:"rounds,omitempty"`
	Replay     string  `json:"replay"`
}

func runSim(ctx context.Context, args []string, out *stdio) error {
	fs := newFlags("sim", out)
	var seed seedFlag
	var (
		algoName = fs.String("algo", "ps", "algorithm: "+strings.Join(algo.Names(), ", "))
		topo     = fs.String("topology", "hypercube", "overlay: complete, hypercube, torus, torus:AxBxC, dhypercube, bmg, ring")
		nodes    = fs.Int("nodes", 32, "number of nodes N")
		eps      = fs.Float64("eps", 1e-11, "target accuracy ε (equation 4.1)")
		runs     = fs.Int("runs", 1, "number of runs, seeds seed … seed+runs-1")
		workers  = fs.Int("workers", 0, "parallel runs (0: one per core)")
		maxMsgs  = fs.Int("max-msgs", 0, "stop a run once a node has sent this many messages (0: 10000)")
		stop     = fs.String("stop", "all", "stop rule: all (every node ε-accurate) or first")
		loss     = fs.Float64("loss", 0, "message loss probability p")
		lat      = fs.Float64("L", 1, "message latency L")
		ovh      = fs.Float64("o", 0, "overhead o per send and per receive")
		jitter   = fs.Float64("jitter", 0, "latency jitter: L·(1+U[0,jitter))")
		cost     = fs.String("cost", "uniform", "latency model: uniform or torus3d (hop distance on a physical 3-D torus, thesis 5.4)")
		dead     = fs.Int("dead", 0, "number of nodes dead from the start (chosen by seed)")
		deadIDs  = fs.String("dead-ids", "", "comma-separated ids of nodes dead from the start")
		crash    = fs.Float64("crash", 0, "nodes that crash at --crash-at (chosen by seed): a number, or a share of the nodes when below 1")
		crashAt  = fs.Float64("crash-at", 10, "simulated time of the crashes")
		detect   = fs.Float64("detect-after", 0, "delay before neighbours exclude a dead node (negative: never)")
		comps    = fs.Int("components", 1, "vector length k of each node's value")
		weights  = fs.String("weights", "average", "average (w=1) or sum (w=1/N)")
		tick     = fs.Float64("tick", 0, "tick every node periodically (0: only at the start)")
		tau      = fs.Float64("tau", 0, "checksum threshold τ of pflc/pfcc (0: the algorithm's default)")
		mode     = fs.String("mode", "async", "async (discrete-event) or sync (synchronous rounds, Push-Sum only, for very large N)")
		asJSON   = fs.Bool("json", false, "print one JSON object")
		perRun   = fs.Bool("per-run", false, "with --json, print one JSON object per run instead of the summary")
		seq      = fs.Bool("sequential", false, "with --mode sync: thesis Algorithm 7 exactly (in place, node by node, one core)")
		runtime  = fs.Bool("runtime", false, "simulate the live runtime (package member: failure detection, certificate, take-over, result broadcast) instead of the algorithm alone")
		slow     = fs.Float64("slow", 0, "with --runtime: share of the members that are starved (slowed and paused once)")
		slowBy   = fs.Float64("slow-factor", 10, "with --runtime: how many times slower a starved member handles each event")
		pause    = fs.Duration("pause", 0, "with --runtime: how long a starved member stops once (0: a fifth of the suspect timeout)")
		window   = fs.Duration("window", 30*time.Millisecond, "with --runtime: crashes and pauses fall at moments drawn from this first stretch of each operation (a fault-free exchange of 64 members takes about 0.4 ms, PFCC of 1,024 about 20 ms)")
	)
	fs.Var(&seed, "seed", "random seed (default: drawn at random and printed)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkEps(*eps); err != nil {
		return err
	}
	if *nodes < 1 {
		return usagef("--nodes %d must be at least 1", *nodes)
	}
	if *runs < 1 {
		return usagef("--runs %d must be at least 1", *runs)
	}
	if err := checkProb("loss", *loss, 1); err != nil {
		return err
	}
	if *comps < 1 {
		return usagef("--components %d must be at least 1", *comps)
	}
	if !(*crash >= 0) || math.IsInf(*crash, 1) || (*crash >= 1 && *crash != math.Trunc(*crash)) {
		return usagef("--crash %v: want a number of nodes, or a share in [0, 1)", *crash)
	}
	if *crash >= float64(*nodes) {
		return usagef("--crash %v leaves none of %d nodes alive", *crash, *nodes)
	}
	if *runtime {
		return runRuntimeSim(ctx, fs, args, runtimeSimFlags{
			algo: *algoName, topo: *topo, nodes: *nodes, eps: *eps, runs: *runs, loss: *loss,
			crash: *crash, slow: *slow, slowBy: *slowBy, pause: *pause, window: *window, json: *asJSON, seed: &seed,
		}, out)
	}
	var runtimeOnly []string
	fs.Visit(func(fl *flag.Flag) {
		if slices.Contains([]string{"slow", "slow-factor", "pause", "window"}, fl.Name) {
			runtimeOnly = append(runtimeOnly, "--"+fl.Name)
		}
	})
	if len(runtimeOnly) > 0 {
		return usagef("%s: needs --runtime", strings.Join(runtimeOnly, ", "))
	}
	g, err := topology.Parse(*topo, *nodes)
	if err != nil {
		return usagef("%v", err)
	}
	wm, err := gossip.ParseWeightMode(*weights)
	if err != nil {
		return usagef("%v", err)
	}
	seedGiven := seed.set
	s := seed.value()

	switch *mode {
	case "sync":
		if *algoName != "ps" {
			return usagef("--mode sync simulates Push-Sum only, not %q", *algoName)
		}
		return runSyncSim(ctx, g, *eps, *runs, s, *seq, *asJSON, out)
	case "async":
	default:
		return usagef("--mode %q: want async or sync", *mode)
	}
	if _, err := algo.Lookup(*algoName); err != nil {
		return usagef("%v", err)
	}
	cfg := sim.Config{
		Algorithm: *algoName, Overlay: g, Components: *comps, Mode: wm, Epsilon: *eps,
		MaxMsgs: *maxMsgs, Seed: s, L: *lat, O: *ovh, Jitter: *jitter, TickEvery: *tick,
		Loss: *loss, DetectAfter: *detect, Tau: *tau,
	}
	switch *stop {
	case "all":
	case "first":
		cfg.Stop = sim.StopFirst
	default:
		return usagef("--stop %q: want all or first", *stop)
	}
	switch *cost {
	case "uniform":
	case "torus3d":
		pt, err := topology.NewPhysicalTorus(g, s)
		if err != nil {
			return err
		}
		cfg.Distance = func(from, to gossip.NodeID) float64 { return float64(pt.Hops(from, to)) }
	default:
		return usagef("--cost %q: want uniform or torus3d", *cost)
	}
	ids, err := parseIDs(*deadIDs, *nodes)
	if err != nil {
		return err
	}
	nCrash := int(*crash)
	if *crash > 0 && *crash < 1 {
		nCrash = max(1, int(math.Round(*crash*float64(*nodes))))
	}
	if *dead+nCrash+len(ids) >= *nodes {
		return usagef("--dead, --dead-ids and --crash leave no node alive")
	}
	if *dead < 0 {
		return usagef("--dead must be ≥ 0")
	}
	if math.IsNaN(*crashAt) || *crashAt < 0 {
		return usagef("--crash-at %v must be ≥ 0", *crashAt)
	}
	// Random victims are drawn from the seed, so a replay picks the same.
	perm := rand.New(rand.NewPCG(s, 0xdead)).Perm(*nodes)
	chosen := make(map[int]bool)
	for _, id := range ids {
		chosen[int(id)] = true
		cfg.Dead = append(cfg.Dead, gossip.NodeID(id))
	}
	next := func() gossip.NodeID {
		for _, v := range perm {
			if !chosen[v] {
				chosen[v] = true
				return gossip.NodeID(v)
			}
		}
		panic("unreachable: checked that a node survives")
	}
	for range *dead {
		cfg.Dead = append(cfg.Dead, next())
	}
	for range nCrash {
		cfg.Crashes = append(cfg.Crashes, sim.Crash{Node: next(), At: *crashAt})
	}

	var prog func(int, int)
	if *runs > 1 {
		prog = newProgress(out, "sim").update
	}
	results, err := sim.RunMany(ctx, cfg, *runs, *workers, prog)
	if err != nil {
		return err
	}
	if *asJSON && *perRun {
		for _, r := range results {
			if err := writeJSON(out.Stdout, r); err != nil {
				return err
			}
		}
		return nil
	}
	sum := sim.Summarize(results)
	o := simOutput{
		Algo: *algoName, Topology: g.Name(), Nodes: g.Len(), Mode: "async", Eps: *eps,
		Runs: sum.Runs, Converged: sum.Converged, MaxRelError: sum.MaxRelError,
		MaxMsgs: sum.MaxMsgs, MaxMaxMsgs: sum.MaxMaxMsgs, MeanMsgs: sum.MeanMsgs,
		SimTime: sum.SimTime, Seed: sum.FirstSeed, LastSeed: sum.LastSeed,
		Lost: sum.Lost, Rejected: sum.Rejected,
		Replay: replayHint(args, sum.FirstSeed, seedGiven),
	}
	if *asJSON {
		return writeJSON(out.Stdout, o)
	}
	fmt.Fprintf(out.Stdout, "%s on %s, %d nodes, eps %g, %d run(s), seeds %d…%d\n",
		o.Algo, o.Topology, o.Nodes, o.Eps, o.Runs, o.Seed, o.LastSeed)
	fmt.Fprintf(out.Stdout, "  converged        %d/%d\n", o.Converged, o.Runs)
	fmt.Fprintf(out.Stdout, "  max rel error    %.3g\n", o.MaxRelError)
	fmt.Fprintf(out.Stdout, "  max msgs/node    %.1f (mean over runs), %d (worst run)\n", o.MaxMsgs, o.MaxMaxMsgs)
	fmt.Fprintf(out.Stdout, "  mean msgs/node   %.1f\n", o.MeanMsgs)
	fmt.Fprintf(out.Stdout, "  sim time         %.1f\n", o.SimTime)
	if o.Lost > 0 || o.Rejected > 0 {
		fmt.Fprintf(out.Stdout, "  lost %d, rejected %d messages\n", o.Lost, o.Rejected)
	}
	fmt.Fprintf(out.Stdout, "  replay with      %s\n", o.Replay)
	return nil
}

// replayHint is the command line that replays the first run.
func replayHint(args []string, seed uint64, given bool) string {
	line := "gossipreduce sim " + strings.Join(args, " ")
	if !given {
		line += fmt.Sprintf(" --seed %d", seed)
	}
	return strings.TrimSpace(line)
}

func runSyncSim(ctx context.Context, g topology.Graph, eps float64, runs int, seed uint64, sequential, asJSON bool, out *stdio) error {
	mode := "sync"
	if sequential {
		mode = "sync-sequential"
	}
	o := simOutput{Algo: "ps", Topology: g.Name(), Nodes: g.Len(), Mode: mode, Eps: eps, Runs: runs, Seed: seed, LastSeed: seed + uint64(runs) - 1}
	prog := newProgress(out, "sim --mode sync")
	for i := range runs {
		r, err := sim.RunSync(ctx, sim.SyncConfig{Overlay: g, Epsilon: eps, Seed: seed + uint64(i), Sequential: sequential})
		if err != nil {
			return err
		}
		if r.Converged {
			o.Converged++
		}
		o.MaxRelError = max(o.MaxRelError, r.MaxRelError)
		o.Rounds += float64(r.Rounds) / float64(runs)
		o.MaxMaxMsgs = max(o.MaxMaxMsgs, r.Rounds)
		prog.update(i+1, runs)
	}
	o.MaxMsgs, o.MeanMsgs = o.Rounds, o.Rounds
	o.Replay = fmt.Sprintf("gossipreduce sim --mode sync --topology %s --nodes %d --eps %g --seed %d", g.Name(), g.Len(), eps, seed)
	if sequential {
		o.Replay += " --sequential"
	}
	if asJSON {
		return writeJSON(out.Stdout, o)
	}
	fmt.Fprintf(out.Stdout, "synchronous Push-Sum on %s, %d nodes, eps %g, %d run(s), seeds %d…%d\n",
		o.Topology, o.Nodes, o.Eps, o.Runs, o.Seed, o.LastSeed)
	fmt.Fprintf(out.Stdout, "  converged      %d/%d\n  rounds         %.1f (mean), %d (max)\n  max rel error  %.3g\n  replay with    %s\n",
		o.Converged, o.Runs, o.Rounds, o.MaxMaxMsgs, o.MaxRelError, o.Replay)
	return nil
}
