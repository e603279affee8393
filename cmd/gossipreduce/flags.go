package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gossipreduce/gossipreduce/algo"
	"github.com/gossipreduce/gossipreduce/sdc"
	"github.com/gossipreduce/gossipreduce/topology"
)

// The shared flags. An idea that several verbs take has one name, one help
// text and one validation wherever it appears, registered by the functions
// and groups below; only its default depends on the verb's family (see
// familyDefaults), and the few verbs whose default differs from their
// family's are listed in flagDifferences, which TestOneDefaultPerIdea
// holds the flag sets to.

// family is a set of verbs that share defaults.
type family int

const (
	// liveFamily: run, node, bench, chaos: members over NATS (or memory)
	// in this process or beside it.
	liveFamily family = iota
	// simFamily: sim, sdc, spectral: the thesis's simulations and models.
	simFamily
	// bcastFamily: bcast and its sub-verbs: the broadcast papers' LogP
	// simulations.
	bcastFamily
	// serverFamily: server, which only serves NATS.
	serverFamily
)

func (f family) String() string {
	return [...]string{"live", "simulated", "broadcast", "server"}[f]
}

// groupDefaults are the defaults of the group flags in one family.
type groupDefaults struct {
	algo, topology string
	nodes          int
	eps            float64
	// The single flip of run, and the bit sweep of sdc.
	flipBit, flipTarget string
	flipAfter           int
}

// familyDefaults: the live verbs default to what the library does
// (aggregate.Config: exchange on the complete overlay at ε 1e-9) for a
// group that shares this machine's cores, with a single flip early in the
// operation (an exchange member sends 2·log2 N messages in all); the
// simulated verbs to the thesis's
// setting (a 32-node hypercube at ε 1e-14, single flips of every bit of a
// value after 150 messages), which docs/sdc.md reproduces.
var familyDefaults = map[family]groupDefaults{
	liveFamily: {algo: "exchange", topology: "complete", nodes: 16, eps: 1e-9,
		flipBit: "-1", flipTarget: "value", flipAfter: 2},
	simFamily: {algo: "pfcc", topology: "hypercube", nodes: 32, eps: 1e-14,
		flipBit: "0-63", flipTarget: "value", flipAfter: -1},
	bcastFamily: {nodes: 1024},
}

// flagDifference is a documented exception to "one default per idea": a
// verb whose default differs from its family's (verb set), or a flag
// whose default differs between families (verb empty; with help, its help
// text too). TestOneDefaultPerIdea holds every flag that more than one
// verb takes to this list, and the list to the flags; docs/design.md
// ("CLI contract") has the same table.
type flagDifference struct {
	flags []string
	verb  string
	help  bool
	why   string
}

var flagDifferences = []flagDifference{
	{flags: []string{"algo"}, verb: "bench", why: "it compares algorithms: by default one of each kind, and rdb, the reference of its ratios; with --components above 1 also ring, the bandwidth-optimal baseline"},
	{flags: []string{"runs"}, verb: "bench", why: "20: its figures are medians over runs"},
	{flags: []string{"nodes"}, verb: "node", why: "required: every member must be told the group's size, and a default would split a group silently"},
	{flags: []string{"nats"}, verb: "node", why: "a process of its own needs a server outside it: gossipreduce server's, nats://127.0.0.1:4222"},
	{flags: []string{"runs"}, verb: "sdc", why: "100 runs per point, as the thesis"},
	{flags: []string{"components"}, verb: "chaos", why: "2: its inputs have had two components since it began, so that a seed replays the same case; a simulated campaign only"},
	{flags: []string{"algo"}, why: "live: exchange, the library's; simulated: pfcc, the thesis's algorithm, whose experiments sim and sdc reproduce"},
	{flags: []string{"topology"}, why: "live: complete, every member a neighbour, as the library; simulated: the thesis's hypercube"},
	{flags: []string{"nodes"}, why: "live: 16, members that share this machine's cores; simulated: the thesis's 32; broadcast: the papers' 1024 processes"},
	{flags: []string{"eps"}, why: "live: the library's 1e-9; simulated: the thesis's 1e-14"},
	{flags: []string{"flip-bit"}, why: "run flips no bit unless asked; sdc sweeps all 64, as the thesis"},
	{flags: []string{"flip-after"}, why: "run: 2 messages, early in an operation of any algorithm; sdc: the thesis's 150 (0 for rdb and input flips)"},
	{flags: []string{"L", "o"}, why: "sim: the thesis's timing, L 1 and o 0; bcast: the broadcast papers' integer LogP units, L 2 and o 1"},
	{flags: []string{"token", "user", "password", "tls-ca", "tls-cert"}, help: true,
		why: "server: what it requires of clients; the live verbs: what they present to a server"},
	{flags: []string{"v"}, help: true, why: "server: its own messages; node: the member's protocol decisions"},
}

