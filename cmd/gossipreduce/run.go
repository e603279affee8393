package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/algo"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/livegroup"
	"github.com/gossipreduce/gossipreduce/sdc"
	"github.com/gossipreduce/gossipreduce/transport"
)

func init() {
	registerLegacy("run", "a live all-reduce: N members in this process over NATS (embedded server unless --nats)", runLive)
}

// runOutput is the JSON of the run verb (field names are a contract).
// Figures that need a result (result, exact, max_rel_error, identical,
// live, absent) are null when no run produced one.
type runOutput struct {
	Algo     string `json:"algo"`
	Topology string `json:"topology"`
	Nodes    int    `json:"nodes"`
	Runs     int    `json:"runs"`
	// Result is the last result; Exact the exact aggregate of the inputs
	// of the members it covers, and MaxRelError the worst error of any
	// result against that of its run.
	Result      []float64 `json:"result"`
	Exact       []float64 `json:"exact"`
	MaxRelError *float64  `json:"max_rel_error"`
	// Identical: in every run, the members that returned a result
	// returned the same bits.
	Identical *bool `json:"identical"`
	// Messages is the mean over runs of all messages sent by all members;
	// MaxMsgs the most one member sent in any run.
	Messages float64 `json:"messages"`
	MaxMsgs  int     `json:"max_msgs"`
	// Seconds is the median over runs of the time until every live member
	// had its result; SecondsMax the slowest run.
	Seconds    float64 `json:"seconds"`
	SecondsMax float64 `json:"seconds_max"`
	Failed     int     `json:"failed_runs"`
	// WorseThanEps counts runs that returned a result (no error) further
	// than eps from the exact aggregate: a false early termination.
	WorseThanEps int `json:"worse_than_eps"`
	// Live and Absent are what the results say they cover (Result.Live
	// and Result.Absent). When runs covered different members
	// (CoverageDiffers), Live is the smallest and Absent the union over
	// the runs; PerRun has each run's.
	Live            *int            `json:"live"`
	Absent          []gossip.NodeID `json:"absent"`
	CoverageDiffers bool            `json:"coverage_differs"`
	PerRun          []runCoverage   `json:"per_run"`
	Flips           int             `json:"flips"`
	// Excluded is the neighbours declared dead or absent, summed over the
	// members and runs (crashed members are declared dead by each of their
	// neighbours; more than that are false deaths).
	Excluded int `json:"excluded"`
	// The messages the transport dropped on arrival, over all runs;
	// overflow means a full receive buffer: the group was sending faster
	// than it could read.
	dropCounts
	Seed     uint64   `json:"seed"`
	NATS     string   `json:"nats"`
	Warnings []string `json:"warnings"`
	Error    string   `json:"error,omitempty"`
}

// runCoverage is one run's coverage: null live and absent when no member
// returned a result.
type runCoverage struct {
	Run    int             `json:"run"`
	Seed   uint64          `json:"seed"`
	Live   *int            `json:"live"`
	Absent []gossip.NodeID `json:"absent"`
	Error  string          `json:"error,omitempty"`
}

