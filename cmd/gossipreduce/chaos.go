package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/member"
	"github.com/gossipreduce/gossipreduce/member/simnet"
	"github.com/gossipreduce/gossipreduce/transport"
)

func init() {
	register("chaos", "randomized fault schedules checked against the safety invariant (simulated, or live over NATS)", runChaos)
}

// chaosOutput is what `gossipreduce chaos --json` prints.
type chaosOutput struct {
	Mode       string        `json:"mode"` // "simulated" or "nats"
	Seed       uint64        `json:"seed"`
	Scenarios  []string      `json:"scenarios"`
	Operations int           `json:"operations"`
	Failed     int           `json:"failed"`    // member operations that ended with an error
	Truncated  int           `json:"truncated"` // simulated operations cut at the event budget
	Violations int           `json:"violations"`
	Cases      []simnet.Case `json:"violating_cases"`
	Seconds    float64       `json:"seconds"`
}

// liveScenarios are the faults the --nats mode can inject into live
// groups; the rest need the simulator's control of time and network.
var liveScenarios = []string{"loss", "crash", "root-crash", "forge"}

func runChaos(ctx context.Context, args []string, out *stdio) error {
	fs := newFlags("chaos", out)
	ops := fs.Int("ops", 300, "operations to check, at least")
	var seed seedFlag
	fs.Var(&seed, "seed", "campaign seed (random if not given; case i runs with seed+i)")
	scen := fs.String("scenario", "", "comma-separated faults to draw from (default all): "+strings.Join(simnet.Scenarios, ","))
	algoName := fs.String("algo", "pfcc", "algorithm (a flow algorithm: pf, pflc or pfcc)")
	realNATS := fs.Bool("real-nats", false, "run live groups over an embedded NATS server instead of the simulator (faults: "+strings.Join(liveScenarios, ",")+")")
	natsURL := fs.String("nats", "", "NATS server URL(s) for the live mode (default with --real-nats: an embedded server)")
	nf := addNATSFlags(fs)
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *ops < 1 {
		return usagef("--ops %d: want at least 1", *ops)
	}
	scenarios := simnet.Scenarios
	if *realNATS || *natsURL != "" {
		scenarios = liveScenarios
	}
	if *scen != "" {
		scenarios = strings.Split(*scen, ",")
		allowed := simnet.Scenarios
		if *realNATS || *natsURL != "" {
			allowed = liveScenarios
		}
		for _, s := range scenarios {
			if !slices.Contains(allowed, s) {
				return usagef("--scenario %q: want some of %s", s, strings.Join(allowed, ","))
			}
		}
	}
	s := seed.value()
	res := chaosOutput{Mode: "simulated", Seed: s, Scenarios: scenarios}
	fmt.Fprintf(out.Stderr, "chaos: seed %d (replay with --seed %d)\n", s, s)
	start := time.Now()
	if *realNATS || *natsURL != "" {
		res.Mode = "nats"
		if err := liveChaos(ctx, nf, *natsURL, *algoName, scenarios, *ops, s, &res, out); err != nil {
			return err
		}
	} else {
		prog := newProgress(out.Stderr, "chaos cases")
		rep, err := simnet.Chaos(simnet.ChaosConfig{Ops: *ops, Seed: s, Scenarios: scenarios, Algorithm: *algoName, Progress: prog.update})
		if err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		res.Operations, res.Failed, res.Truncated, res.Violations, res.Cases = rep.Operations, rep.Failed, rep.Truncated, rep.Violations, rep.Cases
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
		fmt.Fprintf(out.Stdout, "chaos (%s): seed %d, scenarios %s\n", res.Mode, res.Seed, strings.Join(res.Scenarios, ","))
		fmt.Fprintf(out.Stdout, "  operations        %d checked in %.1f s\n", res.Operations, res.Seconds)
		fmt.Fprintf(out.Stdout, "  failed            %d member operations ended with an error (safe; not a violation)\n", res.Failed)
		if res.Mode == "simulated" {
			fmt.Fprintf(out.Stdout, "  truncated         %d operations cut at the event budget\n", res.Truncated)
		}
		fmt.Fprintf(out.Stdout, "  violations        %d\n", res.Violations)
		for _, c := range res.Cases {
			fmt.Fprintf(out.Stdout, "  case seed %d: %s\n", c.Seed, c.Schedule)
			for _, v := range c.Violations {
				fmt.Fprintf(out.Stdout, "    %v\n", v)
			}
		}
	}
	if res.Violations > 0 {
		return fmt.Errorf("chaos: %d violations of the safety invariant (seeds above)", res.Violations)
	}
	return nil
}