// The help texts of the shared flags. Where the families' defaults differ,
// the text says so and why, the same in every verb.
var (
	helpAlgo = "algorithm: " + strings.Join(algo.Names(), ", ") + " (live verbs default to exchange, as the library; simulated ones to the thesis's pfcc; " +
		"bench and sdc: a comma list to compare)"
	helpTopology = "overlay: " + strings.Join(topology.Names(), ", ") + ", torus:AxBxC (live verbs default to complete, every member a neighbour, as the library; " +
		"simulated ones to the thesis's hypercube)"
	helpNodes = "number of members N (node: required; live verbs default to 16, which share this machine's cores; simulated ones to the thesis's 32; " +
		"bcast to the broadcast papers' 1024; spectral: a torus:AxBxC has A·B·C)"
	helpEps  = "target accuracy ε in (0, 1) (live verbs default to the library's 1e-9; simulated ones to the thesis's 1e-14)"
	helpSeed = "random seed; run i uses seed+i (default: drawn at random and printed, so that --seed replays it)"
	helpRuns = "number of runs; run i uses seed+i (bench: per algorithm; sdc: per point)"

	helpLoss       = "probability in [0, 1) that a message is lost (sdc: a comma list of the rates to sweep, e.g. 0,0.01,0.1)"
	helpCrash      = "members that crash mid-operation: a count, or a share of the members when below 1, drawn from the seed"
	helpCrashRoot  = "the root (member 0) crashes mid-operation too (--crash draws from the others)"
	helpCrashAfter = "a crashing member crashes once it has sent this many messages (0: before its first, so that its input leaves with it; the kill races with its sends)"
	helpFlipBit    = "flip this bit (0-63) once per run, at a member drawn from the seed (-1: none; sdc: a comma list of bits and ranges to sweep, e.g. 0-63 or 20,52-62; " +
		"run defaults to none, sdc to all 64 as the thesis)"
	helpFlipTarget = "what flips hit: " + strings.Join(sdcTargets, ", ") + " (sdc: a comma list; both default to value: a flow's value in the flow algorithms, else the state's, " +
		"the thesis's figures 4.6-4.12)"
	helpFlipAfter = "the single flip happens once its member has sent this many messages (run defaults to 2, early in an operation of any algorithm; " +
		"sdc to -1: the thesis's 150, or 0 for rdb and for input flips of machines without input words)"
	helpFlipRate = "flip probability per word per message at every member, over the bits of --flip-bit (run: all 64; sdc: one range, the rate campaign; the thesis used 1e-4)"
)

// sdcTargets are the names sdc.ParseTarget takes.
var sdcTargets = []string{"value", "weight", "checksum", "flow", "message", "input"}

// listVerbs names, for each flag that some verb sweeps or compares, the
// verbs that take a comma list of it; every other verb takes one value.
var listVerbs = map[string][]string{
	"algo":        {"bench", "sdc"},
	"loss":        {"sdc"},
	"flip-bit":    {"sdc"},
	"flip-target": {"sdc"},
}

// listFlag is a flag that takes one value, or, in a verb that sweeps or
// compares it (list), a comma list. parse reads one item; it may expand
// to several values (a bit range) or none (-1, no bit).
type listFlag[T any] struct {
	name, verb string
	list       bool
	parse      func(string) ([]T, error)
	distinct   func([]T) error // nil, or rejects a list that repeats a value
	vals       []T
	text       string
	given      bool // set on the command line, not only the default
}

func (l *listFlag[T]) String() string { return l.text }

// kind names the value in the help: a list, or one value of its type.
func (l *listFlag[T]) kind() string {
	if l.list {
		return "list"
	}
	var zero T
	switch any(zero).(type) {
	case float64:
		return "float"
	case int:
		return "int"
	}
	return "string"
}