func runLive(ctx context.Context, args []string, out *stdio) error {
	fs := newFlags("run", out)
	var seed seedFlag
	var (
		algoName   = fs.String("algo", "pfcc", "algorithm: "+strings.Join(algo.Names(), ", "))
		topo       = fs.String("topology", "complete", "overlay (see gossipreduce sim -h)")
		nodes      = fs.Int("nodes", 16, "number of members N")
		eps        = fs.Float64("eps", 1e-9, "target accuracy ε of the result")
		comps      = fs.Int("components", 1, "vector length of each member's value")
		runs       = fs.Int("runs", 1, "operations to run, one after the other, each on a fresh group")
		natsURL    = fs.String("nats", "", "NATS server URL(s), comma separated (default: start an embedded server)")
		loss       = fs.Float64("loss", 0, "probability that a message is lost at the transport")
		crash      = fs.Int("crash", 0, "members (not the root) that crash mid-operation")
		crashRoot  = fs.Bool("crash-root", false, "the root (member 0) crashes mid-operation")
		crashAfter = fs.Int("crash-after", 10, "a crashing member crashes once it has sent this many messages")
		flipBit    = fs.Int("flip-bit", -1, "flip this bit (0-63) once per run, at a random member (-1: none)")
		flipTarget = fs.String("flip-target", "flow", "what flips hit: value, weight, checksum, flow, message, input")
		flipAfter  = fs.Int("flip-after", 8, "the single flip happens once its member has sent this many messages")
		flipRate   = fs.Float64("flip-rate", 0, "flip probability per word per message at every member (bits 0-63)")
		timeout    = fs.Duration("timeout", 30*time.Second, "give up a run, joining the group included, after this long")
		suspect    = fs.Duration("suspect", time.Second, "silence after which a member is declared dead")
		idle       = fs.Duration("idle", 0, "a member that sent nothing for this long takes a gossip step on its own (0: 4 ms, longer for many members per core: 120 µs × nodes / GOMAXPROCS)")
		asJSON     = fs.Bool("json", false, "print one JSON object")
	)
	fs.Var(&seed, "seed", "random seed of inputs, faults and gossip (default: drawn at random and printed)")
	nf := addNATSFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := nf.check(); err != nil {
		return err
	}
	if err := checkEps(*eps); err != nil {
		return err
	}
	switch {
	case *nodes < 1:
		return usagef("--nodes %d must be at least 1", *nodes)
	case *runs < 1:
		return usagef("--runs %d must be at least 1", *runs)
	case *comps < 1:
		return usagef("--components %d must be at least 1", *comps)
	case *crash < 0 || *crash+boolInt(*crashRoot) >= *nodes:
		return usagef("--crash %d and --crash-root leave fewer than one member", *crash)
	case *flipBit < -1 || *flipBit > 63:
		return usagef("--flip-bit %d must be in 0…63 (or -1)", *flipBit)
	case *timeout <= 0 || *suspect <= 0:
		return usagef("--timeout and --suspect must be positive")
	}
	if err := checkProb("loss", *loss, 1); err != nil {
		return err
	}
	if err := checkProb("flip-rate", *flipRate, 1); err != nil {
		return err
	}
	target, err := sdc.ParseTarget(*flipTarget)
	if err != nil {
		return usagef("%v", err)
	}
	tmpl := aggregate.Config{Prefix: nf.prefix, Topology: *topo, Algorithm: *algoName, Epsilon: *eps, Suspect: *suspect, Idle: *idle}
	// Validate the configuration once, before starting anything.
	probe := tmpl
	probe.Group, probe.Nodes = "check", *nodes
	if err := probe.Validate(); err != nil {
		return usagef("%v", err)
	}
	s := seed.value()
	ws := newWarnings("run", out)
	var requested []string
	if *loss > 0 {
		requested = append(requested, fmt.Sprintf("--loss %v", *loss))
	}
	if *crash > 0 {
		requested = append(requested, fmt.Sprintf("--crash %d", *crash))
	}
	if *crashRoot {
		requested = append(requested, "--crash-root")
	}
	if *flipBit >= 0 {
		requested = append(requested, fmt.Sprintf("--flip-bit %d", *flipBit))
	}
	if *flipRate > 0 {
		requested = append(requested, fmt.Sprintf("--flip-rate %v", *flipRate))
	}
	if len(requested) > 0 {
		ws.warnPushSum(*algoName, requested)
	}
	if *natsURL != "" {
		ws.warnNoKey(nf, subjectPrefix(nf.prefix)+".>")
	}
	net, err := nf.openNet(ctx, *natsURL, transport.Options{Loss: *loss, Seed: s, Buffer: 8192})
	if err != nil {
		return err
	}
	defer net.Close()

	o := runOutput{Algo: *algoName, Topology: *topo, Nodes: *nodes, Runs: *runs, Seed: s, NATS: net.url, Warnings: ws.list}
	var (
		secs      []float64
		messages  int
		worst     float64
		identical = true
		liveMin   = math.MaxInt
		covered   bool // a run had a result
		absent    = map[gossip.NodeID]bool{}
		firstErr  error // of the first failed run
		stopErr   error // what stopped the runs early
	)
	prog := newProgress(out, "run")
	for i := range *runs {
		rs := s + uint64(i)
		r := rand.New(rand.NewPCG(rs, 0xfa17))
		var f livegroup.Faults
		f.FlipBit, f.FlipTarget, f.FlipAfter, f.FlipRate = *flipBit, target, *flipAfter, *flipRate
		f.CrashAfter = *crashAfter
		if *crashRoot {
			f.Crash = append(f.Crash, 0)
		}
		for _, v := range r.Perm(*nodes - 1)[:*crash] {
			f.Crash = append(f.Crash, gossip.NodeID(v+1))
		}
		f.FlipNode = gossip.NodeID(r.IntN(*nodes))
		cfg := tmpl
		cfg.Group = fmt.Sprintf("run-%d-%d", s, i)
		cfg.Seed = rs
		res, err := runGroup(ctx, net.tr, cfg, drawInputs(*nodes, *comps, rs), f, *timeout)
		if err != nil {
			// The group could not be set up: a failed run, and the last.
			o.Failed++
			o.PerRun = append(o.PerRun, runCoverage{Run: i, Seed: rs, Error: err.Error()})
			if firstErr == nil {
				firstErr = fmt.Errorf("run %d (seed %d): %w", i, rs, err)
			}
			if i+1 < *runs {
				stopErr = fmt.Errorf("stopped after %d of %d runs", i+1, *runs)
			}
			break
		}
		v := res.Check()
		pr := runCoverage{Run: i, Seed: rs}
		if v.Err != nil {
			o.Failed++
			pr.Error = v.Err.Error()
			if firstErr == nil {
				firstErr = fmt.Errorf("run %d (seed %d): %w", i, rs, v.Err)
			}
		}
		if v.Results > 0 {
			pr.Live, pr.Absent = &v.Live, nonNilIDs(v.Absent)
			// Until now every run with a result covered the same members
			// (else CoverageDiffers is set already): liveMin and absent
			// are theirs.
			if covered && (v.Live != liveMin || len(v.Absent) != len(absent)) {
				o.CoverageDiffers = true
			}
			for _, a := range v.Absent {
				if covered && !absent[a] {
					o.CoverageDiffers = true
				}
				absent[a] = true
			}
			liveMin, covered = min(liveMin, v.Live), true
			identical = identical && v.Identical
			if v.Worst > worst || math.IsNaN(v.Worst) {
				worst = v.Worst
			}
			if v.Err == nil && !(v.Worst <= *eps) {
				o.WorseThanEps++
			}
			o.Result, o.Exact = v.Value, v.Exact
		}
		o.PerRun = append(o.PerRun, pr)
		messages += v.Total
		o.MaxMsgs = max(o.MaxMsgs, v.Most)
		o.Flips += res.Flips
		o.Excluded += res.Excluded
		secs = append(secs, res.Seconds)
		o.SecondsMax = max(o.SecondsMax, res.Seconds)
		if *runs > 1 {
			prog.update(i+1, *runs)
		}
		if ctx.Err() != nil && i+1 < *runs {
			stopErr = fmt.Errorf("stopped after %d of %d runs: %w", i+1, *runs, ctx.Err())
			break
		}
	}
	o.dropCounts = dropsOf(net.tr.Stats())
	if done := len(o.PerRun); done > 0 {
		o.Messages = float64(messages) / float64(done)
	}
	o.Seconds = median(secs)
	if covered {
		o.MaxRelError, o.Identical = &worst, &identical
		o.Live = &liveMin
		o.Absent = []gossip.NodeID{}
		for a := range absent {
			o.Absent = append(o.Absent, a)
		}
		slices.Sort(o.Absent)
	}
	// The error the command ends with, also in the output.
	err = nil
	switch {
	case o.Failed > 0:
		err = fmt.Errorf("%d of %d runs failed; first: %w", o.Failed, o.Runs, firstErr)
	case o.WorseThanEps > 0:
		err = fmt.Errorf("%d of %d runs returned a result worse than eps %g", o.WorseThanEps, o.Runs, *eps)
	}
	if stopErr != nil {
		if err != nil {
			err = fmt.Errorf("%w; %w", stopErr, err)
		} else {
			err = stopErr
		}
	}
	if err != nil {
		o.Error = err.Error()
	}
	if *asJSON {
		if werr := writeJSON(out.Stdout, sanitizeRun(o)); werr != nil && err == nil {
			err = werr
		}
	} else {
		printRun(out, o)
	}
	return err
}

