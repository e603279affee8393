package simnet

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/gossipreduce/gossipreduce/algo"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/parallel"
	"github.com/gossipreduce/gossipreduce/member"
)

// Scenarios are the kinds of fault a chaos schedule draws from.
var Scenarios = []string{"loss", "dup", "reorder", "slow", "pause", "crash", "root-crash", "root-exit", "partition", "partition-heal", "forge", "forge-near", "forge-absent", "member-restart", "leave", "slow-net"}

// OptIn are the scenarios a campaign draws from only when they are named
// in ChaosConfig.Scenarios. "member-amnesia" is "member-restart" without
// storage: the new machine has forgotten the votes the old one cast
// (member.HardState), and Paxos needs acceptors that remember them, so
// two members can return different results (case 635 of the exchange;
// see docs/design.md, "Known limits"). It shows why a driver that
// restarts members under the same id must keep their HardState; it is
// not part of the campaigns that must find no violation.
var OptIn = []string{"member-amnesia"}

// ChaosConfig configures a chaos campaign: randomized fault schedules in
// the manner of Jepsen and of FoundationDB's simulation testing, each
// checked operation by operation against the safety invariant (member.Check).
type ChaosConfig struct {
	// Ops is the number of operations to check, at least.
	Ops int
	// Seed seeds the campaign; case i runs with seed Seed+i, which
	// ChaosCase replays alone.
	Seed uint64
	// Scenarios are the faults to draw from (nil: all of Scenarios), of
	// Scenarios and OptIn.
	Scenarios []string
	// OpsPerCase is how many operations one group runs in a row (default 3).
	OpsPerCase int
	// Algorithm is the algorithm (default the library's, "exchange").
	Algorithm string
	// Components is the length of every member's input (0: 2). The
	// chunked exchange cuts only vectors of at least as many words (the
	// components and the weight) as the group's hypercube has ranks.
	Components int
	// Progress, if set, is called after each case with the cases done and
	// the cases of the batch.
	Progress func(done, total int)
	// OnViolation, if set, is called with each case that breaks the
	// invariant as soon as it ends (cases run in parallel: it must be safe
	// for concurrent use), so that an interrupted campaign still shows
	// what it found.
	OnViolation func(Case)
}

// Case is one group's schedule and what the checker found.
type Case struct {
	Seed       uint64             `json:"seed"`
	Schedule   string             `json:"schedule"`
	Operations int                `json:"operations"`
	Failed     int                `json:"failed"`    // member operations that ended with an error
	Truncated  int                `json:"truncated"` // operations cut at the event budget
	Violations []member.Violation `json:"violations,omitempty"`
}

// Report sums a campaign.
type Report struct {
	Operations int    `json:"operations"`
	Members    int    `json:"member_operations"`
	Failed     int    `json:"failed"`
	Truncated  int    `json:"truncated"`
	Violations int    `json:"violations"`
	Cases      []Case `json:"violating_cases,omitempty"`
}

// Chaos runs a campaign until ctx ends. Every case that breaks the
// invariant is kept in the report with its seed and schedule.
func Chaos(ctx context.Context, cfg ChaosConfig) (Report, error) {
	if cfg.Ops < 1 {
		return Report{}, fmt.Errorf("simnet: %w: %d operations", gossip.ErrInvalidConfig, cfg.Ops)
	}
	scen := cfg.Scenarios
	if len(scen) == 0 {
		scen = Scenarios
	}
	for _, s := range scen {
		if !slices.Contains(Scenarios, s) && !slices.Contains(OptIn, s) {
			return Report{}, fmt.Errorf("simnet: %w: unknown scenario %q (have %s)", gossip.ErrInvalidConfig, s, strings.Join(slices.Concat(Scenarios, OptIn), ", "))
		}
	}
	per := cfg.OpsPerCase
	if per <= 0 {
		per = 3
	}
	var rep Report
	next := uint64(0)
	for rep.Operations < cfg.Ops {
		// Cases are independent: run a batch of them on every core, each
		// determined by its own seed, and sum them in seed order.
		batch := make([]Case, (cfg.Ops-rep.Operations+per-1)/per)
		err := parallel.For(ctx, len(batch), 0, func(_ context.Context, i int) error {
			cc := cfg
			cc.Scenarios, cc.OpsPerCase = scen, per
			c, err := ChaosCase(cfg.Seed+next+uint64(i), cc)
			batch[i] = c
			if err == nil && len(c.Violations) > 0 && cfg.OnViolation != nil {
				cfg.OnViolation(c)
			}
			return err
		}, cfg.Progress)
		if err != nil {
			return rep, err
		}
		next += uint64(len(batch))
		for _, c := range batch {
			rep.Operations += c.Operations
			rep.Failed += c.Failed
			rep.Truncated += c.Truncated
			rep.Violations += len(c.Violations)
			if len(c.Violations) > 0 {
				rep.Cases = append(rep.Cases, c)
			}
		}
	}
	return rep, nil
}

