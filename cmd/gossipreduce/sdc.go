package main

import (
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/gossipreduce/gossipreduce/sdc/campaign"
	"github.com/gossipreduce/gossipreduce/topology"
)

func init() {
	register("sdc", "bit-flip and message-loss campaigns (thesis chapter 4) with CSV/JSON and plots", simFamily, func() command { return &sdcCmd{} })
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

// sdcCmd is the sdc verb: a campaign over the listed algorithms, of
// single flips (a sweep over --flip-bit and --flip-target), of a flip
// rate (--flip-rate), or of message loss (--loss).
type sdcCmd struct {
	algo                             listFlag[string]
	group                            groupFlags
	faults                           faultFlags
	seed                             seedFlag
	runs, maxMsgs, workers           int
	tau                              float64
	baseline, plotPath, overheadPath string
	g                                topology.Graph // the overlay, built by check
}

func (c *sdcCmd) flags(fs *flag.FlagSet) {
	d := familyDefaults[simFamily]
	registerAlgo(fs, &c.algo, "sdc", d.algo)
	c.group.register(fs, d)
	c.faults.registerLoss(fs, "sdc")
	c.faults.registerFlips(fs, "sdc", d)
	deprecate(fs, "bits", "flip-bit")
	deprecate(fs, "target", "flip-target")
	deprecate(fs, "after", "flip-after")
	registerRuns(fs, &c.runs, 100)
	registerSeed(fs, &c.seed)
	registerMaxMsgs(fs, &c.maxMsgs)
	registerTau(fs, &c.tau)
	registerWorkers(fs, &c.workers)
	fs.StringVar(&c.baseline, "baseline", "ps", "algorithm run without flips for the overhead (empty: none)")
	fs.StringVar(&c.plotPath, "plot", "", "write the figure (error over bits, boxes over flips, or overhead over loss) to this .png or .svg")
	fs.StringVar(&c.overheadPath, "plot-overhead", "", "bit sweep: write the message overhead against the baseline to this .png or .svg")
}

func (c *sdcCmd) check() error {
	err := firstError(c.group.check(), checkCount("runs", c.runs, 1), checkCount("workers", c.workers, 0), checkCount("max-msgs", c.maxMsgs, 0),
		c.faults.check(c.group.nodes))
	if err != nil {
		return err
	}
	if !(c.tau >= 0) {
		return usagef("--tau %v must be ≥ 0", c.tau)
	}
	if c.g, err = c.group.overlay(c.group.nodes); err != nil {
		return err
	}
	// A figure that cannot be saved fails now, not after the campaign.
	for _, p := range []struct{ flag, path string }{{"plot", c.plotPath}, {"plot-overhead", c.overheadPath}} {
		if p.path == "" {
			continue
		}
		if err := campaign.CheckPath(p.path); err != nil {
			return usageErr(fmt.Errorf("--%s: %w", p.flag, err))
		}
	}
	switch c.mode() {
	case "rate":
		if len(c.faults.flipTarget.vals) != 1 {
			return usagef("--flip-rate takes one --flip-target")
		}
		if _, _, ok := bitRange(c.faults.flipBit.text); !ok {
			return usagef("--flip-rate takes one bit range, e.g. --flip-bit 0-63")
		}
	case "bits":
		if c.overheadPath != "" && c.baseline == "" {
			return usagef("--plot-overhead needs a --baseline")
		}
	}
	return nil
}

// mode is the campaign the flags ask for: loss, rate or bits.
func (c *sdcCmd) mode() string {
	switch {
	case c.faults.loss.given:
		return "loss"
	case c.faults.flipRate > 0:
		return "rate"
	}
	return "bits"
}

func (c *sdcCmd) exec(ctx context.Context, out *stdio) error {
	s := c.seed.value()
	fmt.Fprintf(out.Stderr, "sdc: seed %d (replay a run with --seed S --runs 1)\n", s)
	prog := newProgress(out, "sdc runs")
	common := campaign.Common{
		Algorithms: c.algo.vals, Overlay: c.g, Epsilon: c.group.eps, Runs: c.runs, Seed: s,
		MaxMsgs: c.maxMsgs, Tau: c.tau, Workers: c.workers, Progress: prog.update,
	}
	rep := sdcReport{Mode: c.mode(), Algorithms: c.algo.vals, Topology: c.g.Name(), Nodes: c.g.Len(), Eps: c.group.eps, Runs: c.runs, Seed: s, Tau: c.tau}
	start := time.Now()
	var err error
	switch rep.Mode {
	case "loss":
		err = c.lossSweep(ctx, common, &rep)
	case "rate":
		err = c.rateCampaign(ctx, common, &rep)
	default:
		err = c.bitSweep(ctx, common, &rep)
	}
	if err != nil {
		return err
	}
	rep.Seconds = time.Since(start).Seconds()
	fmt.Fprintf(out.Stderr, "sdc: %.1f s\n", rep.Seconds)
	return out.print(rep)
}

// lossSweep runs the loss campaign into rep.
func (c *sdcCmd) lossSweep(ctx context.Context, common campaign.Common, rep *sdcReport) error {
	if common.MaxMsgs == 0 {
		common.MaxMsgs = 2000 // loss rates up to 50 % need room
	}
	rep.MaxMsgs = common.MaxMsgs
	sweep := campaign.Loss{Common: common, Rates: c.faults.loss.vals}
	var err error
	if rep.Loss, err = sweep.Run(ctx); err != nil {
		return err
	}
	title := fmt.Sprintf("message loss, %s %d nodes, eps %g, %d runs", c.g.Name(), c.g.Len(), c.group.eps, c.runs)
	return c.plot(rep, c.plotPath, func(path string) error { return campaign.PlotLoss(rep.Loss, title, path) })
}

// rateCampaign runs the flip rate campaign into rep.
func (c *sdcCmd) rateCampaign(ctx context.Context, common campaign.Common, rep *sdcReport) error {
	if common.MaxMsgs == 0 {
		common.MaxMsgs = 1000
	}
	target, rate := c.faults.flipTarget.one(), c.faults.flipRate
	lo, hi, _ := bitRange(c.faults.flipBit.text)
	rep.MaxMsgs = common.MaxMsgs
	rep.Injector = fmt.Sprintf("rate(p=%g target=%s bits=%d-%d)", rate, target, lo, hi)
	rates := campaign.Rates{Common: common, Rate: rate, Target: target, Lo: lo, Hi: hi}
	var err error
	if rep.RateRuns, err = rates.Run(ctx); err != nil {
		return err
	}
	title := fmt.Sprintf("flip rate %g per word per message, %s %d nodes, eps %g", rate, c.g.Name(), c.g.Len(), c.group.eps)
	return c.plot(rep, c.plotPath, func(path string) error { return campaign.PlotRates(rep.RateRuns, title, path) })
}

// bitSweep runs the single flips of every bit and target into rep.
func (c *sdcCmd) bitSweep(ctx context.Context, common campaign.Common, rep *sdcReport) error {
	if common.MaxMsgs == 0 {
		common.MaxMsgs = 500
	}
	rep.MaxMsgs = common.MaxMsgs
	sw := campaign.Sweep{Common: common, Bits: c.faults.flipBit.vals, Targets: c.faults.flipTarget.vals, After: c.faults.flipAfter, Baseline: c.baseline}
	res, err := sw.Run(ctx)
	if err != nil {
		return err
	}
	rep.Points, rep.Baseline = res.Points, res.Baseline
	title := fmt.Sprintf("single flips, %s %d nodes, eps %g, %d runs per point", c.g.Name(), c.g.Len(), c.group.eps, c.runs)
	if err := c.plot(rep, c.plotPath, func(path string) error { return campaign.PlotErrors(rep.Points, c.group.eps, title, path) }); err != nil {
		return err
	}
	if res.Baseline == nil {
		return nil
	}
	return c.plot(rep, c.overheadPath, func(path string) error { return campaign.PlotOverhead(rep.Points, *res.Baseline, title, path) })
}

// plot draws a figure to path, if one is asked for, and lists it in rep.
func (c *sdcCmd) plot(rep *sdcReport, path string, draw func(string) error) error {
	if path == "" {
		return nil
	}
	if err := draw(path); err != nil {
		return err
	}
	rep.Plots = append(rep.Plots, path)
	return nil
}

func (rep sdcReport) text(w io.Writer) error { return writeSDCCSV(w, rep) }

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
