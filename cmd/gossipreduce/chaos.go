package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gossipreduce/gossipreduce/member/simnet"
	"github.com/gossipreduce/gossipreduce/transport"
)

func init() {
	register("chaos", "randomized fault schedules checked against the safety invariant (simulated, or live over NATS or memory)",
		liveFamily, func() command { return &chaosCmd{} })
}

// chaosOutput is what `gossipreduce chaos --json` prints.
type chaosOutput struct {
	Mode       string   `json:"mode"` // "simulated", "nats" or "memory"
	Seed       uint64   `json:"seed"`
	Scenarios  []string `json:"scenarios"`
	Operations int      `json:"operations"`
	Failed     int      `json:"failed"`    // member operations that ended with an error
	Truncated  int      `json:"truncated"` // simulated operations cut at the event budget
	Violations int      `json:"violations"`
	// Replay and Restart count what the live scenarios of those names did;
	// they are absent when the scenario was not in the set.
	Replay  *replayCounts  `json:"replay,omitempty"`
	Restart *restartCounts `json:"restart,omitempty"`
	Cases   []simnet.Case  `json:"violating_cases"`
	Seconds float64        `json:"seconds"`
	Error   string         `json:"error,omitempty"` // the campaign found violations
}

// replayCounts sums the live "replay" scenario: traffic recorded in one
// operation of a group and published again into a later operation of a
// new set of members of the same group, with the same group key.
type replayCounts struct {
	// Operations is how many operations had traffic replayed into them.
	Operations int `json:"operations"`
	// Recorded counts the raw messages recorded in the first operations.
	Recorded int `json:"recorded"`
	// Injected counts the recorded messages published again: with the
	// memory transport those an open endpoint received, over NATS those
	// handed to the server.
	Injected int `json:"injected"`
	// Probes counts the injected handshakes that name no receiver
	// incarnation, session probes and claims: an endpoint answers them (to
	// the recorded, dead incarnation) and does not count them as dropped.
	Probes int `json:"probes"`
	// Dropped sums Stats.Replayed over the transports of the members the
	// traffic was replayed into: the messages the session layer refused as
	// bound to another incarnation or seen before. Every injected message
	// but the probes is one of them; the answers to replayed probes, which
	// go to incarnations that no longer exist, and any stale message of
	// the recording operation add to it.
	Dropped uint64 `json:"dropped_as_replayed"`
	// Forged sums Stats.Forged over the same transports (messages whose
	// MAC did not verify under the group key: the forger's, if any).
	Forged uint64 `json:"dropped_as_forged"`
}

// restartCounts sums the live "restart" scenario: the embedded NATS server
// shut down in the middle of an operation and started again on its port.
type restartCounts struct {
	Restarts   int     `json:"restarts"`     // server restarts done
	Down       float64 `json:"down_seconds"` // total time the server was down
	Reconnects uint64  `json:"reconnects"`   // reconnections of the members' NATS connections in those cases
}

// liveScenarios are the faults the live modes (--real-nats, --nats,
// --memory) can inject into groups of real members; the rest need the
// simulator's control of time and network. "restart" needs the embedded
// NATS server.
var liveScenarios = []string{"loss", "crash", "root-crash", "forge", "replay", "restart"}

// chaosMode says which mode the flags select and the scenarios it allows.
func chaosMode(realNATS bool, natsURL string, memory bool) (mode string, allowed []string) {
	switch {
	case memory:
		return "memory", slices.DeleteFunc(slices.Clone(liveScenarios), func(s string) bool { return s == "restart" })
	case natsURL != "":
		return "nats", slices.DeleteFunc(slices.Clone(liveScenarios), func(s string) bool { return s == "restart" })
	case realNATS:
		return "nats", liveScenarios
	}
	return "simulated", slices.Concat(simnet.Scenarios, simnet.OptIn)
}

// chaosCmd is the chaos verb: a campaign of cases, each an operation
// under faults drawn from its seed, simulated or live.
type chaosCmd struct {
	algo             listFlag[string]
	nats             natsFlags
	seed             seedFlag
	ops              int
	components       int
	scenario         string
	realNATS, memory bool
	mode             string   // simulated, nats or memory
	scenarios        []string // the faults to draw from
}