func (l *listFlag[T]) Set(s string) error {
	var vals []T
	items := splitList(s)
	for _, item := range items {
		v, err := l.parse(item)
		if err != nil {
			return err
		}
		vals = append(vals, v...)
	}
	if !l.list && (len(items) > 1 || len(vals) > 1) {
		return errors.New(oneValue(l.verb, l.name))
	}
	if l.list && len(vals) == 0 {
		return errors.New("empty list")
	}
	if l.distinct != nil {
		if err := l.distinct(vals); err != nil {
			return err
		}
	}
	l.vals, l.text, l.given = vals, s, true
	return nil
}

// oneValue is the complaint about a list given to a verb that takes one
// value: "run takes one --algo; bench and sdc take a list".
func oneValue(verb, name string) string {
	vs := listVerbs[name]
	takes := "takes"
	if len(vs) > 1 {
		takes = "take"
	}
	return fmt.Sprintf("%s takes one --%s; %s %s a list", verb, name, strings.Join(vs, " and "), takes)
}

// one returns the single value, or zero when there is none.
func (l *listFlag[T]) one() T {
	var zero T
	if len(l.vals) == 0 {
		return zero
	}
	return l.vals[0]
}

// registerList registers l as --name on fs with its default, as a list when
// the verb sweeps or compares it.
func registerList[T any](fs *flag.FlagSet, l *listFlag[T], name, verb, def, help string, parse func(string) ([]T, error)) {
	l.name, l.verb, l.parse = name, verb, parse
	l.list = slices.Contains(listVerbs[name], verb)
	if err := l.Set(def); err != nil {
		panic(fmt.Sprintf("gossipreduce: default of --%s: %v", name, err))
	}
	l.given = false
	fs.Var(l, name, help)
}

func parseAlgo(s string) ([]string, error) {
	if _, err := algo.Lookup(s); err != nil {
		return nil, err
	}
	return []string{s}, nil
}

func parseLoss(s string) ([]float64, error) {
	p, err := strconv.ParseFloat(s, 64)
	if err != nil || !(p >= 0 && p < 1) {
		return nil, fmt.Errorf("%q: want a probability in [0, 1)", s)
	}
	return []float64{p}, nil
}

// parseBits reads a bit (0-63), a range of them ("52-62"), or -1 (none).
func parseBits(s string) ([]int, error) {
	if s == "-1" {
		return nil, nil
	}
	lo, hi, ok := bitRange(s)
	if !ok {
		return nil, fmt.Errorf("%q: want bit positions 0-63, e.g. 0-63 or 20,52-62 (-1: none)", s)
	}
	var bits []int
	for b := lo; b <= hi; b++ {
		bits = append(bits, b)
	}
	return bits, nil
}

// bitRange reads "20" or "52-62".
func bitRange(f string) (lo, hi int, ok bool) {
	a, b, isRange := strings.Cut(f, "-")
	lo, err1 := strconv.Atoi(a)
	hi, err2 := lo, error(nil)
	if isRange {
		hi, err2 = strconv.Atoi(b)
	}
	return lo, hi, err1 == nil && err2 == nil && lo >= 0 && hi <= 63 && lo <= hi
}

