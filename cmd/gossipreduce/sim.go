package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/sim"
	"github.com/gossipreduce/gossipreduce/topology"
)

func init() {
	register("sim", "simulate all-reduce runs (discrete-event, or synchronous rounds with --mode sync)", simFamily, func() command { return &simCmd{} })
}

// simOutput is the JSON of the sim verb (field names are a contract, see
// DESIGN.md).
type simOutput struct {
	Algo     string  `json:"algo"`
	Topology string  `json:"topology"`
	Nodes    int     `json:"nodes"`
	Mode     string  `json:"mode"`
	Eps      float64 `json:"eps"`
	// The runs' figures (in sync mode, MaxMsgs and MeanMsgs are rounds).
	sim.Summary
	Rounds float64 `json:"rounds,omitempty"`
	// Model is the cost topology.Model predicts for these runs (rounds in
	// sync mode, max msgs per node in async mode) from our fitted
	// coefficients, where there is one: Push-Sum on a complete, hypercube
	// or 3-D torus overlay at eps 1e-14, without faults.
	Model  *float64 `json:"model,omitempty"`
	Replay string   `json:"replay"`
}

// simCmd is the sim verb: the algorithm simulator (discrete-event, or
// synchronous rounds), or with --runtime the runtime's member machines.
type simCmd struct {
	fs                            *flag.FlagSet
	algo                          listFlag[string]
	group                         groupFlags
	faults                        faultFlags // --loss, --crash
	seed                          seedFlag
	runs, workers, maxMsgs, comps int
	stop, cost, weights, mode     string
	lat, ovh, jitter, tick, tau   float64
	perRun, sequential            bool
	dead                          int
	deadIDs                       string
	crashAt, detect               float64
	runtime                       runtimeSimFlags
	set                           map[string]bool   // the flags given
	g                             topology.Graph    // the overlay, built by check
	wm                            gossip.WeightMode // --weights, parsed
	ids                           []uint32          // --dead-ids, parsed
}

func (c *simCmd) flags(fs *flag.FlagSet) {
	c.fs = fs
	d := familyDefaults[simFamily]
	registerAlgo(fs, &c.algo, "sim", d.algo)
	c.group.register(fs, d)
	c.faults.registerLoss(fs, "sim")
	c.faults.registerCrash(fs, false)
	registerRuns(fs, &c.runs, 1)
	registerWorkers(fs, &c.workers)
	registerMaxMsgs(fs, &c.maxMsgs)
	registerComponents(fs, &c.comps)
	registerTau(fs, &c.tau)
	registerPerRun(fs, &c.perRun)
	registerSeed(fs, &c.seed)
	fs.StringVar(&c.stop, "stop", "all", "stop rule: all (every node ε-accurate) or first")
	fs.Float64Var(&c.lat, "L", 1, helpL)
	fs.Float64Var(&c.ovh, "o", 0, helpO)
	fs.Float64Var(&c.jitter, "jitter", 0, "latency jitter: L·(1+U[0,jitter))")
	fs.StringVar(&c.cost, "cost", "uniform", "latency model: uniform or torus3d (hop distance on a physical 3-D torus, thesis 5.4)")
	fs.IntVar(&c.dead, "dead", 0, "number of nodes dead from the start (chosen by seed)")
	fs.StringVar(&c.deadIDs, "dead-ids", "", "comma-separated ids of nodes dead from the start")
	fs.Float64Var(&c.crashAt, "crash-at", 10, "simulated time of the crashes of --crash")
	fs.Float64Var(&c.detect, "detect-after", 0, "delay before neighbours exclude a dead node (negative: never)")
	fs.StringVar(&c.weights, "weights", "average", "average (w=1) or sum (w=1/N)")
	fs.Float64Var(&c.tick, "tick", 0, "tick every node periodically (0: only at the start)")
	fs.StringVar(&c.mode, "mode", "async", "async (discrete-event) or sync (synchronous rounds of Push-Sum, for very large N: --algo ps, which it implies)")
	fs.BoolVar(&c.sequential, "sequential", false, "with --mode sync: thesis Algorithm 7 exactly (in place, node by node, one core)")
	c.runtime.register(fs)
}

func (c *simCmd) check() error {
	c.set = given(c.fs)
	n := c.group.nodes
	err := firstError(c.group.check(), checkCount("runs", c.runs, 1), checkCount("components", c.comps, 1), checkCount("workers", c.workers, 0), c.faults.check(n))
	if err != nil {
		return err
	}
	if c.runtime.on {
		return c.runtime.check(c.set)
	}
	if err := c.runtime.notGiven(c.set); err != nil {
		return err
	}
	switch c.mode {
	case "sync":
		if c.set["algo"] && c.algo.one() != "ps" {
			return usagef("--mode sync simulates Push-Sum only, not %q", c.algo.one())
		}
		c.algo.vals = []string{"ps"}
	case "async":
	default:
		return usagef("--mode %q: want async or sync", c.mode)
	}
	if c.g, err = c.group.overlay(n); err != nil {
		return err
	}
	if c.wm, err = gossip.ParseWeightMode(c.weights); err != nil {
		return usagef("%v", err)
	}
	return c.checkModel()
}

