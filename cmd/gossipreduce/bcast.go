package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gossipreduce/gossipreduce/broadcast"
	"github.com/gossipreduce/gossipreduce/broadcast/bsim"
	"github.com/gossipreduce/gossipreduce/gossip"
)

func init() {
	register("bcast", "simulated reliable broadcasts: corrected trees, corrected gossip, BMG, ack trees; percentiles over runs", bcastFamily,
		func() command { return &bcastCmd{} })
	register("bcast tree", "print a dissemination tree", bcastFamily, func() command { return &bcastTreeCmd{} })
	register("bcast gossip-time", "corrected gossip's T from equations 2-5", bcastFamily, func() command { return &bcastGossipTimeCmd{} })
}

// bcastFlags are the flags of a broadcast that bcast and bcast tree share.
type bcastFlags struct {
	fs                        *flag.FlagSet
	scheme, order, correction string
	nodes, l, o               int
}

func (b *bcastFlags) register(fs *flag.FlagSet) {
	b.fs = fs
	fs.StringVar(&b.scheme, "scheme", "tree:binomial", "tree:binomial|tree:kary:K|tree:lame:K|tree:optimal|gossip|bmg|ack:<tree>")
	fs.StringVar(&b.order, "order", "interleaved", "tree numbering: interleaved|inorder")
	fs.StringVar(&b.correction, "correction", "checked", "none|opportunistic:D|optimized:D|opportunistic-synchronized:D|optimized-synchronized:D|checked|checked-overlapped|failproof:F; D messages each way, or D/2 for D in all, split between the two directions")
	registerLogP(fs, &b.nodes, &b.l, &b.o)
}

// registerLogP registers --nodes and the LogP model, --L and --o, with the
// broadcast papers' defaults: 1024 processes, L 2, o 1, the same in every
// sub-verb.
func registerLogP(fs *flag.FlagSet, nodes, l, o *int) {
	registerNodes(fs, nodes, familyDefaults[bcastFamily].nodes)
	fs.IntVar(l, "L", 2, helpL)
	fs.IntVar(o, "o", 1, helpO)
}

// spec builds the broadcast the flags describe.
func (b *bcastFlags) spec() (broadcast.Spec, error) {
	s, err := broadcast.ParseScheme(b.scheme)
	if err != nil {
		return broadcast.Spec{}, usagef("%v", err)
	}
	ord, err := broadcast.ParseOrder(b.order)
	if err != nil {
		return broadcast.Spec{}, usagef("%v", err)
	}
	s.Tree.Order = ord
	c, err := broadcast.ParseCorrection(b.correction)
	if err != nil {
		return broadcast.Spec{}, usagef("%v", err)
	}
	if (s.Kind == broadcast.SchemeBMG || s.Kind == broadcast.SchemeAck) && !given(b.fs)["correction"] {
		c = broadcast.Correction{} // the default correction does not apply
	}
	return broadcast.Spec{Nodes: b.nodes, Scheme: s, Correction: c, Model: broadcast.LogP{L: b.l, O: b.o}}, nil
}

// bcastTreeCmd is bcast tree: the dissemination tree of a tree scheme.
type bcastTreeCmd struct {
	b    bcastFlags
	spec broadcast.Spec
	tree *broadcast.Tree
}

func (c *bcastTreeCmd) flags(fs *flag.FlagSet) { c.b.register(fs) }

func (c *bcastTreeCmd) check() error {
	spec, err := c.b.spec()
	if err != nil {
		return err
	}
	if spec.Scheme.Kind != broadcast.SchemeTree && spec.Scheme.Kind != broadcast.SchemeAck {
		return usagef("bcast tree needs a tree scheme, not %s", spec.Scheme)
	}
	if c.tree, err = broadcast.NewTree(spec.Scheme.Tree, spec.Nodes, spec.Model); err != nil {
		return usagef("%v", err)
	}
	c.spec = spec
	return nil
}

