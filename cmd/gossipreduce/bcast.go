package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gossipreduce/gossipreduce/broadcast"
	"github.com/gossipreduce/gossipreduce/gossip"
)

func init() {
	registerLegacy("bcast", "simulated reliable broadcasts: corrected trees, corrected gossip, BMG, ack trees", runBcast)
}

const bcastUsage = `usage:
  gossipreduce bcast [flags]                 simulate broadcasts, report percentiles over runs
  gossipreduce bcast tree [flags]            print a dissemination tree
  gossipreduce bcast gossip-time [flags]     corrected gossip's T from equations 2-5
`

func runBcast(ctx context.Context, args []string, out *stdio) error {
	if len(args) > 0 {
		switch args[0] {
		case "tree":
			return runBcastTree(args[1:], out)
		case "gossip-time":
			return runBcastGossipTime(args[1:], out)
		}
	}
	return runBcastSim(ctx, args, out)
}

// bcastFlags are the flags shared by the bcast subcommands.
type bcastFlags struct {
	scheme, order, correction string
	nodes, l, o               int
	correctionSet             bool // --correction given explicitly
}

func (b *bcastFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&b.scheme, "scheme", "tree:binomial", "tree:binomial|tree:kary:K|tree:lame:K|tree:optimal|gossip|bmg|ack:<tree>")
	fs.StringVar(&b.order, "order", "interleaved", "tree numbering: interleaved|inorder")
	fs.StringVar(&b.correction, "correction", "checked", "none|opportunistic:D|optimized:D|opportunistic-synchronized:D|optimized-synchronized:D|checked|checked-overlapped|failproof:F")
	fs.IntVar(&b.nodes, "nodes", 1024, "number of processes P")
	fs.IntVar(&b.l, "L", 2, "LogP latency L (integer time units)")
	fs.IntVar(&b.o, "o", 1, "LogP overhead o (integer time units; g ≤ o)")
}

// parse parses args and builds the spec from the shared flags.
func (b *bcastFlags) parse(fs *flag.FlagSet, args []string) (broadcast.Spec, error) {
	if err := parseFlags(fs, args); err != nil {
		return broadcast.Spec{}, err
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "correction" {
			b.correctionSet = true
		}
	})
	return b.spec()
}

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
	if (s.Kind == broadcast.SchemeBMG || s.Kind == broadcast.SchemeAck) && !b.correctionSet {
		c = broadcast.Correction{} // the default correction does not apply
	}
	return broadcast.Spec{Nodes: b.nodes, Scheme: s, Correction: c, Model: broadcast.LogP{L: b.l, O: b.o}}, nil
}

func runBcastTree(args []string, out *stdio) error {
	fs := newFlags("bcast tree", out)
	var b bcastFlags
	b.register(fs)
	asJSON := fs.Bool("json", false, `print {"children": {"0": [...], ...}}`)
	spec, err := b.parse(fs, args)
	if err != nil {
		return err
	}
	if spec.Scheme.Kind != broadcast.SchemeTree && spec.Scheme.Kind != broadcast.SchemeAck {
		return usagef("bcast tree needs a tree scheme, not %s", spec.Scheme)
	}
	t, err := broadcast.NewTree(spec.Scheme.Tree, spec.Nodes, spec.Model)
	if err != nil {
		return usagef("%v", err)
	}
	var buf bytes.Buffer
	var kids []gossip.NodeID
	if *asJSON {
		buf.WriteString(`{"children": {`)
	}
	for v := 0; v < t.Len(); v++ {
		kids = t.Children(kids[:0], gossip.NodeID(v))
		if *asJSON {
			if v > 0 {
				buf.WriteString(", ")
			}
			fmt.Fprintf(&buf, `"%d": [`, v)
		} else {
			fmt.Fprintf(&buf, "%d:", v)
		}
		for i, c := range kids {
			switch {
			case *asJSON && i > 0:
				buf.WriteString(", ")
			case !*asJSON:
				buf.WriteByte(' ')
			}
			buf.WriteString(strconv.Itoa(int(c)))
		}
		if *asJSON {
			buf.WriteByte(']')
		} else {
			buf.WriteByte('\n')
		}
	}
	if *asJSON {
		buf.WriteString("}}\n")
	} else {
		fmt.Fprintf(&buf, "# %s %s, %d processes, height %d, fault-free latency %d (L=%d o=%d)\n",
			spec.Scheme, spec.Scheme.Tree.Order, t.Len(), t.Height(), t.Deadline(spec.Model), spec.Model.L, spec.Model.O)
	}
	_, err = out.Stdout.Write(buf.Bytes())
	return err
}

