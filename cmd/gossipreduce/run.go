package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/livegroup"
	"github.com/gossipreduce/gossipreduce/transport"
)

func init() {
	register("run", "a live all-reduce: N members in this process over NATS (embedded server unless --nats)", liveFamily, func() command { return &runCmd{} })
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

// runCmd is the run verb: --runs operations, one after the other, each
// of a fresh group of --nodes members in this process.
type runCmd struct {
	algo   listFlag[string]
	group  groupFlags
	faults faultFlags
	timing liveTiming
	nats   natsFlags
	seed   seedFlag
	comps  int
	runs   int
	idle   time.Duration
	tmpl   aggregate.Config // every run's members', checked
	// --elastic: a group of members joined by name, with churn.
	elastic  bool
	churn    float64
	duration time.Duration
}

func (c *runCmd) flags(fs *flag.FlagSet) {
	d := familyDefaults[liveFamily]
	registerAlgo(fs, &c.algo, "run", d.algo)
	c.group.register(fs, d)
	registerComponents(fs, &c.comps)
	registerRuns(fs, &c.runs, 1)
	c.faults.registerLoss(fs, "run")
	c.faults.registerCrash(fs, true)
	c.faults.registerFlips(fs, "run", d)
	c.timing.register(fs, true)
	fs.DurationVar(&c.idle, "idle", 0, "a member that sent nothing for this long takes a gossip step on its own (0: the library default, 4 ms or 120 µs × the members in this process / GOMAXPROCS if longer)")
	registerSeed(fs, &c.seed)
	c.nats.register(fs, "")
	fs.BoolVar(&c.elastic, "elastic", false, "members joined by name (an elastic group of --nodes to start with): rounds of one operation each, "+
		"members joining, leaving and dying between them (--churn), every result checked against the exact average of the inputs of the view it names")
	fs.Float64Var(&c.churn, "churn", 0.3, "with --elastic: the probability, after each round, of one change (a member joins, leaves or dies; the group stays between half and twice --nodes)")
	fs.DurationVar(&c.duration, "duration", 0, "with --elastic: run rounds for this long instead of --runs rounds")
}

func (c *runCmd) check() error {
	err := firstError(c.nats.check(), c.group.check(), checkCount("runs", c.runs, 1), checkCount("components", c.comps, 1),
		c.faults.check(c.group.nodes), c.timing.check())
	if err != nil {
		return err
	}
	c.tmpl = aggregate.Config{Prefix: c.nats.prefix, Topology: c.group.topology, Algorithm: c.algo.one(), Epsilon: c.group.eps,
		Suspect: c.timing.suspect, Idle: c.idle}
	if c.elastic {
		switch {
		case c.faults.crash.v != 0 || c.faults.flipRate != 0 || c.faults.flipBit.given:
			return usagef("--elastic takes no --crash or flips: its churn kills members (--churn)")
		case c.churn < 0 || c.churn > 1:
			return usagef("--churn %v must be in [0, 1]", c.churn)
		case c.duration < 0:
			return usagef("--duration %v must be ≥ 0", c.duration)
		}
		probe := c.tmpl
		probe.Group, probe.Name = "check", "check"
		if err := probe.Validate(); err != nil {
			return usagef("%v", err)
		}
		return nil
	}
	if c.churn != 0.3 || c.duration != 0 {
		return usagef("--churn and --duration need --elastic")
	}
	// Validate the configuration once, before starting anything.
	probe := c.tmpl
	probe.Group, probe.Nodes = "check", c.group.nodes
	if err := probe.Validate(); err != nil {
		return usagef("%v", err)
	}
	return nil
}

func (c *runCmd) exec(ctx context.Context, out *stdio) error {
	s := c.seed.value()
	ws := newWarnings("run", out)
	if r := c.faults.requested(); len(r) > 0 {
		ws.warnPushSum(c.algo.one(), r)
	}
	if c.nats.url != "" {
		ws.warnNoKey(&c.nats, subjectPrefix(c.nats.prefix)+".>")
	}
	if c.elastic {
		return c.execElastic(ctx, out, ws)
	}
	net, err := c.nats.openNet(ctx, transport.Options{Loss: c.faults.loss.one(), Seed: s, Buffer: 8192})
	if err != nil {
		return err
	}
	defer net.Close()

	t := newRunTally(runOutput{Algo: c.algo.one(), Topology: c.group.topology, Nodes: c.group.nodes, Runs: c.runs,
		Seed: s, NATS: net.url, Warnings: ws.list})
	prog := newProgress(out, "run")
	for i := range c.runs {
		if !c.runOnce(ctx, net.tr, s, i, t) {
			break
		}
		if c.runs > 1 {
			prog.update(i+1, c.runs)
		}
		if ctx.Err() != nil && i+1 < c.runs {
			t.stopErr = fmt.Errorf("stopped after %d of %d runs: %w", i+1, c.runs, ctx.Err())
			break
		}
	}
	o, err := t.finish(net.tr.Stats(), c.group.eps)
	if len(c.faults.flipBit.vals) > 0 && c.faults.flipBit.one() >= 0 && o.Flips == 0 && len(o.PerRun) > 0 {
		ws.add("no bit was flipped: %s has no word that --flip-target %s selects, or no member sent --flip-after %d messages",
			c.algo.one(), c.faults.flipTarget.one(), c.faults.flipAfter)
		o.Warnings = ws.list
	}
	if !out.json {
		printRun(out, o)
		return err
	}
	return errors.Join(err, writeJSON(out.Stdout, sanitizeRun(o)))
}

// runOnce runs operation i (seed s+i) on a fresh group and adds it to t;
// false when the group could not be set up, which ends the runs.
func (c *runCmd) runOnce(ctx context.Context, tr transport.Transport, s uint64, i int, t *runTally) bool {
	rs := s + uint64(i)
	cfg := c.tmpl
	cfg.Group = fmt.Sprintf("run-%d-%d", s, i)
	cfg.Seed = rs
	res, err := runGroup(ctx, tr, cfg, drawInputs(c.group.nodes, c.comps, rs), c.faultsOf(rs), c.timing.timeout)
	if err != nil {
		t.setupFailed(i, rs, err)
		return false
	}
	t.add(i, rs, res, c.group.eps)
	return true
}

// faultsOf draws the faults of the run of seed rs: the crashing members
// and the member of the single flip.
func (c *runCmd) faultsOf(rs uint64) livegroup.Faults {
	n, ff := c.group.nodes, &c.faults
	r := rand.New(rand.NewPCG(rs, 0xfa17))
	f := livegroup.Faults{FlipBit: -1, FlipTarget: ff.flipTarget.one(), FlipAfter: ff.flipAfter, FlipRate: ff.flipRate, CrashAfter: ff.crashAfter}
	if len(ff.flipBit.vals) > 0 {
		f.FlipBit = ff.flipBit.one()
	}
	if ff.crashRoot {
		f.Crash = append(f.Crash, 0)
	}
	for _, v := range r.Perm(n - 1)[:ff.crash.count(n)] {
		f.Crash = append(f.Crash, gossip.NodeID(v+1))
	}
	f.FlipNode = gossip.NodeID(r.IntN(n))
	return f
}

// runTally sums the runs of the run verb into its output.
type runTally struct {
	o         runOutput
	secs      []float64
	messages  int
	worst     float64
	identical bool
	liveMin   int
	covered   bool // a run had a result
	absent    map[gossip.NodeID]bool
	firstErr  error // of the first failed run
	stopErr   error // what stopped the runs early
}

func newRunTally(o runOutput) *runTally {
	return &runTally{o: o, identical: true, liveMin: math.MaxInt, absent: map[gossip.NodeID]bool{}}
}

// setupFailed records run i, whose group could not be set up: a failed
// run, and the last.
func (t *runTally) setupFailed(i int, rs uint64, err error) {
	t.o.Failed++
	t.o.PerRun = append(t.o.PerRun, runCoverage{Run: i, Seed: rs, Error: err.Error()})
	t.failed(i, rs, err)
	if i+1 < t.o.Runs {
		t.stopErr = fmt.Errorf("stopped after %d of %d runs", i+1, t.o.Runs)
	}
}

func (t *runTally) failed(i int, rs uint64, err error) {
	if t.firstErr == nil {
		t.firstErr = fmt.Errorf("run %d (seed %d): %w", i, rs, err)
	}
}

// add records the outcome of run i.
func (t *runTally) add(i int, rs uint64, res *livegroup.Outcome, eps float64) {
	v := res.Check()
	pr := runCoverage{Run: i, Seed: rs}
	if v.Err != nil {
		t.o.Failed++
		pr.Error = v.Err.Error()
		t.failed(i, rs, v.Err)
	}
	if v.Results > 0 {
		pr.Live, pr.Absent = &v.Live, nonNilIDs(v.Absent)
		t.cover(v, eps)
	}
	t.o.PerRun = append(t.o.PerRun, pr)
	t.messages += v.Total
	t.o.MaxMsgs = max(t.o.MaxMsgs, v.Most)
	t.o.Flips += res.Flips
	t.o.Excluded += res.Excluded
	t.secs = append(t.secs, res.Seconds)
	t.o.SecondsMax = max(t.o.SecondsMax, res.Seconds)
}

// cover records a run that had a result: whom it covers, its error and
// its value.
func (t *runTally) cover(v livegroup.Verdict, eps float64) {
	// Until now every run with a result covered the same members (else
	// CoverageDiffers is set already): liveMin and absent are theirs.
	if t.covered && (v.Live != t.liveMin || len(v.Absent) != len(t.absent)) {
		t.o.CoverageDiffers = true
	}
	for _, a := range v.Absent {
		if t.covered && !t.absent[a] {
			t.o.CoverageDiffers = true
		}
		t.absent[a] = true
	}
	t.liveMin, t.covered = min(t.liveMin, v.Live), true
	t.identical = t.identical && v.Identical
	if v.Worst > t.worst || math.IsNaN(v.Worst) {
		t.worst = v.Worst
	}
	if v.Err == nil && !(v.Worst <= eps) {
		t.o.WorseThanEps++
	}
	t.o.Result, t.o.Exact = v.Value, v.Exact
}

// finish completes the output and returns the error the verb ends with,
// which the output carries too. The figures that need a result stay nil
// when no run had one.
func (t *runTally) finish(st transport.Stats, eps float64) (runOutput, error) {
	o := t.o
	o.dropCounts = dropsOf(st)
	if done := len(o.PerRun); done > 0 {
		o.Messages = float64(t.messages) / float64(done)
	}
	o.Seconds = median(t.secs)
	if t.covered {
		o.MaxRelError, o.Identical = &t.worst, &t.identical
		o.Live = &t.liveMin
		o.Absent = []gossip.NodeID{}
		for a := range t.absent {
			o.Absent = append(o.Absent, a)
		}
		slices.Sort(o.Absent)
	}
	var err error
	switch {
	case o.Failed > 0:
		err = fmt.Errorf("%d of %d runs failed; first: %w", o.Failed, o.Runs, t.firstErr)
	case o.WorseThanEps > 0:
		err = fmt.Errorf("%d of %d runs returned a result worse than eps %g", o.WorseThanEps, o.Runs, eps)
	}
	if t.stopErr != nil {
		if err != nil {
			err = fmt.Errorf("%w; %w", t.stopErr, err)
		} else {
			err = t.stopErr
		}
	}
	if err != nil {
		o.Error = err.Error()
	}
	return o, err
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
		fmt.Fprintf(w, "  result          %s\n", brief(o.Result))
		fmt.Fprintf(w, "  exact           %s (of the members the result covers)\n", brief(o.Exact))
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

// briefComponents is how many components a text report shows of a vector;
// the JSON has them all.
const briefComponents = 8

// brief formats v for a text report: whole when short, else its first
// components and its length.
func brief(v []float64) string {
	if len(v) <= 2*briefComponents {
		return fmt.Sprint(v)
	}
	s := fmt.Sprint(v[:briefComponents])
	return fmt.Sprintf("%s … %d components (--json has all)]", s[:len(s)-1], len(v))
}