func (c *bcastTreeCmd) exec(_ context.Context, out *stdio) error {
	t := c.tree
	children := make(treeChildren, t.Len())
	for v := range children {
		children[v] = t.Children(nil, gossip.NodeID(v))
	}
	if out.json {
		// One line: a tree of many processes is a data dump.
		return writeJSONLine(out.Stdout, map[string]treeChildren{"children": children})
	}
	var buf bytes.Buffer
	for v, kids := range children {
		fmt.Fprintf(&buf, "%d:", v)
		for _, k := range kids {
			fmt.Fprintf(&buf, " %d", k)
		}
		buf.WriteByte('\n')
	}
	fmt.Fprintf(&buf, "# %s %s, %d processes, height %d, fault-free latency %d (L=%d o=%d)\n",
		c.spec.Scheme, c.spec.Scheme.Tree.Order, t.Len(), t.Height(), t.Deadline(c.spec.Model), c.spec.Model.L, c.spec.Model.O)
	_, err := out.Stdout.Write(buf.Bytes())
	return err
}

// treeChildren are the children of every process, in send order; its
// JSON is an object keyed by process, in numeric order.
type treeChildren [][]gossip.NodeID

func (tc treeChildren) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for v, kids := range tc {
		if v > 0 {
			buf.WriteString(", ")
		}
		fmt.Fprintf(&buf, `"%d": [`, v)
		for i, k := range kids {
			if i > 0 {
				buf.WriteString(", ")
			}
			buf.WriteString(strconv.Itoa(int(k)))
		}
		buf.WriteByte(']')
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// bcastGossipTimeCmd is bcast gossip-time: corrected gossip's T for each
// corrected gossip algorithm.
type bcastGossipTimeCmd struct {
	nodes, live, l, o, f int
	delta                float64
}

func (c *bcastGossipTimeCmd) flags(fs *flag.FlagSet) {
	registerLogP(fs, &c.nodes, &c.l, &c.o)
	fs.IntVar(&c.live, "live", 0, "live processes n assumed (0: all N)")
	registerDelta(fs, &c.delta)
	fs.IntVar(&c.f, "f", 1, "failures tolerated by fail-proof correction")
}

func (c *bcastGossipTimeCmd) check() error { return nil }

// gossipTimeRow is the choice of T of one algorithm.
type gossipTimeRow struct {
	Algorithm string  `json:"algorithm"`
	T         int     `json:"T"`
	ArgMin    int     `json:"argmin"`
	K         int     `json:"k_hat"`
	Latency   float64 `json:"latency_estimate"`
	Ties      []int   `json:"tied_minimisers"`
}

// gossipTimeReport is what bcast gossip-time prints.
type gossipTimeReport struct {
	Nodes   int             `json:"nodes"`
	Live    int             `json:"live"`
	L       int             `json:"L"`
	O       int             `json:"o"`
	Delta   float64         `json:"delta"`
	F       int             `json:"f"`
	Choices []gossipTimeRow `json:"choices"`
}

func (c *bcastGossipTimeCmd) exec(_ context.Context, out *stdio) error {
	m := bsim.GossipModel{Nodes: c.nodes, Live: c.live, Model: broadcast.LogP{L: c.l, O: c.o}, Delta: c.delta, F: c.f}
	r := gossipTimeReport{Nodes: c.nodes, Live: c.live, L: c.l, O: c.o, Delta: c.delta, F: c.f}
	for _, a := range []struct {
		name string
		alg  bsim.GossipAlgorithm
	}{{"ocg", bsim.GossipOpportunistic}, {"ccg", bsim.GossipChecked}, {"fcg", bsim.GossipFailProof}} {
		ch, err := bsim.OptimalGossipTime(m, a.alg)
		if err != nil {
			return usagef("%v", err)
		}
		r.Choices = append(r.Choices, gossipTimeRow{a.name, ch.T, ch.ArgMin, ch.K, ch.Latency, ch.Ties})
	}
	return out.print(r)
}

func (r gossipTimeReport) text(w io.Writer) error {
	fmt.Fprintf(w, "N=%d L=%d o=%d delta=%g (T = argmin + o; of tied minimisers, the one whose K̂ holds down to the smallest delta)\n", r.Nodes, r.L, r.O, r.Delta)
	for _, c := range r.Choices {
		fmt.Fprintf(w, "%s: T=%d (argmin %d of %v, K̂=%d, estimated latency %.0f)\n", c.Algorithm, c.T, c.ArgMin, c.Ties, c.K, c.Latency)
	}
	return nil
}

func registerDelta(fs *flag.FlagSet, delta *float64) {
	fs.Float64Var(delta, "delta", broadcast.DefaultDelta, "accepted probability of a longer gap, in corrected gossip's approximations of T")
}

// bcastParseRate reads a fault rate as a fraction ("0.01") or a percentage
// ("1%").
func bcastParseRate(s string) (float64, error) {
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil {
		return 0, err
	}
	if pct {
		v /= 100
	}
	if !(v >= 0 && v < 1) {
		return 0, errors.New("outside [0, 1)")
	}
	return v, nil
}

// bcastCmd is bcast: a campaign of simulated broadcasts.
type bcastCmd struct {
	b                    bcastFlags
	seed                 seedFlag
	rate, engine, model  string
	faults, online, runs int
	gossipT, workers     int
	delta                float64
	perRun               bool
	plan                 *broadcast.Plan // built by check
	failed               int             // processes failed before the start
	eng                  bsim.Engine     // --engine, parsed
}

func (c *bcastCmd) flags(fs *flag.FlagSet) {
	c.b.register(fs)
	registerSeed(fs, &c.seed)
	registerRuns(fs, &c.runs, 1)
	registerWorkers(fs, &c.workers)
	registerPerRun(fs, &c.perRun)
	registerDelta(fs, &c.delta)
	fs.StringVar(&c.rate, "fault-rate", "", `fraction of processes failed before the start, "0.01" or "1%" (not with --faults)`)
	fs.IntVar(&c.faults, "faults", -1, "number of processes failed before the start (not with --fault-rate)")
	fs.IntVar(&c.online, "online-faults", 0, "processes failing during the run (machine engine; for fail-proof correction)")
	fs.IntVar(&c.gossipT, "T", 0, "gossip time T (0: chosen by corrected gossip's approximations)")
	fs.StringVar(&c.engine, "engine", "auto", "auto|fast|machines")
	fs.StringVar(&c.model, "gossip-model", "logp", "gossip alone in LogP time (logp), in corrected gossip's unsynchronized rounds (rounds: T rounds, default ⌈1.639·log2 N⌉), or in synchronous push rounds (sync-rounds)")
}

func (c *bcastCmd) check() error {
	spec, err := c.b.spec()
	if err != nil {
		return err
	}
	spec.GossipT, spec.Delta = c.gossipT, c.delta
	switch {
	case c.rate != "" && c.faults >= 0:
		return usagef("--fault-rate and --faults exclude each other")
	case c.rate != "":
		r, err := bcastParseRate(c.rate)
		if err != nil {
			return usagef("--fault-rate %q: %v", c.rate, err)
		}
		c.failed = int(math.Round(r * float64(spec.Nodes)))
	case c.faults >= 0:
		c.failed = c.faults
	}
	spec.Live = max(spec.Nodes-c.failed-c.online, 0)
	if c.eng, err = bsim.ParseEngine(c.engine); err != nil {
		return usagef("%v", err)
	}
	if err := c.roundModel(&spec); err != nil {
		return err
	}
	if c.plan, err = broadcast.NewPlan(spec); err != nil {
		return usagef("%v", err)
	}
	return nil
}

// roundModel applies --gossip-model: the round models simulate gossip
// alone, T rounds (Drezner and Barak's ⌈1.639·log₂ N⌉ unless --T is
// given), on an engine of their own.
func (c *bcastCmd) roundModel(spec *broadcast.Spec) error {
	switch c.model {
	case "logp":
		if c.eng == bsim.EngineRounds || c.eng == bsim.EngineSyncRounds {
			return usagef("--engine %s: use --gossip-model %s", c.engine, c.engine)
		}
		return nil
	case "rounds", "sync-rounds":
	default:
		return usagef("--gossip-model %q: want logp, rounds or sync-rounds", c.model)
	}
	set := given(c.b.fs)
	switch {
	case spec.Scheme.Kind != broadcast.SchemeGossip:
		return usagef("--gossip-model %s needs --scheme gossip, not %s", c.model, spec.Scheme)
	case set["correction"] && spec.Correction.Kind != broadcast.CorrectionNone:
		return usagef("--gossip-model %s simulates gossip alone: --correction none, not %s", c.model, spec.Correction)
	case set["engine"]:
		return usagef("--gossip-model %s has its own engine; leave out --engine", c.model)
	case c.online > 0:
		return usagef("--gossip-model %s has no failures during the run", c.model)
	}
	spec.Correction = broadcast.Correction{}
	if spec.GossipT == 0 {
		spec.GossipT = bsim.DreznerBarakRounds(spec.Nodes)
	}
	c.eng = bsim.EngineRounds
	if c.model == "sync-rounds" {
		c.eng = bsim.EngineSyncRounds
	}
	return nil
}

func (c *bcastCmd) exec(ctx context.Context, out *stdio) error {
	prog := newProgress(out, "bcast runs")
	camp := bsim.Campaign{Plan: c.plan, Faults: c.failed, OnlineFaults: c.online, Runs: c.runs, Seed: c.seed.value(), Workers: c.workers,
		Engine: c.eng, Keep: c.perRun, Progress: func(done int) { prog.update(done, c.runs) }}
	start := time.Now()
	sum, err := camp.Run(ctx)
	if err != nil {
		if errors.Is(err, gossip.ErrInvalidConfig) {
			return usagef("%v", err)
		}
		return err
	}
	if out.json && c.perRun {
		for i, r := range sum.Results {
			if err := writeJSONLine(out.Stdout, bcastPerRun(c.plan, i, r)); err != nil {
				return err
			}
		}
		return nil
	}
	return out.print(newBcastReport(c.plan, camp, sum, time.Since(start)))
}

type bcastReport struct {
	Scheme          string     `json:"scheme"`
	Order           string     `json:"order,omitempty"`
	Correction      string     `json:"correction"`
	Nodes           int        `json:"nodes"`
	L               int        `json:"L"`
	O               int        `json:"o"`
	Faults          int        `json:"faults"`
	FaultRate       float64    `json:"fault_rate"`
	OnlineFaults    int        `json:"online_faults"`
	Runs            int        `json:"runs"`
	Seed            uint64     `json:"seed"`
	RunSeeds        string     `json:"run_seeds"`
	Engine          string     `json:"engine"`
	GossipT         int64      `json:"gossip_T,omitempty"`
	GossipModel     string     `json:"gossip_model,omitempty"`
	CorrectionStart *int64     `json:"correction_start,omitempty"`
	BMGDegree       int        `json:"bmg_degree,omitempty"`
	Coloring        bsim.Dist  `json:"coloring_latency"`
	Quiescence      bsim.Dist  `json:"quiescence_latency"`
	Correction_     *bsim.Dist `json:"correction_latency,omitempty"`
	Msgs            bsim.Dist  `json:"msgs_per_process"`
	CorrectionMsgs  bsim.Dist  `json:"correction_msgs_per_process"`
	Uncolored       bsim.Dist  `json:"uncolored"`
	UncoloredRuns   int        `json:"uncolored_runs"`
	GMax            bsim.Dist  `json:"g_max"`
	Participants    bsim.Dist  `json:"correction_participants"`
	UndeliveredRuns int        `json:"undelivered_runs"`
	SOSRuns         int        `json:"sos_runs"`
	Elapsed         float64    `json:"elapsed_seconds"`
	PerSecond       float64    `json:"broadcasts_per_second"`
}

func newBcastReport(plan *broadcast.Plan, c bsim.Campaign, s bsim.Summary, elapsed time.Duration) bcastReport {
	spec := plan.Spec()
	r := bcastReport{
		Scheme:          spec.Scheme.String(),
		Correction:      spec.Correction.String(),
		Nodes:           spec.Nodes,
		L:               spec.Model.L,
		O:               spec.Model.O,
		Faults:          c.Faults,
		FaultRate:       float64(c.Faults) / float64(spec.Nodes),
		OnlineFaults:    c.OnlineFaults,
		Runs:            s.Runs,
		Seed:            s.Seed,
		RunSeeds:        fmt.Sprintf("run i uses seed %d+i; replay it with --seed %d+i --runs 1", s.Seed, s.Seed),
		Engine:          s.Engine.String(),
		BMGDegree:       plan.BMGDegree(),
		Coloring:        s.Coloring,
		Quiescence:      s.Quiescence,
		Msgs:            s.Msgs,
		CorrectionMsgs:  s.CorrectionMsgs,
		Uncolored:       s.Uncolored,
		UncoloredRuns:   s.UncoloredRuns,
		GMax:            s.GMax,
		Participants:    s.Participants,
		UndeliveredRuns: s.UndeliveredRuns,
		SOSRuns:         s.SOSRuns,
		Elapsed:         elapsed.Seconds(),
	}
	if plan.Tree() != nil {
		r.Order = spec.Scheme.Tree.Order.String()
	}
	if spec.Scheme.Kind == broadcast.SchemeGossip {
		r.GossipT, _ = plan.GossipTime()
		r.GossipModel = "logp"
		if s.Engine == bsim.EngineRounds || s.Engine == bsim.EngineSyncRounds {
			r.GossipModel = s.Engine.String()
		}
	}
	if st, ok := plan.CorrectionStart(); ok {
		r.CorrectionStart = &st
		r.Correction_ = &s.Correction
	}
	if elapsed > 0 {
		r.PerSecond = float64(s.Runs) / elapsed.Seconds()
	}
	return r
}

func bcastPerRun(plan *broadcast.Plan, i int, r bsim.Result) map[string]any {
	m := map[string]any{
		"run":                         i,
		"seed":                        r.Seed,
		"coloring_latency":            r.ColoringLatency,
		"quiescence_latency":          r.Quiescence,
		"msgs_per_process":            float64(r.Msgs) / float64(plan.Nodes()),
		"correction_msgs_per_process": float64(r.CorrectionMsgs) / float64(plan.Nodes()),
		"uncolored":                   r.Uncolored,
		"g_max":                       r.GMax,
		"correction_participants":     r.Participants,
		"dead":                        r.Dead,
	}
	if r.CorrectionLatency >= 0 {
		m["correction_latency"] = r.CorrectionLatency
	}
	return m
}

func (r bcastReport) text(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", r.Scheme)
	if r.Order != "" {
		fmt.Fprintf(&b, " (%s)", r.Order)
	}
	fmt.Fprintf(&b, ", correction %s, P=%d, L=%d, o=%d, %d failed (%.4g%%)", r.Correction, r.Nodes, r.L, r.O, r.Faults, 100*r.FaultRate)
	if r.OnlineFaults > 0 {
		fmt.Fprintf(&b, " + %d during the run", r.OnlineFaults)
	}
	fmt.Fprintf(&b, "\n%d runs, engine %s, seed %d (run i uses seed %d+i)\n", r.Runs, r.Engine, r.Seed, r.Seed)
	switch {
	case r.GossipT > 0 && r.GossipModel != "logp":
		fmt.Fprintf(&b, "gossip alone, %d %s; latencies in rounds; %.4g%% of runs colored every live process\n",
			r.GossipT, r.GossipModel, 100*float64(r.Runs-r.UncoloredRuns)/float64(r.Runs))
	case r.GossipT > 0:
		fmt.Fprintf(&b, "gossip time T=%d\n", r.GossipT)
	}
	if r.CorrectionStart != nil {
		fmt.Fprintf(&b, "synchronized correction starts at %d\n", *r.CorrectionStart)
	}
	if r.BMGDegree > 0 {
		fmt.Fprintf(&b, "BMG degree %d\n", r.BMGDegree)
	}
	fmt.Fprintf(&b, "%-28s %9s %9s %9s %9s %9s\n", "metric", "p50", "p99", "p99.9", "max", "mean")
	row := func(name string, d bsim.Dist) {
		fmt.Fprintf(&b, "%-28s %9.4g %9.4g %9.4g %9.4g %9.4g\n", name, d.P50, d.P99, d.P999, d.Max, d.Mean)
	}
	row("coloring latency", r.Coloring)
	row("quiescence latency", r.Quiescence)
	if r.CorrectionStart != nil {
		row("correction latency (L_SCC)", *r.Correction_)
	}
	row("g_max", r.GMax)
	row("messages per process", r.Msgs)
	row("correction msgs per process", r.CorrectionMsgs)
	row("correction participants", r.Participants)
	row("uncolored live processes", r.Uncolored)
	fmt.Fprintf(&b, "runs leaving a live process uncolored: %d of %d\n", r.UncoloredRuns, r.Runs)
	if r.UndeliveredRuns > 0 || r.SOSRuns > 0 {
		fmt.Fprintf(&b, "runs with undelivered c-nodes: %d; runs falling back to SOS: %d\n", r.UndeliveredRuns, r.SOSRuns)
	}
	fmt.Fprintf(&b, "%.3g s, %.4g broadcasts/s\n", r.Elapsed, r.PerSecond)
	_, err := io.WriteString(w, b.String())
	return err
}