// faultSpan is how long after an operation's start its faults are drawn:
// 60 ms for the gossip algorithms, whose fault-free operations of these
// sizes take 5 to 40 ms; 2 ms for the finite ones, which end in about
// 0.4 ms (exchange, 16 members) unless a fault stretches them, so that
// most faults hit an operation under way rather than the quiet between two.
func faultSpan(algorithm string) time.Duration {
	if spec, err := algo.Lookup(algorithm); err == nil && spec.Finite {
		return 2 * time.Millisecond
	}
	return 60 * time.Millisecond
}

// ChaosCase runs one randomized schedule, drawn from seed, over
// cc.OpsPerCase operations (0: 3) of one group, with cc's algorithm and
// input length, drawing faults from cc.Scenarios (nil: none, where a
// campaign's nil means all of Scenarios), and checks
// each. cc.Ops and cc.Seed are not used: ChaosCase(seed, cc) replays the
// case of that seed in a campaign of cc.
func ChaosCase(seed uint64, cc ChaosConfig) (Case, error) {
	scenarios, ops, algorithm := cc.Scenarios, cc.OpsPerCase, cc.Algorithm
	components := cc.Components
	if components <= 0 {
		components = 2
	}
	if ops <= 0 {
		ops = 3
	}
	rng := rand.New(rand.NewPCG(seed, 0xc4a05))
	has := func(s string) bool { return slices.Contains(scenarios, s) && rng.IntN(2) == 0 }
	// Scenarios added since draw from a source of their own, so that every
	// seed keeps the schedule it had before.
	later := rand.New(rand.NewPCG(seed, 0x1a7e5))
	hasLater := func(s string) bool { return slices.Contains(scenarios, s) && later.IntN(2) == 0 }
	cfg := Config{Nodes: 3 + rng.IntN(14), Algorithm: algorithm, Seed: seed, Suspect: 200 * time.Millisecond}
	if rng.IntN(3) == 0 && cfg.Nodes >= 4 {
		cfg.Topology = "hypercube"
		cfg.Nodes = 1 << (2 + rng.IntN(3))
	}
	var sched []string
	note := func(format string, a ...any) { sched = append(sched, fmt.Sprintf(format, a...)) }
	if has("loss") {
		cfg.Loss = []float64{0.01, 0.05, 0.2}[rng.IntN(3)]
		note("loss %g", cfg.Loss)
	}
	if has("dup") {
		cfg.Dup = []float64{0.01, 0.1}[rng.IntN(2)]
		note("dup %g", cfg.Dup)
	}
	if has("reorder") {
		cfg.Jitter = time.Duration(1+rng.IntN(500)) * time.Microsecond
		note("jitter %v", cfg.Jitter)
	}
	// A network slow rather than lossy, with messages held up to three
	// times Suspect (a starved NATS server): falling back and deciding
	// by Paxos at round trips longer than Suspect (see member's pledge).
	// Drawn from a source of its own, as the later scenarios are, so
	// that they keep their schedules; such an operation gets 40 Suspect.
	limit := 10 * cfg.Suspect
	slowNet := rand.New(rand.NewPCG(seed, 0x5105e7))
	if slices.Contains(scenarios, "slow-net") && slowNet.IntN(2) == 0 {
		cfg.Latency = time.Duration(float64(cfg.Suspect) * (0.1 + 0.9*slowNet.Float64()))
		cfg.Jitter = max(cfg.Jitter, time.Duration(float64(cfg.Suspect)*3*slowNet.Float64()))
		limit = 40 * cfg.Suspect
		note("latency %v jitter %v", cfg.Latency, cfg.Jitter)
	}
	// Odd seeds reduce extremes too (as a Monitor does), decided without a
	// draw so that every seed keeps the schedule it had before.
	cfg.Extremes = seed%2 == 1
	if cfg.Extremes {
		note("extremes")
	}
	net, err := New(cfg)
	if err != nil {
		return Case{}, err
	}
	span := faultSpan(net.cfg.Algorithm)
	// A group that cannot decide (no majority connected) gossips at full
	// speed until its time runs out; 10 Suspect is long enough for every
	// fault drawn here to be detected and a successor root to decide, and
	// the event budget (about 20 times a fault-free operation of 16
	// members) keeps one case to a fraction of a second.
	net.MaxEvents = 200_000
	c := Case{Seed: seed}
	n := cfg.Nodes
	inputs := make([][]float64, n)
	for e := 1; e <= ops; e++ {
		for i := range inputs {
			inputs[i] = []float64{float64(1 + rng.IntN(1000))}
			for range components - 1 {
				inputs[i] = append(inputs[i], rng.NormFloat64())
			}
		}
		t0 := net.Now()
		// Faults of this operation, at random moments in its first span.
		at := func() time.Duration { return t0 + time.Duration(rng.Int64N(int64(span))) }
		if has("slow") {
			j := gossip.NodeID(rng.IntN(n))
			f := float64(2 + rng.IntN(20))
			net.Slow(j, f)
			note("op %d: member %d %gx slower", e, j, f)
		}
		if has("pause") {
			j := gossip.NodeID(rng.IntN(n))
			a, d := at(), time.Duration(float64(cfg.Suspect)*(0.2+2*rng.Float64()))
			net.Pause(j, a, d)
			note("op %d: pause %d at %v for %v", e, j, a-t0, d)
		}
		if has("crash") && n > 3 {
			j := gossip.NodeID(rng.IntN(n))
			a := at()
			net.Crash(j, a)
			note("op %d: crash %d at %v", e, j, a-t0)
		}
		if has("root-crash") {
			j := lowestLive(net, n)
			// The root decides near the end of the operation: crash it
			// late, when it may be broadcasting.
			a := t0 + time.Duration(rng.Int64N(int64(span*2/3)))
			net.Crash(j, a)
			note("op %d: crash root %d at %v", e, j, a-t0)
		}
		if has("root-exit") {
			// The root prints its result and exits before its broadcast is
			// out: the root's last breath.
			j := lowestLive(net, n)
			keep := rng.IntN(3)
			net.ExitOnResult(j, keep)
			note("op %d: root %d exits on its result, %d messages out", e, j, keep)
		}
		if has("partition") || has("partition-heal") {
			side := make([]int, n)
			for i := range side {
				side[i] = rng.IntN(2)
			}
			a := at()
			if slices.Contains(scenarios, "partition-heal") && rng.IntN(2) == 0 {
				heal := a + time.Duration(float64(cfg.Suspect)*(0.1+3*rng.Float64()))
				net.Partition(side, a, heal)
				note("op %d: partition %v at %v, heals at %v", e, side, a-t0, heal-t0)
			} else {
				net.Partition(side, a, 0)
				note("op %d: partition %v at %v for good", e, side, a-t0)
			}
		}
		if has("forge") {
			// A result nobody computed, sent as a root would: a forger
			// without the group key.
			k := 1 + rng.IntN(3)
			for range k {
				to := gossip.NodeID(rng.IntN(n))
				root := gossip.NodeID(rng.IntN(n))
				val := []float64{1e6 * rng.Float64(), rng.NormFloat64()}
				net.Inject(forgedResult(n, uint64(e), root, to, val, cfg.Extremes), at())
			}
			note("op %d: %d forged results", e, k)
		}
		if has("forge-near") {
			// A result within ε/4 of the true average: it passes every
			// member's own plausibility check, and the member that took it
			// alone would hold other bits than the rest of the group.
			// Spread over the operation, so that some arrive when the
			// members' estimates are within ε of the truth.
			k := 10 + rng.IntN(30)
			truth := mean(inputs)
			for range k {
				to := gossip.NodeID(rng.IntN(n))
				root := gossip.NodeID(rng.IntN(n))
				val := slices.Clone(truth)
				for i := range val {
					val[i] *= 1 + net.cfg.Epsilon/4*(2*rng.Float64()-1)
				}
				net.Inject(forgedResult(n, uint64(e), root, to, val, cfg.Extremes), t0+time.Duration(rng.Int64N(int64(span*4/3))))
			}
			note("op %d: %d forged results near the truth", e, k)
		}
		if has("forge-absent") {
			// The true average of all inputs, labelled as leaving one
			// member out, sent to every member under two identities (so it
			// passes the two-source rule): a forger with two identities.
			j := rng.IntN(n)
			truth := mean(inputs)
			a, b := gossip.NodeID(rng.IntN(n)), gossip.NodeID(rng.IntN(n))
			for to := range n {
				for _, from := range []gossip.NodeID{a, b} {
					if int(from) == to {
						continue
					}
					msg := forgedResult(n, uint64(e), from, gossip.NodeID(to), truth, cfg.Extremes)
					live := len(msg.Payload) - (n+63)/64 - 1
					msg.Payload[live] = float64(n - 1)
					words := msg.Payload[live+1:]
					words[j/64] = math.Float64frombits(1 << (j % 64))
					net.Inject(msg, at())
				}
			}
			note("op %d: forged results leaving member %d out, from %d and %d", e, j, a, b)
		}
		for _, sc := range []string{"member-restart", "member-amnesia"} {
			if !hasLater(sc) {
				continue
			}
			// A member process killed and started again with the same id:
			// at once, or after up to 2 Suspect (then it may have been
			// declared dead meanwhile); with its votes kept in storage
			// (member-restart) or without (member-amnesia).
			durable := sc == "member-restart"
			j := gossip.NodeID(later.IntN(n))
			a := t0 + time.Duration(later.Int64N(int64(span)))
			if later.IntN(2) == 0 {
				net.Restart(j, a, durable)
				note("op %d: %s %d at %v", e, sc, j, a-t0)
			} else {
				gap := time.Duration(later.Int64N(int64(2 * cfg.Suspect)))
				net.Crash(j, a)
				net.Restart(j, a+gap, durable)
				note("op %d: %s %d: killed at %v, started again %v later", e, sc, j, a-t0, gap)
			}
		}
		if hasLater("leave") {
			// Members that leave the group the moment they have their
			// result (a linger of 0) while one member's messages are held
			// for a while (a server that stops reading its connection):
			// the held member may find every other gone, and must not
			// return a result the group did not choose (see the leave
			// notice's proof, member.Machine.Leave).
			j := gossip.NodeID(later.IntN(n))
			a := t0 + time.Duration(later.Int64N(int64(span)))
			d := time.Duration(float64(cfg.Suspect) * (0.2 + 2*later.Float64()))
			net.Hold(j, a, d)
			var gone []int
			for _, i := range later.Perm(n)[:1+later.IntN(n)] {
				if i != int(j) {
					net.LeaveOnResult(gossip.NodeID(i))
					gone = append(gone, i)
				}
			}
			note("op %d: hold %d at %v for %v; %v leave on their result", e, j, a-t0, d, gone)
		}
		outs := net.Run(uint64(e), inputs, nil, limit)
		c.Operations++
		c.Truncated = net.Truncated
		for _, o := range outs {
			if o.Err != nil {
				c.Failed++
			}
		}
		c.Violations = append(c.Violations, member.Check(n, uint64(e), inputs, outs, net.cfg.Epsilon)...)
		if cfg.Extremes {
			c.Violations = append(c.Violations, member.CheckExtremes(n, uint64(e), inputs, outs)...)
		}
		if liveCount(net, n) < 2 {
			break
		}
	}
	c.Schedule = fmt.Sprintf("nodes %d topology %s: %s", n, orDefault(cfg.Topology, "complete"), strings.Join(sched, "; "))
	return c, nil
}