func runBcastGossipTime(args []string, out *stdio) error {
	fs := newFlags("bcast gossip-time", out)
	nodes := fs.Int("nodes", 1024, "number of processes N")
	live := fs.Int("live", 0, "live processes n assumed (0: all N)")
	l := fs.Int("L", 1, "LogP latency L")
	o := fs.Int("o", 1, "LogP overhead o")
	delta := fs.Float64("delta", broadcast.DefaultDelta, "accepted probability of a longer gap")
	f := fs.Int("f", 1, "failures tolerated by fail-proof correction")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	m := broadcast.GossipModel{Nodes: *nodes, Live: *live, Model: broadcast.LogP{L: *l, O: *o}, Delta: *delta, F: *f}
	type row struct {
		Algorithm string  `json:"algorithm"`
		T         int     `json:"T"`
		ArgMin    int     `json:"argmin"`
		K         int     `json:"k_hat"`
		Latency   float64 `json:"latency_estimate"`
	}
	var rows []row
	for _, a := range []struct {
		name string
		alg  broadcast.GossipAlgorithm
	}{{"ocg", broadcast.GossipOpportunistic}, {"ccg", broadcast.GossipChecked}, {"fcg", broadcast.GossipFailProof}} {
		ch, err := broadcast.OptimalGossipTime(m, a.alg)
		if err != nil {
			return usagef("%v", err)
		}
		rows = append(rows, row{a.name, ch.T, ch.ArgMin, ch.K, ch.Latency})
	}
	if *asJSON {
		return bcastWriteJSON(out.Stdout, map[string]any{"nodes": *nodes, "live": *live, "L": *l, "o": *o, "delta": *delta, "f": *f, "choices": rows})
	}
	fmt.Fprintf(out.Stdout, "N=%d L=%d o=%d delta=%g (T = smallest argmin + o)\n", *nodes, *l, *o, *delta)
	for _, r := range rows {
		fmt.Fprintf(out.Stdout, "%s: T=%d (argmin %d, K̂=%d, estimated latency %.0f)\n", r.Algorithm, r.T, r.ArgMin, r.K, r.Latency)
	}
	return nil
}

// parseRate reads a fault rate as a fraction ("0.01") or a percentage
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

func runBcastSim(ctx context.Context, args []string, out *stdio) error {
	fs := newFlags("bcast", out)
	fs.Usage = func() {
		fmt.Fprint(out.Stderr, bcastUsage, "\nflags:\n")
		fs.PrintDefaults()
	}
	var b bcastFlags
	b.register(fs)
	rate := fs.String("fault-rate", "", `fraction of processes failed before the start, "0.01" or "1%" (not with --faults)`)
	faults := fs.Int("faults", -1, "number of processes failed before the start (not with --fault-rate)")
	online := fs.Int("online-faults", 0, "processes failing during the run (machine engine; for fail-proof correction)")
	runs := fs.Int("runs", 1, "number of simulated broadcasts")
	seed := fs.String("seed", "", "seed of run 0; run i uses seed+i (default: from the clock, printed)")
	gossipT := fs.Int("T", 0, "gossip time T (0: chosen by corrected gossip's approximations)")
	delta := fs.Float64("delta", broadcast.DefaultDelta, "delta of the gossip-time approximations")
	workers := fs.Int("workers", 0, "parallel workers (0: GOMAXPROCS)")
	engine := fs.String("engine", "auto", "auto|fast|machines")
	asJSON := fs.Bool("json", false, "print one JSON summary object")
	perRun := fs.Bool("per-run", false, "with --json: print one JSON object per run instead of the summary")
	spec, err := b.parse(fs, args)
	if err != nil {
		return err
	}
	spec.GossipT, spec.Delta = *gossipT, *delta
	nf := 0
	switch {
	case *rate != "" && *faults >= 0:
		return usagef("--fault-rate and --faults exclude each other")
	case *rate != "":
		r, err := bcastParseRate(*rate)
		if err != nil {
			return usagef("--fault-rate %q: %v", *rate, err)
		}
		nf = int(math.Round(r * float64(spec.Nodes)))
	case *faults >= 0:
		nf = *faults
	}
	spec.Live = max(spec.Nodes-nf-*online, 0)
	eng, err := broadcast.ParseEngine(*engine)
	if err != nil {
		return usagef("%v", err)
	}
	var s0 uint64
	if *seed == "" {
		s0 = uint64(time.Now().UnixNano())
	} else if s0, err = strconv.ParseUint(*seed, 10, 64); err != nil {
		return usagef("--seed %q: %v", *seed, err)
	}
	plan, err := broadcast.NewPlan(spec)
	if err != nil {
		return usagef("%v", err)
	}
	progress, stop := bcastProgress(out.Stderr, *runs)
	defer stop()
	c := broadcast.Campaign{Plan: plan, Faults: nf, OnlineFaults: *online, Runs: *runs, Seed: s0, Workers: *workers, Engine: eng, Keep: *perRun, Progress: progress}
	start := time.Now()
	sum, err := c.Run(ctx)
	stop()
	if err != nil {
		if errors.Is(err, gossip.ErrInvalidConfig) {
			return usagef("%v", err)
		}
		return err
	}
	elapsed := time.Since(start)
	report := newBcastReport(plan, c, sum, elapsed)
	switch {
	case *asJSON && *perRun:
		for i, r := range sum.Results {
			if err := bcastWriteJSON(out.Stdout, bcastPerRun(plan, i, r)); err != nil {
				return err
			}
		}
		return nil
	case *asJSON:
		return bcastWriteJSON(out.Stdout, report)
	}
	return report.text(out.Stdout)
}