func (c *chaosCmd) flags(fs *flag.FlagSet) {
	registerAlgo(fs, &c.algo, "chaos", familyDefaults[liveFamily].algo)
	c.nats.register(fs, "")
	registerSeed(fs, &c.seed)
	fs.IntVar(&c.ops, "ops", 300, "operations to check, at least")
	registerComponentsDefault(fs, &c.components, 2)
	fs.StringVar(&c.scenario, "scenario", "", "comma-separated faults to draw from (default all the mode allows): simulated "+strings.Join(simnet.Scenarios, ",")+
		", and only when named "+strings.Join(simnet.OptIn, ",")+" (a member killed and started again with the same id that forgot its votes: known to break agreement, see docs/design.md)"+
		"; live "+strings.Join(liveScenarios, ",")+" (replay: traffic recorded in an earlier operation of the group, under its key, published into a new one; "+
		"restart: the embedded NATS server restarts mid-operation, --real-nats without --nats only)")
	fs.BoolVar(&c.realNATS, "real-nats", false, "run live groups over an embedded NATS server instead of the simulator (faults: "+strings.Join(liveScenarios, ",")+")")
	_, memScenarios := chaosMode(false, "", true)
	fs.BoolVar(&c.memory, "memory", false, "run live groups (real members, real transport session layer) over the in-memory transport instead of NATS (faults: "+
		strings.Join(memScenarios, ",")+")")
}

func (c *chaosCmd) check() error {
	if err := checkCount("ops", c.ops, 1); err != nil {
		return err
	}
	if err := checkCount("components", c.components, 1); err != nil {
		return err
	}
	if c.components != 2 && (c.memory || c.realNATS) {
		return usagef("--components is for the simulated campaign, not --memory or --real-nats")
	}
	if c.memory && (c.realNATS || c.nats.url != "") {
		return usagef("--memory runs without NATS: not with --real-nats or --nats")
	}
	if c.memory && c.nats.connecting() {
		return usagef("--token, --user, --password, --creds, --nkey and --tls-* are for an external NATS server, not --memory")
	}
	if err := c.nats.check(); err != nil {
		return err
	}
	var allowed []string
	c.mode, allowed = chaosMode(c.realNATS, c.nats.url, c.memory)
	// By default all the mode allows, but the opt-in ones.
	c.scenarios = slices.DeleteFunc(slices.Clone(allowed), func(s string) bool { return slices.Contains(simnet.OptIn, s) })
	if c.scenario != "" {
		c.scenarios = strings.Split(c.scenario, ",")
		for _, s := range c.scenarios {
			if !slices.Contains(allowed, s) {
				return usagef("--scenario %q: want some of %s (mode %s)", s, strings.Join(allowed, ","), c.mode)
			}
		}
	}
	return nil
}

func (c *chaosCmd) exec(ctx context.Context, out *stdio) error {
	s := c.seed.value()
	res := chaosOutput{Mode: c.mode, Seed: s, Scenarios: c.scenarios}
	// Progress, the violating cases as they are found and the live
	// modes' background goroutines share stderr.
	stderr := &syncWriter{w: out.Stderr}
	fmt.Fprintf(stderr, "chaos: seed %d (replay with --seed %d)\n", s, s)
	start := time.Now()
	if err := c.campaign(ctx, s, &res, stderr, out); err != nil {
		return err
	}
	res.Seconds = time.Since(start).Seconds()
	if res.Cases == nil {
		res.Cases = []simnet.Case{}
	}
	var err error
	if res.Violations > 0 {
		err = fmt.Errorf("chaos: %d violations of the safety invariant (seeds above)", res.Violations)
		res.Error = err.Error()
	}
	if !out.json {
		printChaos(out.Stdout, &res)
		return err
	}
	return errors.Join(err, writeJSON(out.Stdout, res))
}

