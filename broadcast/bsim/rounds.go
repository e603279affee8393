package bsim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gossipreduce/gossipreduce/broadcast"
	"github.com/gossipreduce/gossipreduce/broadcast/internal/pick"
	"github.com/gossipreduce/gossipreduce/gossip"
)

// roundStream is the PCG stream of a round-model run: apart from the
// failure draw's 1<<63 and the LogP engines' per-process streams (process
// numbers, below 2^28), so the round model never shares their numbers.
const roundStream = 1 << 62

// DreznerBarakRounds returns ⌈1.639·log₂ N⌉, the number of unsynchronized
// gossip rounds after which Drezner and Barak show that every process is
// reached with high probability, the bound corrected gossip (III) quotes
// before its "N = 1,000 and T = 17" example: 17 for N = 1000. It returns 0
// for N < 2.
func DreznerBarakRounds(n int) int {
	if n < 2 {
		return 0
	}
	return int(math.Ceil(1.639 * math.Log2(float64(n))))
}

// RoundSimulator simulates gossip alone in rounds rather than LogP time:
// the model of corrected gossip's sentence "for N = 1,000 and T = 17, the
// gossip colors all the nodes only 95.1 % of the time". The root starts
// colored; in every one of T rounds every live colored process pushes the
// value to one other process chosen uniformly at random, and a live process
// it reaches is colored. Two orders are offered:
//
//   - unsynchronized (the paper's): in each round the processes act one by
//     one in a fresh uniformly random order, so a process colored earlier
//     in a round pushes in that same round when its turn comes later;
//   - synchronous: every process colored before the round pushes once, and
//     what the round colors counts only from the next round.
//
// Times in its Results are rounds: ColoringLatency is the round in which
// the last colored live process was colored (0 if only the root is),
// Quiescence is T, and GMax is the longest run of uncolored processes on
// the ring after T rounds. There is no correction. Runs are replayable: all
// draws come from rand.NewPCG(seed, 1<<62). Use one RoundSimulator per
// goroutine.
type RoundSimulator struct {
	n       int32
	rounds  int
	sync    bool
	colorAt []int32 // round colored, -1 never
	order   []int32 // the acting order of the current round
	dead    []bool
	colored []bool // scratch for GMax
}

// NewRoundSimulator returns a round-model simulator of plan, which must be
// gossip without correction; its gossip time T is the number of rounds.
// synchronous selects synchronous rounds instead of the paper's
// unsynchronized ones.
func NewRoundSimulator(plan *broadcast.Plan, synchronous bool) (*RoundSimulator, error) {
	if err := roundsSupported(plan); err != nil {
		return nil, err
	}
	n := plan.Nodes()
	t, _ := plan.GossipTime()
	return &RoundSimulator{
		n:       int32(n),
		rounds:  int(t),
		sync:    synchronous,
		colorAt: make([]int32, n),
		order:   make([]int32, n),
		dead:    make([]bool, n),
		colored: make([]bool, n),
	}, nil
}

// roundsSupported reports why the round model cannot simulate plan, if it
// cannot: it knows gossip alone.
func roundsSupported(plan *broadcast.Plan) error {
	if plan == nil {
		return fmt.Errorf("bsim: %w: round model without a plan", gossip.ErrInvalidConfig)
	}
	spec := plan.Spec()
	if spec.Scheme.Kind != broadcast.SchemeGossip || spec.Correction.Kind != broadcast.CorrectionNone {
		return fmt.Errorf("bsim: %w: the round model simulates gossip with correction none, not %s with %s", gossip.ErrInvalidConfig, spec.Scheme, spec.Correction)
	}
	return nil
}

// Run simulates one broadcast with the processes marked in dead failed
// before the start (nil for none; never the root) and all random draws
// from seed. It fills ColorAt and GNodes (the processes colored after T
// rounds) when detail is set.
func (s *RoundSimulator) Run(ctx context.Context, dead []bool, seed uint64, detail bool) (Result, error) {
	if err := checkDead(dead, int(s.n)); err != nil {
		return Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if dead == nil {
		clear(s.dead)
	} else {
		copy(s.dead, dead)
	}
	for v := range s.colorAt {
		s.colorAt[v] = -1
		s.order[v] = int32(v)
	}
	s.colorAt[0] = 0
	src := rand.NewPCG(seed, roundStream)
	var msgs int64
	for r := int32(1); r <= int32(s.rounds); r++ {
		if s.sync {
			msgs += s.syncRound(src, r)
		} else {
			msgs += s.unsyncRound(src, r)
		}
	}
	return s.result(seed, msgs, detail), nil
}

// unsyncRound plays round r in a fresh random order (Fisher-Yates over the
// previous round's order); a process acts if it is colored when its turn
// comes.
func (s *RoundSimulator) unsyncRound(src rand.Source, r int32) int64 {
	ord := s.order
	for i := len(ord) - 1; i > 0; i-- {
		j := int(pick.Uniform(src, uint64(i+1)))
		ord[i], ord[j] = ord[j], ord[i]
	}
	var msgs int64
	for _, v := range ord {
		if s.colorAt[v] >= 0 && !s.dead[v] {
			s.push(src, v, r)
			msgs++
		}
	}
	return msgs
}

// syncRound plays round r synchronously: the processes colored before it
// push, in process order (the order does not matter, as nothing colored
// in the round pushes in it).
func (s *RoundSimulator) syncRound(src rand.Source, r int32) int64 {
	var msgs int64
	for v := range s.n {
		if c := s.colorAt[v]; c >= 0 && c < r && !s.dead[v] {
			s.push(src, v, r)
			msgs++
		}
	}
	return msgs
}

// push sends from v to a uniformly chosen other process in round r.
func (s *RoundSimulator) push(src rand.Source, v, r int32) {
	to := pick.Other(src, s.n, v)
	if s.colorAt[to] < 0 && !s.dead[to] {
		s.colorAt[to] = r
	}
}

func (s *RoundSimulator) result(seed uint64, msgs int64, detail bool) Result {
	n := int(s.n)
	r := Result{Seed: seed, Quiescence: int64(s.rounds), CorrectionStart: -1, CorrectionLatency: -1, Msgs: msgs}
	if detail {
		r.ColorAt = make([]int64, n)
		r.GNodes = make([]bool, n)
	}
	for v := 0; v < n; v++ {
		c := s.colorAt[v]
		s.colored[v] = c >= 0
		if detail {
			r.ColorAt[v] = int64(c)
			r.GNodes[v] = c >= 0
		}
		switch {
		case s.dead[v]:
			r.Dead++
		case c < 0:
			r.Uncolored++
		default:
			r.ColoringLatency = max(r.ColoringLatency, int64(c))
		}
	}
	r.GMax = gapMax(s.colored)
	return r
}