// progressPrinter reports campaign progress on w every two seconds for
// campaigns of many runs; stop ends it.
func bcastProgress(w io.Writer, total int) (func(int), func()) {
	if total < 200 {
		return nil, func() {}
	}
	var mu sync.Mutex
	last := time.Now()
	begin := last
	stopped := false
	progress := func(done int) {
		mu.Lock()
		defer mu.Unlock()
		if stopped || (time.Since(last) < 2*time.Second && done != total) {
			return
		}
		last = time.Now()
		fmt.Fprintf(w, "bcast: %d/%d runs (%.0f s)\n", done, total, time.Since(begin).Seconds())
	}
	return progress, func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
	}
}

type bcastReport struct {
	Scheme          string          `json:"scheme"`
	Order           string          `json:"order,omitempty"`
	Correction      string          `json:"correction"`
	Nodes           int             `json:"nodes"`
	L               int             `json:"L"`
	O               int             `json:"o"`
	Faults          int             `json:"faults"`
	FaultRate       float64         `json:"fault_rate"`
	OnlineFaults    int             `json:"online_faults"`
	Runs            int             `json:"runs"`
	Seed            uint64          `json:"seed"`
	RunSeeds        string          `json:"run_seeds"`
	Engine          string          `json:"engine"`
	GossipT         int64           `json:"gossip_T,omitempty"`
	CorrectionStart *int64          `json:"correction_start,omitempty"`
	BMGDegree       int             `json:"bmg_degree,omitempty"`
	Coloring        broadcast.Dist  `json:"coloring_latency"`
	Quiescence      broadcast.Dist  `json:"quiescence_latency"`
	Correction_     *broadcast.Dist `json:"correction_latency,omitempty"`
	Msgs            broadcast.Dist  `json:"msgs_per_process"`
	CorrectionMsgs  broadcast.Dist  `json:"correction_msgs_per_process"`
	Uncolored       broadcast.Dist  `json:"uncolored"`
	UncoloredRuns   int             `json:"uncolored_runs"`
	GMax            broadcast.Dist  `json:"g_max"`
	Participants    broadcast.Dist  `json:"correction_participants"`
	UndeliveredRuns int             `json:"undelivered_runs"`
	SOSRuns         int             `json:"sos_runs"`
	Elapsed         float64         `json:"elapsed_seconds"`
	PerSecond       float64         `json:"broadcasts_per_second"`
}

func newBcastReport(plan *broadcast.Plan, c broadcast.Campaign, s broadcast.Summary, elapsed time.Duration) bcastReport {
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

func bcastPerRun(plan *broadcast.Plan, i int, r broadcast.Result) map[string]any {
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
	if r.GossipT > 0 {
		fmt.Fprintf(&b, "gossip time T=%d\n", r.GossipT)
	}
	if r.CorrectionStart != nil {
		fmt.Fprintf(&b, "synchronized correction starts at %d\n", *r.CorrectionStart)
	}
	if r.BMGDegree > 0 {
		fmt.Fprintf(&b, "BMG degree %d\n", r.BMGDegree)
	}
	fmt.Fprintf(&b, "%-28s %9s %9s %9s %9s %9s\n", "metric", "p50", "p99", "p99.9", "max", "mean")
	row := func(name string, d broadcast.Dist) {
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

func bcastWriteJSON(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("bcast: %w", err)
	}
	data = append(data, '\n')
	_, err = w.Write(data)
	return err
}
