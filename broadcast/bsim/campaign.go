package bsim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gossipreduce/gossipreduce/broadcast"
	"github.com/gossipreduce/gossipreduce/broadcast/internal/pick"
	"github.com/gossipreduce/gossipreduce/gossip"
)

// Engine selects the simulator of a campaign.
type Engine uint8

// Engines.
const (
	// EngineAuto uses the fast engine when it supports the plan and the
	// campaign has no failures during the run, the machines otherwise.
	EngineAuto Engine = iota
	// EngineFast insists on the fast engine.
	EngineFast
	// EngineMachines drives one broadcast.Machine per process (SimulateMachines).
	EngineMachines
	// EngineRounds simulates gossip alone in unsynchronized rounds, the
	// model of corrected gossip's 95.1 % example (RoundSimulator); the
	// plan's gossip time is the number of rounds.
	EngineRounds
	// EngineSyncRounds simulates gossip alone in synchronous push rounds
	// (RoundSimulator with synchronous set).
	EngineSyncRounds
)

// String returns "auto", "fast" or "machines".
func (e Engine) String() string {
	switch e {
	case EngineAuto:
		return "auto"
	case EngineFast:
		return "fast"
	case EngineMachines:
		return "machines"
	case EngineRounds:
		return "rounds"
	case EngineSyncRounds:
		return "sync-rounds"
	}
	return fmt.Sprintf("engine(%d)", uint8(e))
}

// ParseEngine reads "auto", "fast", "machines", "rounds" or
// "sync-rounds".
func ParseEngine(s string) (Engine, error) {
	switch s {
	case "auto", "":
		return EngineAuto, nil
	case "fast":
		return EngineFast, nil
	case "machines", "reference":
		return EngineMachines, nil
	case "rounds":
		return EngineRounds, nil
	case "sync-rounds":
		return EngineSyncRounds, nil
	}
	return 0, fmt.Errorf("bsim: %w: engine %q (want auto, fast, machines, rounds or sync-rounds)", gossip.ErrInvalidConfig, s)
}

// Campaign is a series of simulated broadcasts of one plan with random
// failures. Run i uses the seed Seed+i: it chooses the failed processes
// (from rand.NewPCG(Seed+i, 1<<63)) and the gossip targets (process v
// draws from rand.NewPCG(Seed+i, v); the round model draws everything from
// rand.NewPCG(Seed+i, 1<<62)), so "--seed Seed+i --runs 1" replays run i
// alone.
type Campaign struct {
	Plan *broadcast.Plan
	// Faults is the number of processes (never the root) failed before
	// the start, chosen uniformly at random for every run.
	Faults int
	// OnlineFaults is the number of further live processes that fail
	// during the run, each at a time uniform in [0, Q), Q the quiescence
	// latency of the same run without them. Needs the machine engine.
	OnlineFaults int
	Runs         int
	Seed         uint64
	// Workers run in parallel; zero means GOMAXPROCS.
	Workers int
	Engine  Engine
	// Keep makes the summary hold every run's Result.
	Keep bool
	// Progress, if set, is called after each run with the number done;
	// calls may come from several goroutines.
	Progress func(done int)
}

// Dist summarises one metric over the runs: nearest-rank percentiles
// (the smallest value with at least that fraction of runs at or below it),
// the maximum and the mean.
type Dist struct {
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
	// MaxRun is the index of the first run that reached Max.
	MaxRun int `json:"max_run"`
}

