package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/algo"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/sdc"
	"github.com/gossipreduce/gossipreduce/transport"
)

func init() {
	register("run", "a live all-reduce: N members in this process over NATS (embedded server unless --nats)", runLive)
}

// runOutput is the JSON of the run verb (field names are a contract).
type runOutput struct {
	Algo        string    `json:"algo"`
	Topology    string    `json:"topology"`
	Nodes       int       `json:"nodes"`
	Runs        int       `json:"runs"`
	Result      []float64 `json:"result"`
	Exact       []float64 `json:"exact"`
	MaxRelError float64   `json:"max_rel_error"`
	Identical   bool      `json:"identical"`
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
	Live         int `json:"live"`
	Flips        int `json:"flips"`
	// Excluded is the neighbours declared dead or absent, summed over the
	// members and runs (crashed members are declared dead by each of their
	// neighbours; more than that are false deaths). Overflow is messages
	// dropped because a member's receive buffer was full: the group was
	// sending faster than it could read.
	Excluded int    `json:"excluded"`
	Overflow uint64 `json:"overflow"`
	Seed     uint64 `json:"seed"`
	NATS     string `json:"nats"`
	Error    string `json:"error,omitempty"`
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
		timeout    = fs.Duration("timeout", 30*time.Second, "give up an operation after this long")
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
	net, err := nf.openNet(ctx, *natsURL, transport.Options{Loss: *loss, Seed: s, Buffer: 8192})
	if err != nil {
		return err
	}
	defer net.Close()

	o := runOutput{Algo: *algoName, Topology: *topo, Nodes: *nodes, Runs: *runs, Identical: true, Seed: s, NATS: net.url}
	var secs []float64
	prog := newProgress(out.Stderr, "run")
	for i := range *runs {
		rs := s + uint64(i)
		r := rand.New(rand.NewPCG(rs, 0xfa17))
		var f faults
		f.flipBit, f.flipTarget, f.flipAfter, f.flipRate = *flipBit, target, *flipAfter, *flipRate
		f.crashAfter = *crashAfter
		if *crashRoot {
			f.crash = append(f.crash, 0)
		}
		for _, v := range r.Perm(*nodes - 1)[:*crash] {
			f.crash = append(f.crash, gossip.NodeID(v+1))
		}
		f.flipNode = gossip.NodeID(r.IntN(*nodes))
		cfg := tmpl
		cfg.Group = fmt.Sprintf("run-%d-%d", s, i)
		cfg.Seed = rs
		res, err := runGroup(ctx, net.tr, cfg, drawInputs(*nodes, *comps, rs), f, *timeout)
		if err != nil {
			return err
		}
		identical, worst, total, most, firstErr := res.check()
		if firstErr != nil {
			o.Failed++
			if o.Error == "" {
				o.Error = fmt.Sprintf("run %d (seed %d): %v", i, rs, firstErr)
			}
		}
		o.Identical = o.Identical && identical
		if firstErr == nil && !(worst <= *eps) {
			o.WorseThanEps++
		}
		if worst > o.MaxRelError || math.IsNaN(worst) {
			o.MaxRelError = worst
		}
		o.Messages += float64(total) / float64(*runs)
		o.MaxMsgs = max(o.MaxMsgs, most)
		o.Result, o.Exact = res.firstResult(), res.exact
		o.Live = *nodes - len(f.crash)
		o.Flips += res.flips
		o.Excluded += res.excluded
		o.Overflow += res.overflow
		secs = append(secs, res.seconds)
		o.SecondsMax = max(o.SecondsMax, res.seconds)
		if *runs > 1 {
			prog.update(i+1, *runs)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	o.Seconds = median(secs)
	if *asJSON {
		if err := writeJSON(out.Stdout, sanitizeRun(o)); err != nil {
			return err
		}
	} else {
		printRun(out, o)
	}
	if o.Failed > 0 {
		return fmt.Errorf("%d of %d runs failed; first: %s", o.Failed, o.Runs, o.Error)
	}
	if o.WorseThanEps > 0 {
		return fmt.Errorf("%d of %d runs returned a result worse than eps %g", o.WorseThanEps, o.Runs, *eps)
	}
	return nil
}

// sanitizeRun replaces an infinite error (JSON has no Inf) by MaxFloat64.
func sanitizeRun(o runOutput) runOutput {
	if math.IsInf(o.MaxRelError, 0) || math.IsNaN(o.MaxRelError) {
		o.MaxRelError = math.MaxFloat64
	}
	return o
}

func printRun(out *stdio, o runOutput) {
	fmt.Fprintf(out.Stdout, "live all-reduce: %s on %s, %d members, %d run(s), seed %d, NATS %s\n", o.Algo, o.Topology, o.Nodes, o.Runs, o.Seed, o.NATS)
	fmt.Fprintf(out.Stdout, "  result          %v\n", o.Result)
	fmt.Fprintf(out.Stdout, "  exact           %v\n", o.Exact)
	fmt.Fprintf(out.Stdout, "  max rel error   %.3g\n", o.MaxRelError)
	fmt.Fprintf(out.Stdout, "  identical       %v (every live member returned the same bits)\n", o.Identical)
	fmt.Fprintf(out.Stdout, "  worse than eps  %d of %d runs\n", o.WorseThanEps, o.Runs)
	fmt.Fprintf(out.Stdout, "  live members    %d of %d\n", o.Live, o.Nodes)
	fmt.Fprintf(out.Stdout, "  messages        %.0f per run (%.1f per member), most by one member %d\n", o.Messages, o.Messages/float64(o.Nodes), o.MaxMsgs)
	fmt.Fprintf(out.Stdout, "  time            %.4f s median, %.4f s slowest\n", o.Seconds, o.SecondsMax)
	if o.Flips > 0 {
		fmt.Fprintf(out.Stdout, "  bit flips       %d\n", o.Flips)
	}
	if o.Excluded > 0 || o.Overflow > 0 {
		fmt.Fprintf(out.Stdout, "  excluded        %d neighbours declared dead; %d messages dropped at full receive buffers\n", o.Excluded, o.Overflow)
	}
	if o.Failed > 0 {
		fmt.Fprintf(out.Stdout, "  FAILED          %d run(s): %s\n", o.Failed, o.Error)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