// mean is the element-wise average of the inputs.
func mean(inputs [][]float64) []float64 {
	avg := make([]float64, len(inputs[0]))
	for _, in := range inputs {
		for i, v := range in {
			avg[i] += v / float64(len(inputs))
		}
	}
	return avg
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func lowestLive(net *Net, n int) gossip.NodeID {
	for i := range n {
		if !net.Crashed(gossip.NodeID(i)) {
			return gossip.NodeID(i)
		}
	}
	return 0
}

func liveCount(net *Net, n int) int {
	c := 0
	for i := range n {
		if !net.Crashed(gossip.NodeID(i)) {
			c++
		}
	}
	return c
}

// forgedResult is a result control message of the runtime's shape (values,
// the same as maxima when the group reduces extremes,
// live count, empty dead set) that no root computed.
func forgedResult(n int, epoch uint64, root, to gossip.NodeID, values []float64, extremes bool) gossip.Message {
	p := slices.Clone(values)
	if extremes {
		p = append(p, values...) // as maxima: plausible ones
	}
	p = append(p, float64(n))
	for range (n + 63) / 64 {
		p = append(p, math.Float64frombits(0))
	}
	return gossip.Message{From: root, To: to, Kind: gossip.KindControl, Epoch: epoch, Tag: uint64(root), Payload: p}
}