func parseTarget(s string) ([]sdc.Target, error) {
	t, err := sdc.ParseTarget(s)
	if err != nil {
		return nil, err
	}
	return []sdc.Target{t}, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// registerAlgo registers --algo (a list in bench and sdc) with default def.
// A list names each algorithm once: a repeat would run it twice and
// print two rows, or two sets of points, under one name.
func registerAlgo(fs *flag.FlagSet, l *listFlag[string], verb, def string) {
	l.distinct = noRepeat[string]
	registerList(fs, l, "algo", verb, def, helpAlgo, parseAlgo)
}

// noRepeat rejects a list that names a value more than once.
func noRepeat[T comparable](vals []T) error {
	seen := make(map[T]bool, len(vals))
	for _, v := range vals {
		if seen[v] {
			return fmt.Errorf("%v is listed twice", v)
		}
		seen[v] = true
	}
	return nil
}

// registerSeed registers --seed.
func registerSeed(fs *flag.FlagSet, s *seedFlag) { fs.Var(s, "seed", helpSeed) }

// registerNodes registers --nodes with default def.
func registerNodes(fs *flag.FlagSet, n *int, def int) { fs.IntVar(n, "nodes", def, helpNodes) }

// registerRuns registers --runs with default def.
func registerRuns(fs *flag.FlagSet, n *int, def int) { fs.IntVar(n, "runs", def, helpRuns) }

// groupFlags are --topology, --nodes and --eps: the group a verb runs or
// models (--algo is registerAlgo's: not every verb with a group takes it).
type groupFlags struct {
	topology string
	nodes    int
	eps      float64
}

// register registers the group flags with the defaults d.
func (g *groupFlags) register(fs *flag.FlagSet, d groupDefaults) {
	fs.StringVar(&g.topology, "topology", d.topology, helpTopology)
	registerNodes(fs, &g.nodes, d.nodes)
	fs.Float64Var(&g.eps, "eps", d.eps, helpEps)
}

// check validates --nodes and --eps; the overlay is checked with its
// number of nodes by overlay.
func (g *groupFlags) check() error {
	if g.nodes < 1 {
		return usagef("--nodes %d must be at least 1", g.nodes)
	}
	return checkEps(g.eps)
}

// overlay builds the --topology of n nodes.
func (g *groupFlags) overlay(n int) (topology.Graph, error) {
	t, err := topology.Parse(g.topology, n)
	if err != nil {
		return nil, usageErr(err)
	}
	return t, nil
}

// crashFlag is --crash: a count of members, or a share of them below 1.
type crashFlag struct{ v float64 }

func (c *crashFlag) String() string { return strconv.FormatFloat(c.v, 'g', -1, 64) }

func (c *crashFlag) kind() string { return "number" }

func (c *crashFlag) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v >= 0) || math.IsInf(v, 1) || (v >= 1 && v != math.Trunc(v)) {
		return fmt.Errorf("%q: want a number of members, or a share in [0, 1)", s)
	}
	c.v = v
	return nil
}

// count is how many of n members crash: a share rounds to at least one.
func (c crashFlag) count(n int) int {
	if c.v > 0 && c.v < 1 {
		return max(1, int(math.Round(c.v*float64(n))))
	}
	return int(c.v)
}

// share is the crashing members' share of n.
func (c crashFlag) share(n int) float64 {
	if c.v >= 1 {
		return c.v / float64(n)
	}
	return c.v
}

// faultFlags are the faults a verb injects: --loss, the crashes and the
// bit flips. Each verb registers the ones it takes.
type faultFlags struct {
	loss       listFlag[float64]
	crash      crashFlag
	crashRoot  bool
	crashAfter int
	flipBit    listFlag[int]
	flipTarget listFlag[sdc.Target]
	flipAfter  int
	flipRate   float64
}

// registerLoss registers --loss (default none). A rate listed twice is
// refused, as a repeated algorithm is: sdc would sweep it twice.
func (f *faultFlags) registerLoss(fs *flag.FlagSet, verb string) {
	f.loss.distinct = noRepeat[float64]
	registerList(fs, &f.loss, "loss", verb, "0", helpLoss, parseLoss)
}

// registerCrash registers --crash, and with root --crash-root and
// --crash-after too (the live crashes).
func (f *faultFlags) registerCrash(fs *flag.FlagSet, root bool) {
	fs.Var(&f.crash, "crash", helpCrash)
	if root {
		fs.BoolVar(&f.crashRoot, "crash-root", false, helpCrashRoot)
		fs.IntVar(&f.crashAfter, "crash-after", 2, helpCrashAfter)
	}
}

// registerFlips registers --flip-bit, --flip-target, --flip-after and
// --flip-rate with the family's defaults d.
func (f *faultFlags) registerFlips(fs *flag.FlagSet, verb string, d groupDefaults) {
	registerList(fs, &f.flipBit, "flip-bit", verb, d.flipBit, helpFlipBit, parseBits)
	registerList(fs, &f.flipTarget, "flip-target", verb, d.flipTarget, helpFlipTarget, parseTarget)
	fs.IntVar(&f.flipAfter, "flip-after", d.flipAfter, helpFlipAfter)
	fs.Float64Var(&f.flipRate, "flip-rate", 0, helpFlipRate)
}

// check checks that the crashes (and the root's) leave at least one of n
// members, and the flip rate.
func (f *faultFlags) check(n int) error {
	if f.crash.count(n)+boolInt(f.crashRoot) >= n {
		with := ""
		if f.crashRoot {
			with = " with --crash-root"
		}
		return usagef("--crash %v%s leaves none of %d members", f.crash.v, with, n)
	}
	return checkProb("flip-rate", f.flipRate, 1)
}

