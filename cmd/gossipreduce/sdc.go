package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/gossipreduce/gossipreduce/algo"
	"github.com/gossipreduce/gossipreduce/sdc"
	"github.com/gossipreduce/gossipreduce/sdc/campaign"
	"github.com/gossipreduce/gossipreduce/topology"
)

func init() {
	registerLegacy("sdc", "bit-flip and message-loss campaigns (thesis chapter 4) with CSV/JSON and plots", runSDC)
}

// sdcReport is what `gossipreduce sdc --json` prints: one object whose
// points (bit sweep), runs (rate campaign) or loss (loss sweep) hold the
// results.
type sdcReport struct {
	Mode       string               `json:"mode"` // bits, rate, loss
	Algorithms []string             `json:"algos"`
	Topology   string               `json:"topology"`
	Nodes      int                  `json:"nodes"`
	Eps        float64              `json:"eps"`
	Runs       int                  `json:"runs"`
	Seed       uint64               `json:"seed"`
	Tau        float64              `json:"tau"`
	MaxMsgs    int                  `json:"max_msgs"`
	Injector   string               `json:"injector,omitempty"`
	Points     []campaign.Point     `json:"points,omitempty"`
	Baseline   *campaign.Baseline   `json:"baseline,omitempty"`
	RateRuns   []campaign.RateRun   `json:"runs_detail,omitempty"`
	Loss       []campaign.LossPoint `json:"loss,omitempty"`
	Seconds    float64              `json:"seconds"`
	Plots      []string             `json:"plots,omitempty"`
}