// Percentile returns the nearest-rank q-quantile (0 < q ≤ 1) of sorted.
func Percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// NewDist summarises xs (in run order).
func NewDist(xs []float64) Dist {
	if len(xs) == 0 {
		return Dist{P50: math.NaN(), P99: math.NaN(), P999: math.NaN(), Max: math.NaN(), Mean: math.NaN(), MaxRun: -1}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	d := Dist{P50: Percentile(s, 0.5), P99: Percentile(s, 0.99), P999: Percentile(s, 0.999), Max: s[len(s)-1], Mean: sum / float64(len(xs))}
	d.MaxRun = slices.Index(xs, d.Max)
	return d
}

// Summary is the outcome of a campaign.
type Summary struct {
	Runs   int
	Engine Engine
	Seed   uint64
	// Coloring, Quiescence and Correction (the latency from the
	// synchronized correction start to quiescence, L_SCC) in time units.
	Coloring, Quiescence, Correction Dist
	// GMax is the maximum gap after dissemination.
	GMax Dist
	// Msgs and CorrectionMsgs are messages per process (total / N).
	Msgs, CorrectionMsgs Dist
	// Uncolored counts live processes never colored, per run.
	Uncolored Dist
	// UncoloredRuns counts runs that left a live process uncolored.
	UncoloredRuns int
	// Undelivered and UndeliveredRuns count fail-proof c-nodes that never
	// delivered.
	Undelivered     Dist
	UndeliveredRuns int
	// Participants counts processes that sent correction messages.
	Participants Dist
	// SOSRuns counts runs where fail-proof correction fell back to SOS.
	SOSRuns int
	// Results holds every run when Campaign.Keep is set.
	Results []Result
}

// Run executes the campaign.
func (c Campaign) Run(ctx context.Context) (Summary, error) {
	if c.Plan == nil {
		return Summary{}, fmt.Errorf("bsim: %w: campaign without a plan", gossip.ErrInvalidConfig)
	}
	n := c.Plan.Nodes()
	if c.Runs < 1 {
		return Summary{}, fmt.Errorf("bsim: %w: %d runs", gossip.ErrInvalidConfig, c.Runs)
	}
	if c.Faults < 0 || c.OnlineFaults < 0 || c.Faults+c.OnlineFaults > n-1 {
		return Summary{}, fmt.Errorf("bsim: %w: %d + %d failures among %d processes (the root never fails)", gossip.ErrInvalidConfig, c.Faults, c.OnlineFaults, n)
	}
	engine := c.Engine
	fast := FastSupported(c.Plan) && c.OnlineFaults == 0
	switch engine {
	case EngineAuto:
		engine = EngineMachines
		if fast {
			engine = EngineFast
		}
	case EngineFast:
		if !fast {
			spec := c.Plan.Spec()
			return Summary{}, fmt.Errorf("bsim: %w: the fast engine does not run %s with %s and failures during the run", gossip.ErrInvalidConfig, spec.Scheme, spec.Correction)
		}
	case EngineMachines:
	case EngineRounds, EngineSyncRounds:
		if err := roundsSupported(c.Plan); err != nil {
			return Summary{}, err
		}
		if c.OnlineFaults > 0 {
			return Summary{}, fmt.Errorf("bsim: %w: the round model has no failures during the run", gossip.ErrInvalidConfig)
		}
	default:
		return Summary{}, fmt.Errorf("bsim: %w: engine %d", gossip.ErrInvalidConfig, engine)
	}
	workers := c.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, c.Runs)
	results := make([]Result, c.Runs)
	var next, done atomic.Int64
	var firstErr error
	var errOnce sync.Once
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sim, err := newRunner(c.Plan, engine)
			if err != nil {
				errOnce.Do(func() { firstErr = err })
				cancel()
				return
			}
			var dead []bool
			for {
				i := int(next.Add(1) - 1)
				if i >= c.Runs || ctx.Err() != nil {
					return
				}
				r, err := c.one(ctx, sim, uint64(i)+c.Seed, &dead)
				if err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("run %d (seed %d): %w", i, c.Seed+uint64(i), err) })
					cancel()
					return
				}
				results[i] = r
				d := done.Add(1)
				if c.Progress != nil {
					c.Progress(int(d))
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return Summary{}, firstErr
	}
	if err := ctx.Err(); err != nil {
		return Summary{}, err
	}
	s := summarize(results, n)
	s.Engine, s.Seed = engine, c.Seed
	if c.Keep {
		s.Results = results
	}
	return s, nil
}

// runner is an engine that keeps its buffers between runs: the fast engine
// or the round model.
type runner interface {
	Run(ctx context.Context, dead []bool, seed uint64, detail bool) (Result, error)
}

// newRunner returns the reusable engine of a worker, or nil for the
// machines, which build their state afresh each run.
func newRunner(plan *broadcast.Plan, e Engine) (runner, error) {
	switch e {
	case EngineFast:
		return NewSimulator(plan)
	case EngineRounds, EngineSyncRounds:
		return NewRoundSimulator(plan, e == EngineSyncRounds)
	}
	return nil, nil
}

// one runs the broadcast of seed.
func (c Campaign) one(ctx context.Context, sim runner, seed uint64, dead *[]bool) (Result, error) {
	n := c.Plan.Nodes()
	src := rand.NewPCG(seed, 1<<63)
	d, err := drawDead(src, n, c.Faults, *dead)
	if err != nil {
		return Result{}, err
	}
	*dead = d
	if sim != nil {
		return sim.Run(ctx, d, seed, false)
	}
	fails := Failures{Dead: d}
	if c.OnlineFaults == 0 {
		return SimulateMachines(ctx, c.Plan, fails, seed, false)
	}
	base, err := SimulateMachines(ctx, c.Plan, fails, seed, false)
	if err != nil {
		return Result{}, err
	}
	fails.FailAt = make([]int64, n)
	for v := range fails.FailAt {
		fails.FailAt[v] = math.MaxInt64
	}
	live := make([]int32, 0, n)
	for v := 1; v < n; v++ {
		if !d[v] {
			live = append(live, int32(v))
		}
	}
	for k := 0; k < c.OnlineFaults; k++ {
		j := k + int(pick.Uniform(src, uint64(len(live)-k)))
		live[k], live[j] = live[j], live[k]
		fails.FailAt[live[k]] = int64(pick.Uniform(src, uint64(max(base.Quiescence, 1))))
	}
	return SimulateMachines(ctx, c.Plan, fails, seed, false)
}

func summarize(rs []Result, n int) Summary {
	s := Summary{Runs: len(rs)}
	col := func(f func(Result) float64) Dist {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = f(r)
		}
		return NewDist(xs)
	}
	s.Coloring = col(func(r Result) float64 { return float64(r.ColoringLatency) })
	s.Quiescence = col(func(r Result) float64 { return float64(r.Quiescence) })
	s.Correction = col(func(r Result) float64 { return float64(r.CorrectionLatency) })
	s.GMax = col(func(r Result) float64 { return float64(r.GMax) })
	s.Msgs = col(func(r Result) float64 { return float64(r.Msgs) / float64(n) })
	s.CorrectionMsgs = col(func(r Result) float64 { return float64(r.CorrectionMsgs) / float64(n) })
	s.Uncolored = col(func(r Result) float64 { return float64(r.Uncolored) })
	s.Undelivered = col(func(r Result) float64 { return float64(r.Undelivered) })
	s.Participants = col(func(r Result) float64 { return float64(r.Participants) })
	for _, r := range rs {
		if r.Uncolored > 0 {
			s.UncoloredRuns++
		}
		if r.Undelivered > 0 {
			s.UndeliveredRuns++
		}
		if r.SOS {
			s.SOSRuns++
		}
	}
	return s
}
