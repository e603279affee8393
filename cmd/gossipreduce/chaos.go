package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gossipreduce/gossipreduce/member/simnet"
)

func init() {
	registerLegacy("chaos", "randomized fault schedules checked against the safety invariant (simulated, or live over NATS or memory)", runChaos)
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
	return "simulated", simnet.Scenarios
}

func runChaos(ctx context.Context, args []string, out *stdio) error {
	fs := newFlags("chaos", out)
	ops := fs.Int("ops", 300, "operations to check, at least")
	var seed seedFlag
	fs.Var(&seed, "seed", "campaign seed (random if not given; case i runs with seed+i)")
	scen := fs.String("scenario", "", "comma-separated faults to draw from (default all the mode allows): simulated "+strings.Join(simnet.Scenarios, ",")+
		"; live "+strings.Join(liveScenarios, ",")+" (replay: traffic recorded in an earlier operation of the group, under its key, published into a new one; restart: the embedded NATS server restarts mid-operation, --real-nats without --nats only)")
	algoName := fs.String("algo", "pfcc", "algorithm (a flow algorithm: pf, pflc or pfcc)")
	realNATS := fs.Bool("real-nats", false, "run live groups over an embedded NATS server instead of the simulator (faults: "+strings.Join(liveScenarios, ",")+")")
	natsURL := fs.String("nats", "", "NATS server URL(s) for the live mode (default with --real-nats: an embedded server)")
	_, memScenarios := chaosMode(false, "", true)
	memory := fs.Bool("memory", false, "run live groups (real members, real transport session layer) over the in-memory transport instead of NATS (faults: "+
		strings.Join(memScenarios, ",")+")")
	nf := addNATSFlags(fs)
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *ops < 1 {
		return usagef("--ops %d: want at least 1", *ops)
	}
	if *memory && (*realNATS || *natsURL != "") {
		return usagef("--memory runs without NATS: not with --real-nats or --nats")
	}
	mode, allowed := chaosMode(*realNATS, *natsURL, *memory)
	scenarios := allowed
	if *scen != "" {
		scenarios = strings.Split(*scen, ",")
		for _, s := range scenarios {
			if !slices.Contains(allowed, s) {
				return usagef("--scenario %q: want some of %s (mode %s)", s, strings.Join(allowed, ","), mode)
			}
		}
	}
	live := liveChaosConfig{natsURL: *natsURL, memory: *memory, prefix: nf.prefix, algo: *algoName, scenarios: scenarios, ops: *ops}
	if mode != "simulated" {
		var err error
		if live.opts, err = liveChaosOptions(nf, *natsURL, *memory); err != nil {
			return err
		}
	}
	s := seed.value()
	live.seed = s
	res := chaosOutput{Mode: mode, Seed: s, Scenarios: scenarios}
	if mode != "simulated" {
		if slices.Contains(scenarios, "replay") {
			res.Replay = &replayCounts{}
		}
		if slices.Contains(scenarios, "restart") {
			res.Restart = &restartCounts{}
		}
	}
	// Progress, the violating cases as they are found and the live
	// modes' background goroutines share stderr.
	stderr := &syncWriter{w: out.Stderr}
	fmt.Fprintf(stderr, "chaos: seed %d (replay with --seed %d)\n", s, s)
	start := time.Now()
	var err error
	if mode == "simulated" {
		err = simChaos(ctx, simnet.ChaosConfig{Ops: *ops, Seed: s, Scenarios: scenarios, Algorithm: *algoName}, &res, stderr, newProgress(out, "chaos cases"))
	} else {
		err = liveChaos(ctx, live, &res, stderr, newProgress(out, "chaos operations"))
	}
	if err != nil {
		return err
	}
	res.Seconds = time.Since(start).Seconds()
	if res.Cases == nil {
		res.Cases = []simnet.Case{}
	}
	if *asJSON {
		if err := writeJSON(out.Stdout, res); err != nil {
			return err
		}
	} else {
		printChaos(out.Stdout, &res)
	}
	if res.Violations > 0 {
		return fmt.Errorf("chaos: %d violations of the safety invariant (seeds above)", res.Violations)
	}
	return nil
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
		return fmt.Errorf("%w: %w", errUsage, err) // a bad algorithm
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