func runSDC(ctx context.Context, args []string, out *stdio) error {
	fs := newFlags("sdc", out)
	algos := fs.String("algo", "pfcc", "algorithms, comma separated: "+strings.Join(algo.Names(), ", "))
	topo := fs.String("topology", "hypercube", "overlay: "+strings.Join(topology.Names(), "|")+"|torus:AxBxC")
	nodes := fs.Int("nodes", 32, "number of nodes N")
	eps := fs.Float64("eps", 1e-14, "target accuracy ε in (0, 1)")
	bits := fs.String("bits", "0-63", "bit positions: ranges and lists, e.g. 0-63 or 20,52-62")
	targets := fs.String("target", "value", "what to flip, comma separated: value, weight, checksum, flow, message, input")
	runs := fs.Int("runs", 100, "runs per point (seeds seed … seed+runs-1)")
	var seed seedFlag
	fs.Var(&seed, "seed", "first seed (random if not given; printed)")
	after := fs.Int("after", -1, "flip once the first node has sent this many messages (-1: 150, or 0 for rdb and for input flips of machines without input words)")
	maxMsgs := fs.Int("max-msgs", 0, "stop a run once a node has sent this many messages (0: 500, or 1000 with --flip-rate, as the thesis)")
	tau := fs.Float64("tau", 0, "checksum threshold of pflc and pfcc, relative (0: their default)")
	baseline := fs.String("baseline", "ps", "algorithm run without flips for the overhead (empty: none)")
	rate := fs.Float64("flip-rate", 0, "rate campaign: flip probability per word per message (the thesis used 1e-4)")
	loss := fs.String("loss", "", "loss sweep: comma-separated loss rates, e.g. 0,0.01,0.1,0.2,0.5")
	plotPath := fs.String("plot", "", "write the figure (error over bits, boxes over flips, or overhead over loss) to this .png or .svg")
	overheadPath := fs.String("plot-overhead", "", "bit sweep: write the message overhead against the baseline to this .png or .svg")
	workers := fs.Int("workers", 0, "parallel runs (0: all cores)")
	asJSON := fs.Bool("json", false, "print one JSON object instead of CSV")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkEps(*eps); err != nil {
		return err
	}
	if *runs < 1 || *nodes < 1 || *workers < 0 || *maxMsgs < 0 {
		return usagef("--runs, --nodes must be positive, --workers and --max-msgs not negative")
	}
	if !(*tau >= 0) {
		return usagef("--tau %v must be ≥ 0", *tau)
	}
	names := splitList(*algos)
	for _, a := range names {
		if _, err := algo.Lookup(a); err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
	}
	g, err := topology.Parse(*topo, *nodes)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	s := seed.value()
	fmt.Fprintf(out.Stderr, "sdc: seed %d (replay a run with --seed S --runs 1)\n", s)
	prog := newProgress(out, "sdc runs")
	common := campaign.Common{
		Algorithms: names, Overlay: g, Epsilon: *eps, Runs: *runs, Seed: s,
		MaxMsgs: *maxMsgs, Tau: *tau, Workers: *workers, Progress: prog.update,
	}
	rep := sdcReport{Algorithms: names, Topology: g.Name(), Nodes: g.Len(), Eps: *eps, Runs: *runs, Seed: s, Tau: *tau}
	start := time.Now()
	switch {
	case *loss != "":
		rates, err := parseFloats(*loss)
		if err != nil {
			return err
		}
		if common.MaxMsgs == 0 {
			common.MaxMsgs = 2000 // loss rates up to 50 % need room
		}
		c := campaign.Loss{Common: common, Rates: rates}
		rep.Mode, rep.MaxMsgs = "loss", common.MaxMsgs
		if rep.Loss, err = c.Run(ctx); err != nil {
			return err
		}
		if *plotPath != "" {
			title := fmt.Sprintf("message loss, %s %d nodes, eps %g, %d runs", g.Name(), g.Len(), *eps, *runs)
			if err := campaign.PlotLoss(rep.Loss, title, *plotPath); err != nil {
				return err
			}
			rep.Plots = append(rep.Plots, *plotPath)
		}
	case *rate > 0:
		ts, err := parseTargets(*targets)
		if err != nil {
			return err
		}
		if len(ts) != 1 {
			return usagef("--flip-rate takes one --target")
		}
		if common.MaxMsgs == 0 {
			common.MaxMsgs = 1000
		}
		c := campaign.Rates{Common: common, Rate: *rate, Target: ts[0], Lo: 0, Hi: 63}
		if lo, hi, ok := bitRange(*bits); ok {
			c.Lo, c.Hi = lo, hi
		} else {
			return usagef("--flip-rate takes one bit range, e.g. --bits 0-63")
		}
		rep.Mode, rep.MaxMsgs = "rate", common.MaxMsgs
		rep.Injector = fmt.Sprintf("rate(p=%g target=%s bits=%d-%d)", *rate, ts[0], c.Lo, c.Hi)
		if rep.RateRuns, err = c.Run(ctx); err != nil {
			return err
		}
		if *plotPath != "" {
			title := fmt.Sprintf("flip rate %g per word per message, %s %d nodes, eps %g", *rate, g.Name(), g.Len(), *eps)
			if err := campaign.PlotRates(rep.RateRuns, title, *plotPath); err != nil {
				return err
			}
			rep.Plots = append(rep.Plots, *plotPath)
		}
	default:
		ts, err := parseTargets(*targets)
		if err != nil {
			return err
		}
		bs, err := parseBitList(*bits)
		if err != nil {
			return err
		}
		if common.MaxMsgs == 0 {
			common.MaxMsgs = 500
		}
		sw := campaign.Sweep{Common: common, Bits: bs, Targets: ts, After: *after, Baseline: *baseline}
		rep.Mode, rep.MaxMsgs = "bits", common.MaxMsgs
		res, err := sw.Run(ctx)
		if err != nil {
			return err
		}
		rep.Points, rep.Baseline = res.Points, res.Baseline
		title := fmt.Sprintf("single flips, %s %d nodes, eps %g, %d runs per point", g.Name(), g.Len(), *eps, *runs)
		if *plotPath != "" {
			if err := campaign.PlotErrors(rep.Points, *eps, title, *plotPath); err != nil {
				return err
			}
			rep.Plots = append(rep.Plots, *plotPath)
		}
		if *overheadPath != "" {
			if res.Baseline == nil {
				return usagef("--plot-overhead needs a --baseline")
			}
			if err := campaign.PlotOverhead(rep.Points, *res.Baseline, title, *overheadPath); err != nil {
				return err
			}
			rep.Plots = append(rep.Plots, *overheadPath)
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	fmt.Fprintf(out.Stderr, "sdc: %.1f s\n", rep.Seconds)
	if *asJSON {
		return writeJSON(out.Stdout, rep)
	}
	return writeSDCCSV(out.Stdout, rep)
}

func writeSDCCSV(w io.Writer, rep sdcReport) error {
	cw := csv.NewWriter(w)
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	switch rep.Mode {
	case "loss":
		_ = cw.Write([]string{"algo", "loss", "runs", "converged_runs", "max_rel_error", "mean_msgs", "max_msgs", "overhead", "bound"})
		for _, p := range rep.Loss {
			_ = cw.Write([]string{p.Algo, f(p.Loss), fmt.Sprint(p.Runs), fmt.Sprint(p.ConvergedRuns), f(p.MaxRelError), f(p.MeanMsgs), f(p.MaxMsgs), f(p.Overhead), f(p.Bound)})
		}
	case "rate":
		_ = cw.Write([]string{"algo", "seed", "flips", "converged", "max_rel_error", "max_msgs", "mean_msgs"})
		for _, r := range rep.RateRuns {
			_ = cw.Write([]string{r.Algo, fmt.Sprint(r.Seed), fmt.Sprint(r.Flips), fmt.Sprint(r.Converged), f(r.MaxRelError), fmt.Sprint(r.MaxMsgs), f(r.MeanMsgs)})
		}
	default:
		_ = cw.Write([]string{"algo", "target", "bit", "after", "runs", "converged_runs", "flipped_runs", "max_rel_error", "mean_msgs", "max_msgs", "worst_seed"})
		if b := rep.Baseline; b != nil {
			_ = cw.Write([]string{b.Algo, "none", "-1", "-1", fmt.Sprint(b.Runs), fmt.Sprint(b.ConvergedRuns), "0", f(b.MaxRelError), f(b.MeanMsgs), f(b.MaxMsgs), fmt.Sprint(b.WorstSeed)})
		}
		for _, p := range rep.Points {
			_ = cw.Write([]string{p.Algo, p.Target, fmt.Sprint(p.Bit), fmt.Sprint(p.After), fmt.Sprint(p.Runs), fmt.Sprint(p.ConvergedRuns), fmt.Sprint(p.FlippedRuns), f(p.MaxRelError), f(p.MeanMsgs), f(p.MaxMsgs), fmt.Sprint(p.WorstSeed)})
		}
	}
	cw.Flush()
	return cw.Error()
}

func parseTargets(s string) ([]sdc.Target, error) {
	var out []sdc.Target
	for _, f := range splitList(s) {
		t, err := sdc.ParseTarget(f)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errUsage, err)
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, usagef("--target is empty")
	}
	return out, nil
}

// parseBits reads "0-63" or "3,20-22".
func parseBitList(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		lo, hi, ok := bitRange(f)
		if !ok {
			return nil, usagef("--bits %q: want bit positions 0-63, e.g. 0-63 or 20,52-62", f)
		}
		for b := lo; b <= hi; b++ {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return nil, usagef("--bits is empty")
	}
	return out, nil
}

func parseFloats(s string) ([]float64, error) {
	var out []float64
	for _, f := range splitList(s) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, usagef("--loss %q: want numbers", f)
		}
		if err := checkProb("loss", v, 1); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