// checkModel checks the flags of the discrete-event simulator's model:
// the stop rule, the cost model and the dead and crashed nodes.
func (c *simCmd) checkModel() error {
	n := c.group.nodes
	if c.stop != "all" && c.stop != "first" {
		return usagef("--stop %q: want all or first", c.stop)
	}
	if c.cost != "uniform" && c.cost != "torus3d" {
		return usagef("--cost %q: want uniform or torus3d", c.cost)
	}
	ids, err := parseIDs(c.deadIDs, n)
	if err != nil {
		return err
	}
	c.ids = ids
	switch {
	case c.dead < 0:
		return usagef("--dead must be ≥ 0")
	case c.dead+c.faults.crash.count(n)+len(ids) >= n:
		return usagef("--dead, --dead-ids and --crash leave no node alive")
	case math.IsNaN(c.crashAt) || c.crashAt < 0:
		return usagef("--crash-at %v must be ≥ 0", c.crashAt)
	}
	return nil
}

func (c *simCmd) exec(ctx context.Context, out *stdio) error {
	switch {
	case c.runtime.on:
		return c.execRuntime(ctx, out)
	case c.mode == "sync":
		return c.execSync(ctx, out)
	}
	return c.execAsync(ctx, out)
}

// config is the discrete-event simulator's configuration for seed s.
func (c *simCmd) config(s uint64) (sim.Config, error) {
	cfg := sim.Config{
		Algorithm: c.algo.one(), Overlay: c.g, Components: c.comps, Mode: c.wm, Epsilon: c.group.eps,
		MaxMsgs: c.maxMsgs, Seed: s, L: c.lat, O: c.ovh, Jitter: c.jitter, TickEvery: c.tick,
		Loss: c.faults.loss.one(), DetectAfter: c.detect, Tau: c.tau,
	}
	if c.stop == "first" {
		cfg.Stop = sim.StopFirst
	}
	if c.cost == "torus3d" {
		pt, err := topology.NewPhysicalTorus(c.g, s)
		if err != nil {
			return sim.Config{}, err
		}
		cfg.Distance = func(from, to gossip.NodeID) float64 { return float64(pt.Hops(from, to)) }
	}
	c.victims(&cfg, s)
	return cfg, nil
}