// requested lists the faults given, as flags, for warnings.
func (f *faultFlags) requested() []string {
	var r []string
	if p := f.loss.one(); p > 0 {
		r = append(r, fmt.Sprintf("--loss %v", p))
	}
	if f.crash.v > 0 {
		r = append(r, fmt.Sprintf("--crash %v", f.crash.v))
	}
	if f.crashRoot {
		r = append(r, "--crash-root")
	}
	if len(f.flipBit.vals) > 0 {
		r = append(r, fmt.Sprintf("--flip-bit %d", f.flipBit.one()))
	}
	if f.flipRate > 0 {
		r = append(r, fmt.Sprintf("--flip-rate %v", f.flipRate))
	}
	return r
}

// liveTiming are the time limits of live members.
type liveTiming struct {
	timeout, suspect time.Duration
}

// register registers --timeout, and with suspect --suspect.
func (t *liveTiming) register(fs *flag.FlagSet, suspect bool) {
	fs.DurationVar(&t.timeout, "timeout", 30*time.Second, "give up an operation after this long, connecting (retried until then) and joining the group included")
	t.suspect = time.Second
	if suspect {
		fs.DurationVar(&t.suspect, "suspect", time.Second, "silence after which a member is declared dead")
	}
}

func (t *liveTiming) check() error {
	if t.timeout <= 0 || t.suspect <= 0 {
		return usagef("--timeout and --suspect must be positive")
	}
	return nil
}

// The flags of the simulators that several verbs share.

func registerWorkers(fs *flag.FlagSet, n *int) {
	fs.IntVar(n, "workers", 0, "parallel runs (0: one per core)")
}

func registerPerRun(fs *flag.FlagSet, b *bool) {
	fs.BoolVar(b, "per-run", false, "with --json, print one JSON object per run (a line each) instead of the summary")
}

func registerMaxMsgs(fs *flag.FlagSet, n *int) {
	fs.IntVar(n, "max-msgs", 0, "stop a run once a node has sent this many messages (0: sim 10000; sdc 500, with --flip-rate 1000, with --loss 2000, as the thesis)")
}

func registerTau(fs *flag.FlagSet, tau *float64) {
	fs.Float64Var(tau, "tau", 0, "checksum threshold τ of pflc and pfcc, relative (0: their default)")
}

func registerComponents(fs *flag.FlagSet, k *int) { registerComponentsDefault(fs, k, 1) }

// registerComponentsDefault is registerComponents with another default
// (flagDifferences says where and why).
func registerComponentsDefault(fs *flag.FlagSet, k *int, def int) {
	fs.IntVar(k, "components", def, "vector length k of each member's value")
}

const (
	helpL = "message latency L (sim: 1, the thesis's timing; bcast: 2 integer LogP units, as the broadcast papers)"
	helpO = "overhead o per send and per receive (sim: 0, the thesis's timing; bcast: 1 integer LogP unit, g ≤ o)"
)

// checkCount validates a flag that counts something from min on.
func checkCount(name string, v, min int) error {
	if v < min {
		return usagef("--%s %d must be at least %d", name, v, min)
	}
	return nil
}

// firstError returns the first non-nil error.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// given returns the names of the flags set on fs's command line.
func given(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// alias is a deprecated name of a flag: setting it sets the flag and
// says so, once, on the flag set's output (as it was when registered:
// parseFlags silences the flag set's output while it parses). The help leaves it out.
type alias struct {
	fs       *flag.FlagSet
	w        io.Writer // the flag set's output when registered
	old, new string
	warned   bool
}

func (a *alias) String() string { return "" }

func (a *alias) Set(s string) error {
	if !a.warned {
		fmt.Fprintf(a.w, "gossipreduce: --%s is deprecated; use --%s\n", a.old, a.new)
		a.warned = true
	}
	return a.fs.Set(a.new, s)
}

// deprecate registers old as a deprecated alias of the flag new.
func deprecate(fs *flag.FlagSet, old, new string) {
	fs.Var(&alias{fs: fs, w: fs.Output(), old: old, new: new}, old, "deprecated: use --"+new)
}

// isAlias reports whether f is a deprecated alias.
func isAlias(f *flag.Flag) bool {
	_, ok := f.Value.(*alias)
	return ok
}