// campaign runs the cases of the mode into res.
func (c *chaosCmd) campaign(ctx context.Context, s uint64, res *chaosOutput, stderr io.Writer, out *stdio) error {
	if c.mode == "simulated" {
		cfg := simnet.ChaosConfig{Ops: c.ops, Seed: s, Scenarios: c.scenarios, Algorithm: c.algo.one(), Components: c.components}
		return simChaos(ctx, cfg, res, stderr, newProgress(out, "chaos cases"))
	}
	opts, err := c.nats.options(transport.Options{}) // reads the group key file once
	if err != nil {
		return err
	}
	if slices.Contains(c.scenarios, "replay") {
		res.Replay = &replayCounts{}
	}
	if slices.Contains(c.scenarios, "restart") {
		res.Restart = &restartCounts{}
	}
	live := liveChaosConfig{opts: opts, urls: c.nats.urls(), memory: c.memory, prefix: c.nats.prefix, algo: c.algo.one(),
		scenarios: c.scenarios, ops: c.ops, seed: s}
	return liveChaos(ctx, live, res, stderr, newProgress(out, "chaos operations"))
}

// printChaos prints the final report as text.
func printChaos(w io.Writer, res *chaosOutput) {
	fmt.Fprintf(w, "chaos (%s): seed %d, scenarios %s\n", res.Mode, res.Seed, strings.Join(res.Scenarios, ","))
	fmt.Fprintf(w, "  operations        %d checked in %.1f s\n", res.Operations, res.Seconds)
	fmt.Fprintf(w, "  failed            %d member operations ended with an error (safe; not a violation)\n", res.Failed)
	if res.Mode == "simulated" {
		fmt.Fprintf(w, "  truncated         %d operations cut at the event budget\n", res.Truncated)
	}
	if r := res.Replay; r != nil {
		fmt.Fprintf(w, "  replay            %d operations got recorded traffic (%d messages) replayed: %d messages injected, %d of them probes or claims (answered, not dropped)\n",
			r.Operations, r.Recorded, r.Injected, r.Probes)
		fmt.Fprintf(w, "  replay dropped    %d as replayed (Stats.Replayed of the members), %d as forged\n", r.Dropped, r.Forged)
	}
	if r := res.Restart; r != nil {
		fmt.Fprintf(w, "  restart           %d restarts of the embedded NATS server mid-operation, %.1f s down in all; %d reconnections of the members\n", r.Restarts, r.Down, r.Reconnects)
	}
	fmt.Fprintf(w, "  violations        %d\n", res.Violations)
	for _, c := range res.Cases {
		fmt.Fprintf(w, "  case seed %d: %s\n", c.Seed, c.Schedule)
		for _, v := range c.Violations {
			fmt.Fprintf(w, "    %v\n", v)
		}
	}
}

// reportCase prints a violating case to w as soon as it is found, so that
// an interrupted campaign still shows what it found. The leading carriage
// return starts the line over a progress line.
func reportCase(w io.Writer, c simnet.Case) {
	var b strings.Builder
	fmt.Fprintf(&b, "\rchaos: VIOLATION in case seed %d (alone: the same mode and --scenario, --seed %d --ops 1): %s\n", c.Seed, c.Seed, c.Schedule)
	for _, v := range c.Violations {
		fmt.Fprintf(&b, "    %v\n", v)
	}
	io.WriteString(w, b.String())
}

// simChaos runs a simulated campaign, printing each violating case as
// soon as it ends.
func simChaos(ctx context.Context, cfg simnet.ChaosConfig, res *chaosOutput, stderr io.Writer, prog *progress) error {
	cfg.Progress = prog.update
	cfg.OnViolation = func(c simnet.Case) { reportCase(stderr, c) }
	rep, err := simnet.Chaos(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return usageErr(err) // a bad algorithm
	}
	res.Operations, res.Failed, res.Truncated, res.Violations, res.Cases = rep.Operations, rep.Failed, rep.Truncated, rep.Violations, rep.Cases
	return nil
}

// syncWriter serialises writes to w, for writers shared by goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