// victims adds the dead and crashing nodes to cfg: those of --dead-ids,
// then the others drawn from the seed s, so that a replay picks the same.
func (c *simCmd) victims(cfg *sim.Config, s uint64) {
	n := c.group.nodes
	perm := rand.New(rand.NewPCG(s, 0xdead)).Perm(n)
	chosen := make(map[int]bool)
	for _, id := range c.ids {
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
	for range c.dead {
		cfg.Dead = append(cfg.Dead, next())
	}
	for range c.faults.crash.count(n) {
		cfg.Crashes = append(cfg.Crashes, sim.Crash{Node: next(), At: c.crashAt})
	}
}

func (c *simCmd) execAsync(ctx context.Context, out *stdio) error {
	s := c.seed.value()
	cfg, err := c.config(s)
	if err != nil {
		return err
	}
	var prog func(int, int)
	if c.runs > 1 {
		prog = newProgress(out, "sim").update
	}
	results, err := sim.RunMany(ctx, cfg, c.runs, c.workers, prog)
	if err != nil {
		return err
	}
	if out.json && c.perRun {
		for _, r := range results {
			if err := writeJSONLine(out.Stdout, r); err != nil {
				return err
			}
		}
		return nil
	}
	sum := sim.Summarize(results)
	o := simOutput{
		Algo: c.algo.one(), Topology: c.g.Name(), Nodes: c.g.Len(), Mode: "async", Eps: c.group.eps,
		Summary: sum, Replay: replayLine("sim", c.fs, sum.FirstSeed),
	}
	if c.algo.one() == "ps" && cfg.Loss == 0 && len(cfg.Dead) == 0 && len(cfg.Crashes) == 0 && cfg.Distance == nil {
		kind := topology.ModelAsyncMsgs
		if c.stop == "first" {
			kind = topology.ModelAsyncFirstMsgs
		}
		o.Model = c.model(kind)
	}
	return out.print(o)
}

// model is our fitted cost model of kind on the overlay, or nil where there
// is none (other overlays, or eps other than the models').
func (c *simCmd) model(kind topology.ModelKind) *float64 {
	if c.group.eps != topology.ModelEpsilon {
		return nil
	}
	if f, ok := topology.Model(kind, c.g); ok {
		return &f
	}
	return nil
}

// modelLine is the text line of a prediction, or "" without one.
func (o simOutput) modelLine(unit string) string {
	if o.Model == nil {
		return ""
	}
	return fmt.Sprintf("  model            %.1f %s (our fit of thesis eq. 5.2, gossipreduce spectral --fit)\n", *o.Model, unit)
}

func (o simOutput) text(w io.Writer) error {
	if o.Mode != "async" {
		return o.syncText(w)
	}
	fmt.Fprintf(w, "%s on %s, %d nodes, eps %g, %d run(s), seeds %d…%d\n",
		o.Algo, o.Topology, o.Nodes, o.Eps, o.Runs, o.FirstSeed, o.LastSeed)
	fmt.Fprintf(w, "  converged        %d/%d\n", o.Converged, o.Runs)
	fmt.Fprintf(w, "  max rel error    %.3g\n", o.MaxRelError)
	fmt.Fprintf(w, "  max msgs/node    %.1f (mean over runs), %d (worst run)\n", o.MaxMsgs, o.MaxMaxMsgs)
	fmt.Fprint(w, o.modelLine("max msgs/node"))
	fmt.Fprintf(w, "  mean msgs/node   %.1f\n", o.MeanMsgs)
	fmt.Fprintf(w, "  sim time         %.1f\n", o.SimTime)
	if o.Lost > 0 || o.Rejected > 0 {
		fmt.Fprintf(w, "  lost %d, rejected %d messages\n", o.Lost, o.Rejected)
	}
	_, err := fmt.Fprintf(w, "  replay with      %s\n", o.Replay)
	return err
}

// replayLine is the command line that replays the first run of a verb:
// the flags given (deprecated aliases by their new names) and the seed.
func replayLine(verb string, fs *flag.FlagSet, seed uint64) string {
	line := []string{"gossipreduce", verb}
	fs.Visit(func(f *flag.Flag) {
		switch b, _ := f.Value.(interface{ IsBoolFlag() bool }); {
		case f.Name == "seed" || isAlias(f):
		case b != nil && b.IsBoolFlag():
			line = append(line, "--"+f.Name)
		default:
			v := f.Value.String()
			if v == "" || strings.ContainsAny(v, " \t'\"$\\*?;&|<>()") {
				v = strconv.Quote(v)
			}
			line = append(line, "--"+f.Name, v)
		}
	})
	return strings.Join(append(line, "--seed", strconv.FormatUint(seed, 10)), " ")
}

func (c *simCmd) execSync(ctx context.Context, out *stdio) error {
	seed := c.seed.value()
	mode := "sync"
	if c.sequential {
		mode = "sync-sequential"
	}
	o := simOutput{Algo: "ps", Topology: c.g.Name(), Nodes: c.g.Len(), Mode: mode, Eps: c.group.eps,
		Summary: sim.Summary{Runs: c.runs, FirstSeed: seed, LastSeed: seed + uint64(c.runs) - 1}, Replay: replayLine("sim", c.fs, seed)}
	prog := newProgress(out, "sim --mode sync")
	for i := range c.runs {
		r, err := sim.RunSync(ctx, sim.SyncConfig{Overlay: c.g, Epsilon: c.group.eps, Seed: seed + uint64(i), Sequential: c.sequential})
		if err != nil {
			return err
		}
		if r.Converged {
			o.Converged++
		}
		if i == 0 || r.MaxRelError > o.MaxRelError {
			o.WorstSeed = seed + uint64(i)
		}
		o.MaxRelError = max(o.MaxRelError, r.MaxRelError)
		o.Rounds += float64(r.Rounds) / float64(c.runs)
		o.MaxMaxMsgs = max(o.MaxMaxMsgs, r.Rounds)
		prog.update(i+1, c.runs)
	}
	o.MaxMsgs, o.MeanMsgs = o.Rounds, o.Rounds
	kind := topology.ModelSyncJacobiRounds
	if c.sequential {
		kind = topology.ModelSyncRounds
	}
	o.Model = c.model(kind)
	return out.print(o)
}

func (o simOutput) syncText(w io.Writer) error {
	fmt.Fprintf(w, "synchronous Push-Sum on %s, %d nodes, eps %g, %d run(s), seeds %d…%d\n",
		o.Topology, o.Nodes, o.Eps, o.Runs, o.FirstSeed, o.LastSeed)
	fmt.Fprintf(w, "  converged      %d/%d\n  rounds         %.1f (mean), %d (max)\n", o.Converged, o.Runs, o.Rounds, o.MaxMaxMsgs)
	if o.Model != nil {
		fmt.Fprintf(w, "  model          %.1f rounds (our fit of thesis eq. 5.2, gossipreduce spectral --fit)\n", *o.Model)
	}
	_, err := fmt.Fprintf(w, "  max rel error  %.3g\n  replay with    %s\n", o.MaxRelError, o.Replay)
	return err
}
