package simnet

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/member"
)

// MeasureConfig describes a measurement of the runtime at scale: Runs
// operations, each on a fresh group of Net.Nodes members, with a share of
// the members crashing, a share running slowly, and the network's loss.
type MeasureConfig struct {
	// Net is the group and its network; Net.Seed is the seed of the first
	// run, run i uses Net.Seed+i.
	Net Config
	// Runs is the number of operations (default 1).
	Runs int
	// Crash is the share of members, in [0, 1), that crash at a moment
	// drawn uniformly from the first Window of the operation. When it is
	// positive the root (member 0) is always among them, so that every run
	// with crashes exercises a take-over.
	Crash float64
	// Slow is the share of members, in [0, 1), that are starved as a busy
	// machine starves a process: they handle every event SlowFactor times
	// slower, and stop for Pause once, at a moment drawn from the first
	// Window. They stay alive: declaring one dead is a false death.
	Slow float64
	// SlowFactor (default 10) and Pause (default a fifth of Suspect) shape
	// the slow members.
	SlowFactor float64
	Pause      time.Duration
	// Window is the stretch of each operation in which crashes and pauses
	// fall (default 30 ms: a fault-free operation of 1,024 to 4,096
	// members on the default timings takes 19 to 30 ms).
	Window time.Duration
	// Limit bounds each operation in simulated time; members still at it
	// then give up (default 60 Suspect).
	Limit time.Duration
	// Progress, if set, is called after each run.
	Progress func(done, total int)
}

// MeasureReport is what Measure found, summed over the runs.
type MeasureReport struct {
	Runs int `json:"runs"`
	// Failed counts runs in which a member that did not crash ended with
	// an error; FailedMembers counts those members.
	Failed        int `json:"failed"`
	FailedMembers int `json:"failed_members"`
	// Wrong counts breaches of the safety invariant (member.Check).
	Wrong int `json:"wrong"`
	// FalseDeaths counts members that never crashed and were nevertheless
	// left out of a result or told they were excluded, once per run.
	FalseDeaths int `json:"false_deaths"`
	// Crashed and SlowMembers are the members crashed and slowed, summed
	// over the runs.
	Crashed     int `json:"crashed"`
	SlowMembers int `json:"slow_members"`
	// MsgsPerNode is the mean number of messages a member sent in one
	// operation; MaxMsgs the most any member sent in one.
	MsgsPerNode float64 `json:"msgs_per_node"`
	MaxMsgs     int     `json:"max_msgs"`
	// TimeL is the mean simulated time of an operation, until the last
	// member that did not crash ended it, in units of the message latency
	// L; TimeMS the same in simulated milliseconds.
	TimeL  float64 `json:"time_L"`
	TimeMS float64 `json:"time_ms"`
	// LatencyUS is L, the message latency, in microseconds.
	LatencyUS float64 `json:"latency_us"`
	// Events is the number of events simulated.
	Events int `json:"events"`
}

// Measure runs the operations of cfg one after the other and checks each
// against the safety invariant. It stops early, with what it has, when ctx
// ends.
func Measure(ctx context.Context, cfg MeasureConfig) (MeasureReport, error) {
	if cfg.Runs == 0 {
		cfg.Runs = 1
	}
	switch {
	case cfg.Runs < 0:
		return MeasureReport{}, fmt.Errorf("simnet: %w: %d runs", gossip.ErrInvalidConfig, cfg.Runs)
	case !(cfg.Crash >= 0 && cfg.Crash < 1) || !(cfg.Slow >= 0 && cfg.Slow < 1):
		return MeasureReport{}, fmt.Errorf("simnet: %w: crash share %v, slow share %v must be in [0, 1)", gossip.ErrInvalidConfig, cfg.Crash, cfg.Slow)
	case cfg.SlowFactor != 0 && !(cfg.SlowFactor >= 1 && !math.IsInf(cfg.SlowFactor, 1)):
		return MeasureReport{}, fmt.Errorf("simnet: %w: slow factor %v must be at least 1", gossip.ErrInvalidConfig, cfg.SlowFactor)
	case cfg.Pause < 0 || cfg.Window < 0 || cfg.Limit < 0:
		return MeasureReport{}, fmt.Errorf("simnet: %w: negative pause, window or limit", gossip.ErrInvalidConfig)
	}
	if cfg.SlowFactor == 0 {
		cfg.SlowFactor = 10
	}
	if cfg.Window == 0 {
		cfg.Window = 30 * time.Millisecond
	}
	rep := MeasureReport{}
	var sumMsgs, sumTime float64
	for r := range cfg.Runs {
		if err := ctx.Err(); err != nil {
			return rep, fmt.Errorf("simnet: measure: %w", err)
		}
		run, err := measureOne(ctx, cfg, cfg.Net.Seed+uint64(r))
		if err != nil {
			return rep, err
		}
		if err := ctx.Err(); err != nil {
			// The run was cut short: its figures are not an operation's.
			return rep, fmt.Errorf("simnet: measure: %w", err)
		}
		rep.Runs++
		if run.failedMembers > 0 {
			rep.Failed++
		}
		rep.FailedMembers += run.failedMembers
		rep.Wrong += run.wrong
		rep.FalseDeaths += run.falseDeaths
		rep.Crashed += run.crashed
		rep.SlowMembers += run.slow
		rep.MaxMsgs = max(rep.MaxMsgs, run.maxMsgs)
		rep.Events += run.events
		sumMsgs += run.msgsPerNode
		sumTime += float64(run.time)
		rep.MsgsPerNode = sumMsgs / float64(rep.Runs)
		avg := time.Duration(sumTime / float64(rep.Runs))
		rep.TimeMS = avg.Seconds() * 1e3
		rep.TimeL = float64(avg) / float64(run.latency)
		rep.LatencyUS = float64(run.latency) / float64(time.Microsecond)
		if cfg.Progress != nil {
			cfg.Progress(r+1, cfg.Runs)
		}
	}
	return rep, nil
}