// sanitizeRun replaces an infinite error (JSON has no Inf) by MaxFloat64.
func sanitizeRun(o runOutput) runOutput {
	if e := o.MaxRelError; e != nil && (math.IsInf(*e, 0) || math.IsNaN(*e)) {
		o.MaxRelError = new(math.MaxFloat64)
	}
	return o
}

func printRun(out *stdio, o runOutput) {
	w := out.Stdout
	fmt.Fprintf(w, "live all-reduce: %s on %s, %d members, %d run(s), seed %d, NATS %s\n", o.Algo, o.Topology, o.Nodes, o.Runs, o.Seed, o.NATS)
	if o.Error != "" {
		fmt.Fprintf(w, "  error           %s\n", o.Error)
	}
	if o.Live == nil {
		fmt.Fprintf(w, "  result          none: no member returned one\n")
	} else {
		fmt.Fprintf(w, "  result          %v\n", o.Result)
		fmt.Fprintf(w, "  exact           %v (of the members the result covers)\n", o.Exact)
		fmt.Fprintf(w, "  max rel error   %.3g\n", *o.MaxRelError)
		fmt.Fprintf(w, "  identical       %v (the members that returned a result returned the same bits)\n", *o.Identical)
		fmt.Fprintf(w, "  worse than eps  %d of %d runs\n", o.WorseThanEps, o.Runs)
		printCoverage(w, o)
	}
	fmt.Fprintf(w, "  messages        %.0f per run (%.1f per member), most by one member %d\n", o.Messages, o.Messages/float64(o.Nodes), o.MaxMsgs)
	fmt.Fprintf(w, "  time            %.4f s median, %.4f s slowest\n", o.Seconds, o.SecondsMax)
	fmt.Fprintf(w, "  dropped         %v\n", o.dropCounts)
	if o.Flips > 0 {
		fmt.Fprintf(w, "  bit flips       %d\n", o.Flips)
	}
	if o.Excluded > 0 {
		fmt.Fprintf(w, "  excluded        %d neighbours declared dead\n", o.Excluded)
	}
}

// printCoverage prints the members the results cover: one line when every
// run covered the same, else the range, the union of the absent and each
// run's (up to a screenful).
func printCoverage(w io.Writer, o runOutput) {
	if !o.CoverageDiffers {
		fmt.Fprintf(w, "  covers          %s\n", livegroup.Coverage(*o.Live, o.Nodes, o.Absent))
		return
	}
	most := *o.Live
	for _, r := range o.PerRun {
		if r.Live != nil {
			most = max(most, *r.Live)
		}
	}
	live := fmt.Sprintf("%d", most)
	if most != *o.Live {
		live = fmt.Sprintf("%d to %d", *o.Live, most)
	}
	fmt.Fprintf(w, "  covers          runs differ: inputs of %s of %d members; absent in some run: %s\n", live, o.Nodes, livegroup.IDList(o.Absent))
	const lines = 10
	shown := 0
	for _, r := range o.PerRun {
		if r.Live == nil {
			continue
		}
		if shown == lines {
			fmt.Fprintf(w, "                  … (every run in --json)\n")
			break
		}
		fmt.Fprintf(w, "    run %-4d      %s\n", r.Run, livegroup.Coverage(*r.Live, o.Nodes, r.Absent))
		shown++
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