// liveChaos runs groups of real members (package aggregate) over NATS, one
// operation each, with faults drawn per case, and checks every operation.
func liveChaos(ctx context.Context, nf *natsFlags, natsURL, algoName string, scenarios []string, ops int, seed uint64, res *chaosOutput, out *stdio) error {
	has := func(rng *rand.Rand, s string) bool { return slices.Contains(scenarios, s) && rng.IntN(2) == 0 }
	prog := newProgress(out.Stderr, "chaos operations")
	for i := range ops {
		if err := ctx.Err(); err != nil {
			return err
		}
		cs := seed + uint64(i)
		rng := rand.New(rand.NewPCG(cs, 0x11fe))
		n := 3 + rng.IntN(10)
		var sched []string
		loss := 0.0
		if has(rng, "loss") {
			loss = []float64{0.01, 0.05, 0.2}[rng.IntN(3)]
			sched = append(sched, fmt.Sprintf("loss %g", loss))
		}
		net, err := nf.openNet(ctx, natsURL, transport.Options{Loss: loss, Seed: cs})
		if err != nil {
			return err
		}
		f := faults{flipBit: -1, crashAfter: 5 + rng.IntN(60)}
		if has(rng, "crash") && n > 4 {
			f.crash = append(f.crash, gossip.NodeID(1+rng.IntN(n-1)))
		}
		if has(rng, "root-crash") {
			f.crash = append(f.crash, 0)
		}
		if len(f.crash) > 0 {
			sched = append(sched, fmt.Sprintf("members %v leave after %d messages", f.crash, f.crashAfter))
		}
		inputs := make([][]float64, n)
		for j := range inputs {
			inputs[j] = []float64{float64(1 + rng.IntN(1000))}
		}
		tmpl := aggregate.Config{Group: fmt.Sprintf("chaos%d", cs), Algorithm: algoName, Seed: cs, Suspect: 300 * time.Millisecond}
		var stop func()
		if has(rng, "forge") {
			stop = forgeResults(ctx, net, tmpl.Group, algoName, n, rng.Uint64())
			sched = append(sched, "forged results at 2 kHz")
		}
		o, err := runGroup(ctx, net.tr, tmpl, inputs, f, 8*time.Second)
		if stop != nil {
			stop()
		}
		net.Close()
		if err != nil {
			return err
		}
		outs := map[gossip.NodeID]member.Outcome{}
		for j := range n {
			outs[gossip.NodeID(j)] = member.Outcome{Result: o.results[j], Err: o.errs[j]}
			if o.errs[j] != nil {
				res.Failed++
			}
		}
		res.Operations++
		if vs := member.Check(n, 1, inputs, outs, 1e-9); len(vs) > 0 {
			res.Violations += len(vs)
			res.Cases = append(res.Cases, simnet.Case{Seed: cs, Schedule: fmt.Sprintf("nodes %d: %s", n, strings.Join(sched, "; ")), Operations: 1, Violations: vs})
		}
		prog.update(i+1, ops)
	}
	return nil
}

// forgeResults publishes, until stopped, result messages of the group's
// epoch 1 that no root computed (value 1e6, every member live), as a client
// without the group key would: each forger is a fresh endpoint that does
// the handshake, so its messages pass the session layer; only the members'
// own checks stand in the way.
func forgeResults(ctx context.Context, net *liveNet, group, algoName string, n int, salt uint64) func() {
	tr, err := transport.Connect(ctx, []string{net.url}, transport.NATSOptions{})
	if err != nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The forger must pass the configuration hash: it joins as a
		// member would, with an id nobody uses beyond the group.
		words := (n + 63) / 64
		payload := append([]float64{1e6, float64(n)}, make([]float64, words)...)
		t := time.NewTicker(500 * time.Microsecond)
		defer t.Stop()
		eps := map[gossip.NodeID]transport.Endpoint{}
		rng := rand.New(rand.NewPCG(salt, 7))
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			from := gossip.NodeID(rng.IntN(n))
			to := gossip.NodeID(rng.IntN(n))
			if from == to {
				continue
			}
			ep, ok := eps[from]
			if !ok {
				cfg := aggregate.Config{Group: group, ID: from, Nodes: n, Algorithm: algoName}
				h, err := cfg.Hash()
				if err != nil {
					return
				}
				ep, err = tr.Open(ctx, transport.Group{Name: group, ConfigHash: h}, from)
				if err != nil {
					continue // the member's own endpoint may hold the subject in this process
				}
				eps[from] = ep
			}
			_ = ep.Send(ctx, gossip.Message{From: from, To: to, Kind: gossip.KindControl, Epoch: 1, Tag: uint64(from), Payload: payload})
		}
	}()
	return func() {
		cancel()
		<-done
		tr.Close()
	}
}