type measured struct {
	failedMembers, wrong, falseDeaths, crashed, slow, maxMsgs, events int
	msgsPerNode                                                       float64
	time, latency                                                     time.Duration
}

func measureOne(ctx context.Context, cfg MeasureConfig, seed uint64) (measured, error) {
	nc := cfg.Net
	nc.Seed = seed
	net, err := New(nc)
	if err != nil {
		return measured{}, err
	}
	net.Stop = ctx.Done()
	nc = net.cfg // with the defaults filled in
	limit := cfg.Limit
	if limit == 0 {
		limit = 60 * nc.Suspect
	}
	pause := cfg.Pause
	if pause == 0 {
		pause = nc.Suspect / 5
	}
	n := nc.Nodes
	rng := rand.New(rand.NewPCG(seed, 0x3ea5))
	inputs := make([][]float64, n)
	for i := range inputs {
		inputs[i] = []float64{float64(1 + rng.IntN(1000))}
	}
	// Victims are drawn without replacement from one permutation: the
	// crashed first (the root always among them), then the slow.
	perm := rng.Perm(n)
	if i := slices.Index(perm, 0); i > 0 {
		perm[0], perm[i] = perm[i], perm[0]
	}
	nCrash := int(math.Round(cfg.Crash * float64(n)))
	if cfg.Crash > 0 {
		nCrash = max(nCrash, 1)
	}
	nSlow := int(math.Round(cfg.Slow * float64(n)))
	if nCrash+nSlow >= n {
		return measured{}, fmt.Errorf("simnet: %w: %d crashed and %d slow members leave none of %d", gossip.ErrInvalidConfig, nCrash, nSlow, n)
	}
	at := func() time.Duration { return time.Duration(rng.Int64N(int64(cfg.Window))) }
	crashed := make([]bool, n)
	if nCrash > 0 {
		for _, j := range perm[:nCrash] {
			crashed[j] = true
			net.Crash(gossip.NodeID(j), at())
		}
	} else {
		perm = perm[1:] // member 0 is not special without crashes
	}
	for _, j := range perm[nCrash : nCrash+nSlow] {
		net.Slow(gossip.NodeID(j), cfg.SlowFactor)
		net.Pause(gossip.NodeID(j), at(), pause)
	}
	e0 := net.Events
	outs := net.Run(1, inputs, nil, limit)
	got := measured{crashed: nCrash, slow: nSlow, events: net.Events - e0, time: net.Now(), latency: nc.Latency}
	got.wrong = len(member.Check(n, 1, inputs, outs, nc.Epsilon))
	if nc.Extremes {
		got.wrong += len(member.CheckExtremes(n, 1, inputs, outs))
	}
	wronglyDead := make([]bool, n)
	for id, o := range outs {
		if crashed[id] {
			continue
		}
		if o.Err != nil {
			got.failedMembers++
			if errors.Is(o.Err, member.ErrExcluded) {
				wronglyDead[id] = true
			}
			continue
		}
		for _, a := range o.Result.Absent {
			if !crashed[a] {
				wronglyDead[a] = true
			}
		}
	}
	// A member that never crashed and never ended the operation also
	// failed it (Run gives up for those still at it, so this is rare).
	for i := range n {
		if _, ok := outs[gossip.NodeID(i)]; !ok && !crashed[i] {
			got.failedMembers++
		}
	}
	total := 0
	for i := range n {
		if wronglyDead[i] {
			got.falseDeaths++
		}
		s := net.Sent(gossip.NodeID(i))
		total += s
		got.maxMsgs = max(got.maxMsgs, s)
	}
	got.msgsPerNode = float64(total) / float64(n)
	return got, nil
}
