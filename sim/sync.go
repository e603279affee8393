package sim

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"runtime"
	"sync"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// DefaultMaxRounds is the round limit [RunSync] applies when
// [SyncConfig.MaxRounds] is zero. A hypercube of 2^20 nodes needs about 400
// rounds to reach ε = 1e-13; a ring of N nodes needs of the order of N²
// rounds, so long rings need an explicit, larger limit.
const DefaultMaxRounds = 100_000

// defaultChunkBits sets the chunk of 2^14 nodes the Jacobi mode works on (see
// [RunSync]): its round-start and next-round states take 2 × 256 KiB, which
// stays in a core's L2 cache while the chunk's in-chunk sends are applied.
const defaultChunkBits = 14

// SyncConfig configures [RunSync], the synchronous-round Push-Sum simulator.
type SyncConfig struct {
	// Overlay gives every node's neighbours. Required; every node needs at
	// least one neighbour. An overlay with a method Dim() int whose Len() is
	// 2^Dim() and whose Neighbor(v, k) is v XOR 2^k (the hypercube) takes a
	// fast path that computes neighbours without calling the overlay.
	Overlay gossip.Neighborhood
	// Epsilon is the target accuracy: the run stops once every node's
	// relative error (thesis, equation 4.1) is ≤ Epsilon. 0 < Epsilon < 1.
	// Below about 1e-15 rounding may keep a run from ever getting there; it
	// then stops at MaxRounds.
	Epsilon float64
	// MaxRounds bounds the number of rounds; 0 selects DefaultMaxRounds.
	MaxRounds int
	// Seed determines the inputs and every neighbour choice: the same seed
	// and overlay give the same run, whatever Workers is.
	Seed uint64
	// Workers is the number of goroutines of the Jacobi mode; 0 selects
	// runtime.GOMAXPROCS(0). The result does not depend on it. Sequential
	// runs use one.
	Workers int
	// Sequential selects the thesis's own simulator, Algorithm 7 as printed:
	// in each round, nodes 0, 1, …, N-1 in turn halve their pair and add the
	// half to a neighbour's pair in place (Gauss-Seidel). The default is the
	// synchronous rounds of Algorithm 2 (Jacobi), where every send of a round
	// uses the state at the start of the round.
	Sequential bool
	// Progress, if set, is called from the goroutine that called RunSync
	// once for every round r = 0, 1, … whose state has been measured, with
	// the largest relative error over all nodes after r rounds (r = 0 is the
	// inputs). In Sequential mode the error of a round r ≥ 1 is the residual
	// of Algorithm 7, line 10 (see RunSync).
	Progress func(round int, maxRelErr float64)

	// chunkBits overrides defaultChunkBits when positive; tests shrink it
	// so that small overlays span several chunks and workers.
	chunkBits uint
}

// SyncResult is the outcome of [RunSync].
type SyncResult struct {
	// Rounds is the number of rounds after which the run stopped.
	Rounds int
	// Converged reports whether every node was within Epsilon after Rounds
	// rounds.
	Converged bool
	// MaxRelError is the largest relative error over all nodes after Rounds
	// rounds, |x_i/w_i - α| / |α| (the absolute error if α = 0; +Inf if some
	// estimate is NaN).
	MaxRelError float64
	// Aggregate is α, the exact average of the inputs (compensated sum).
	Aggregate float64
	// Seed is the seed the run used; SyncConfig{Seed: Seed} replays it.
	Seed uint64
	// Nodes is N.
	Nodes int
	// Workers is the number of goroutines that did the rounds: 1 in
	// Sequential mode, otherwise Workers capped by the number of chunks.
	Workers int
	// Hypercube reports whether the hypercube fast path was taken.
	Hypercube bool
	// StateBytes is the memory the run held for its state at its peak:
	// node pairs plus the buffers of sends between chunks.
	StateBytes int64
}

// RunSync simulates Push-Sum in average mode on scalar data in synchronous
// rounds, for up to billions of nodes, and reports how many rounds it took
// until every node's estimate is ε-accurate.
//
// Node i starts with x_i drawn uniformly from [0, 1) and w_i = 1. In every
// round every node halves its pair (x_i, w_i) and sends the half to a
// neighbour chosen uniformly at random; its estimate is y_i = x_i / w_i. The
// exact aggregate α = Σ x_i / N is computed once with Neumaier's compensated
// sum, and the run stops after the first round whose state has every
// |y_i - α| / |α| ≤ Epsilon, after MaxRounds rounds, or when ctx is done.
// Running out of rounds is not an error (Converged is false); a cancelled
// context returns the partial result with ctx.Err() wrapped.
//
// # Randomness
//
// Inputs and neighbour choices come from a counter-based hash (a splitmix64
// finaliser) of (seed, round, node), not from a sequential generator: any
// worker can draw node i's choice of round r on its own, so the run is the
// same whatever the number of workers. Neighbour k of node i is taken with
// k = ⌊h · degree / 2^64⌋ for the 64-bit hash h. bench/alg7/alg7.c draws
// the same numbers, so its Algorithm 7 loop and Sequential mode can be
// checked against each other round for round.
//
// # Jacobi mode (default)
//
// The state is two arrays of interleaved (x, w) pairs, 16 bytes per node
// each: the round-start state, read only during the round, and the next
// state. Nodes are split into chunks of 2^14 nodes, and the chunks into
// contiguous ranges, one per worker. A round has two phases separated by a
// barrier. In the first, each worker walks its chunks in order; node i
// measures its round-start estimate (this is the convergence check, fused
// into the pass, so the error after round r is known during round r+1 and
// the run stops having done the first phase of one extra round), adds its
// half to its own next pair, and sends the other half: straight into the
// next pair if the target lies in the same chunk, otherwise it records the
// pair (sender, target) in a buffer per destination worker. In the second
// phase each worker applies the buffered sends aimed at its own chunks, in
// the order of the sending workers. Each next pair is therefore the sum,
// from zero, of the sends from its own chunk in increasing sender order
// followed by the sends from other chunks in increasing sender order: an
// order fixed by the chunk size, not by the number of workers, so the
// floating-point results are bit-identical for any Workers. Memory: 32
// bytes per node plus 8 bytes per cross-chunk send (at most N per round,
// about 30% of N on a 2^20 hypercube), with slack for buffer growth.
//
// # Sequential mode
//
// Algorithm 7 (thesis, appendix A.1) as printed, in place, 16 bytes per
// node: for i = 0 … N-1 in order, node i draws j, halves its pair, adds the
// half to j's pair and records y_i = x_i / w_i; after the sweep the residual
// is max_i |y_i - α| / |α|. A node may still receive after its own turn, so
// that residual describes each node at its turn, not the state at the end of
// the round. When the residual is ≤ Epsilon, one extra pass measures the
// end-of-round state, and the run stops only if that too is within Epsilon,
// so a converged result is always ε-accurate as reported. Gauss-Seidel
// mixing uses values sent earlier in the same round and usually needs fewer
// rounds than Jacobi.
func RunSync(ctx context.Context, cfg SyncConfig) (SyncResult, error) {
	s, err := newSyncRun(cfg)
	if err != nil {
		return SyncResult{}, err
	}
	return s.run(ctx)
}

// pair is a node's (x, w), interleaved for locality.
type pair [2]float64

// syncRun holds one run's validated configuration and state.
type syncRun struct {
	cfg       SyncConfig
	g         gossip.Neighborhood
	n         int
	dim       int // hypercube dimension, or 0 for the generic path
	maxRounds int
	workers   int
	chunkBits uint
	base      uint64 // key derived from the seed

	alpha float64 // exact aggregate
	scale float64 // |α|, or 1 when α = 0 (absolute error, as gossip.RelError)

	cur, next []pair // round-start and next state (Jacobi); cur only (Sequential)
	chunkLo   []int  // worker w owns chunks [chunkLo[w], chunkLo[w+1])
	owner     []int32
	bufs      [][][]uint64 // bufs[from][to]: (sender<<32 | target) of cross-chunk sends
	stats     []workerStat
}

// workerStat is one worker's findings in a pass, padded to a cache line so
// that workers do not share one.
type workerStat struct {
	maxAbs  float64 // max |y_i - α|, NaN if some y_i is NaN
	bad     bool    // the overlay returned an invalid neighbour or degree
	badNode int
	badTo   int // the neighbour returned, or -1 for a degree ≤ 0
	_       [32]byte
}

// hypercubeOverlay is what the fast path asks of an overlay.
type hypercubeOverlay interface{ Dim() int }

func newSyncRun(cfg SyncConfig) (*syncRun, error) {
	if cfg.Overlay == nil {
		return nil, fmt.Errorf("sim: %w: no overlay", gossip.ErrInvalidConfig)
	}
	n := cfg.Overlay.Len()
	if n < 1 {
		return nil, fmt.Errorf("sim: %w: overlay has %d nodes", gossip.ErrInvalidConfig, n)
	}
	if uint64(n) > 1<<32 {
		return nil, fmt.Errorf("sim: %w: %d nodes exceed the 2^32 node ids", gossip.ErrInvalidConfig, n)
	}
	if !(cfg.Epsilon > 0 && cfg.Epsilon < 1) {
		return nil, fmt.Errorf("sim: %w: epsilon %v must lie in (0, 1)", gossip.ErrInvalidConfig, cfg.Epsilon)
	}
	if cfg.MaxRounds < 0 {
		return nil, fmt.Errorf("sim: %w: max rounds %d is negative", gossip.ErrInvalidConfig, cfg.MaxRounds)
	}
	if cfg.Workers < 0 {
		return nil, fmt.Errorf("sim: %w: workers %d is negative", gossip.ErrInvalidConfig, cfg.Workers)
	}
	s := &syncRun{
		cfg:       cfg,
		g:         cfg.Overlay,
		n:         n,
		maxRounds: cfg.MaxRounds,
		chunkBits: defaultChunkBits,
		base:      mix64(cfg.Seed ^ seedSalt),
	}
	if s.maxRounds == 0 {
		s.maxRounds = DefaultMaxRounds
	}
	if cfg.chunkBits > 0 {
		s.chunkBits = min(cfg.chunkBits, 32)
	}
	s.dim = hypercubeDim(cfg.Overlay, n)
	if s.dim == 0 {
		for v := range n {
			if d := cfg.Overlay.Degree(gossip.NodeID(v)); d < 1 {
				return nil, fmt.Errorf("sim: %w: node %d has degree %d, every node needs a neighbour",
					gossip.ErrInvalidConfig, v, d)
			}
		}
	}
	s.workers = 1
	if !cfg.Sequential {
		w := cfg.Workers
		if w == 0 {
			w = runtime.GOMAXPROCS(0)
		}
		chunks := s.chunkOf(n-1) + 1
		s.workers = min(w, chunks)
		s.chunkLo = make([]int, s.workers+1)
		s.owner = make([]int32, chunks)
		for k := range s.workers {
			s.chunkLo[k+1] = (k + 1) * chunks / s.workers
			for c := s.chunkLo[k]; c < s.chunkLo[k+1]; c++ {
				s.owner[c] = int32(k)
			}
		}
		s.bufs = make([][][]uint64, s.workers)
		for k := range s.bufs {
			s.bufs[k] = make([][]uint64, s.workers)
		}
	}
	s.stats = make([]workerStat, s.workers)
	return s, nil
}

// hypercubeDim returns d when g is the 2^d-node hypercube with neighbour k
// of v being v XOR 2^k, checked on a few nodes, and 0 otherwise.
func hypercubeDim(g gossip.Neighborhood, n int) int {
	h, ok := g.(hypercubeOverlay)
	if !ok {
		return 0
	}
	d := h.Dim()
	if d < 1 || d > 32 || uint64(n) != 1<<uint(d) {
		return 0
	}
	probe := []int{0, n - 1, n / 2, int(mix64(uint64(n)) % uint64(n))}
	for _, v := range probe {
		if g.Degree(gossip.NodeID(v)) != d {
			return 0
		}
		for k := range d {
			if int(g.Neighbor(gossip.NodeID(v), k)) != v^(1<<k) {
				return 0
			}
		}
	}
	return d
}

func (s *syncRun) chunkOf(i int) int { return i >> s.chunkBits }

// Randomness: splitmix64 streams keyed by the seed. Stream 0 draws the
// inputs, stream r ≥ 1 the neighbour choices of round r; value number i of a
// stream with key k is mix64(k + golden·(i+1)).
const (
	golden   = 0x9e3779b97f4a7c15
	seedSalt = 0x5eed5eed5eed5eed
)

// mix64 is the splitmix64 finaliser, a bijection on 64-bit words whose
// output bits all depend on all input bits.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// streamKey is the key of stream r (0: inputs, r ≥ 1: round r) of the run
// whose seed gave base.
func streamKey(base uint64, r int) uint64 { return mix64(base + golden*uint64(r)) }

// draw is value number i of the stream with key k.
func draw(k uint64, i int) uint64 { return mix64(k + golden*uint64(i+1)) }

// input is node i's x_i, uniform on [0, 1) with 53 random bits.
func input(k uint64, i int) float64 { return float64(draw(k, i)>>11) * 0x1p-53 }

// cubeBit is 2^k for the hypercube fast path's neighbour k = ⌊h · dim /
// 2^64⌋: node i sends to i XOR cubeBit(h, dim). It inlines into the loops.
func cubeBit(h, dim uint64) int {
	k, _ := bits.Mul64(h, dim)
	return 1 << (k & 63)
}

// neighbor is the overlay's neighbour k = ⌊h · degree / 2^64⌋ of node i,
// for the hash h of (seed, round, i). A generic overlay may answer with a
// node out of range, or a degree < 1, for which neighbor returns -1; the
// loops check the range.
func (s *syncRun) neighbor(h uint64, i int) int {
	deg := s.g.Degree(gossip.NodeID(i))
	if deg < 1 {
		return -1
	}
	k, _ := bits.Mul64(h, uint64(deg))
	return int(s.g.Neighbor(gossip.NodeID(i), int(k)))
}

// init allocates the state, draws the inputs and computes α, without a
// second array of inputs. Every input is an integer m_i < 2^53 times 2^-53,
// so Σ m_i (below 2^85) is summed exactly in 128 bits and α is Σ m_i ·
// 2^-53 / N correctly rounded: exact to half an ulp, tighter than any
// compensated sum of the x_i.
func (s *syncRun) init() {
	s.cur = make([]pair, s.n)
	if !s.cfg.Sequential {
		s.next = make([]pair, s.n)
	}
	k := streamKey(s.base, 0)
	var hi, lo uint64
	for i := range s.cur {
		x := input(k, i)
		s.cur[i] = pair{x, 1}
		m := uint64(x * 0x1p53) // exact
		var carry uint64
		lo, carry = bits.Add64(lo, m, 0)
		hi += carry
	}
	sum := new(big.Int).Lsh(new(big.Int).SetUint64(hi), 64)
	sum.Or(sum, new(big.Int).SetUint64(lo))
	num := new(big.Float).SetInt(sum)
	den := new(big.Float).SetInt64(int64(s.n))
	num.SetMantExp(num, -53) // exact: a power of two
	s.alpha, _ = new(big.Float).SetPrec(53).Quo(num, den).Float64()
	s.scale = math.Abs(s.alpha)
	if s.scale == 0 {
		s.scale = 1
	}
}

// relError turns max |y_i - α| into the relative error of equation 4.1,
// +Inf if some estimate was NaN (so that it never looks converged).
func (s *syncRun) relError(maxAbs float64) float64 {
	if math.IsNaN(maxAbs) {
		return math.Inf(1)
	}
	return maxAbs / s.scale
}

// measure is max |y_i - α| over a state, in one pass (NaN-sticky, as the
// builtin max is).
func (s *syncRun) measure(state []pair) (maxAbs float64) {
	alpha := s.alpha
	for _, p := range state {
		maxAbs = max(maxAbs, math.Abs(p[0]/p[1]-alpha))
	}
	return maxAbs
}

func (s *syncRun) result(rounds int, relErr float64) SyncResult {
	r := SyncResult{
		Rounds:      rounds,
		Converged:   relErr <= s.cfg.Epsilon,
		MaxRelError: relErr,
		Aggregate:   s.alpha,
		Seed:        s.cfg.Seed,
		Nodes:       s.n,
		Workers:     s.workers,
		Hypercube:   s.dim > 0,
		StateBytes:  int64(cap(s.cur)+cap(s.next)) * 16,
	}
	for _, row := range s.bufs {
		for _, b := range row {
			r.StateBytes += int64(cap(b)) * 8
		}
	}
	return r
}

func (s *syncRun) progress(round int, relErr float64) {
	if s.cfg.Progress != nil {
		s.cfg.Progress(round, relErr)
	}
}

// badOverlay reports the first invalid answer a worker got from the overlay.
func (s *syncRun) badOverlay() error {
	for _, st := range s.stats {
		if !st.bad {
			continue
		}
		if st.badTo < 0 {
			return fmt.Errorf("sim: %w: node %d has degree < 1", gossip.ErrInvalidConfig, st.badNode)
		}
		return fmt.Errorf("sim: %w: node %d has neighbour %d, out of range [0, %d)",
			gossip.ErrInvalidConfig, st.badNode, st.badTo, s.n)
	}
	return nil
}

func (s *syncRun) run(ctx context.Context) (SyncResult, error) {
	if err := ctx.Err(); err != nil {
		return SyncResult{Seed: s.cfg.Seed, Nodes: s.n}, fmt.Errorf("sim: %w", err)
	}
	s.init()
	if s.cfg.Sequential {
		return s.runSequential(ctx)
	}
	return s.runJacobi(ctx)
}

// stop decides, after round r has been measured, whether the run ends:
// done with a nil error for convergence or the round limit, done with an
// error for a cancelled context.
func (s *syncRun) stop(ctx context.Context, r int, relErr float64) (done bool, err error) {
	if relErr <= s.cfg.Epsilon || r >= s.maxRounds {
		return true, nil
	}
	if err := ctx.Err(); err != nil {
		return true, fmt.Errorf("sim: stopped after %d rounds: %w", r, err)
	}
	return false, nil
}

// parallel runs f(0), …, f(workers-1), f(0) on the calling goroutine.
func (s *syncRun) parallel(f func(w int)) {
	if s.workers == 1 {
		f(0)
		return
	}
	var wg sync.WaitGroup
	for w := 1; w < s.workers; w++ {
		wg.Go(func() { f(w) })
	}
	f(0)
	wg.Wait()
}

func (s *syncRun) runJacobi(ctx context.Context) (SyncResult, error) {
	for r := 1; ; r++ {
		rk := streamKey(s.base, r)
		s.parallel(func(w int) { s.scatter(w, rk) })
		if err := s.badOverlay(); err != nil {
			return s.result(r-1, math.Inf(1)), err
		}
		var maxAbs float64
		for _, st := range s.stats {
			maxAbs = max(maxAbs, st.maxAbs)
		}
		relErr := s.relError(maxAbs)
		s.progress(r-1, relErr)
		if done, err := s.stop(ctx, r-1, relErr); done {
			return s.result(r-1, relErr), err
		}
		s.parallel(s.gather)
		s.cur, s.next = s.next, s.cur
	}
}

// scatter is the first phase of a Jacobi round for worker w: measure each
// round-start estimate, keep half, send half within the chunk directly and
// buffer sends that leave the chunk.
func (s *syncRun) scatter(w int, rk uint64) {
	st := &s.stats[w]
	*st = workerStat{}
	out := s.bufs[w]
	for k := range out {
		out[k] = out[k][:0]
	}
	cur, next, alpha, cb, dim := s.cur, s.next, s.alpha, s.chunkBits, uint64(s.dim)
	maxAbs := 0.0
	for c := s.chunkLo[w]; c < s.chunkLo[w+1]; c++ {
		lo := c << cb
		hi := min(lo+1<<cb, s.n)
		clear(next[lo:hi])
		for i := lo; i < hi; i++ {
			p := cur[i]
			maxAbs = max(maxAbs, math.Abs(p[0]/p[1]-alpha))
			hx, hw := p[0]*0.5, p[1]*0.5
			next[i][0] += hx
			next[i][1] += hw
			h := draw(rk, i)
			t := i ^ cubeBit(h, dim)
			if dim == 0 {
				t = s.neighbor(h, i)
			}
			if uint(t) >= uint(len(next)) {
				if !st.bad {
					st.bad, st.badNode, st.badTo = true, i, t
				}
				continue
			}
			if t>>cb == c {
				next[t][0] += hx
				next[t][1] += hw
			} else {
				o := s.owner[t>>cb]
				out[o] = append(out[o], uint64(i)<<32|uint64(t))
			}
		}
	}
	st.maxAbs = maxAbs
}

// gather is the second phase of a Jacobi round for worker w: apply the
// buffered sends aimed at w's chunks, sending workers in order.
func (s *syncRun) gather(w int) {
	cur, next := s.cur, s.next
	for from := range s.bufs {
		for _, e := range s.bufs[from][w] {
			i, t := e>>32, uint32(e)
			next[t][0] += cur[i][0] * 0.5
			next[t][1] += cur[i][1] * 0.5
		}
	}
}

func (s *syncRun) runSequential(ctx context.Context) (SyncResult, error) {
	relErr := s.relError(s.measure(s.cur))
	s.progress(0, relErr)
	if done, err := s.stop(ctx, 0, relErr); done {
		return s.result(0, relErr), err
	}
	for r := 1; ; r++ {
		maxAbs, err := s.sweep(streamKey(s.base, r))
		if err != nil {
			return s.result(r-1, math.Inf(1)), err
		}
		residual := s.relError(maxAbs)
		if residual <= s.cfg.Epsilon {
			// Algorithm 7 would stop here; make sure the state at the end
			// of the round agrees.
			residual = s.relError(s.measure(s.cur))
		}
		s.progress(r, residual)
		if done, err := s.stop(ctx, r, residual); done {
			if residual > s.cfg.Epsilon {
				residual = s.relError(s.measure(s.cur))
			}
			return s.result(r, residual), err
		}
	}
}

// sweep is one round of Algorithm 7, lines 4 to 8, returning the residual's
// max |y_i - α| over the estimates as each node left its turn.
func (s *syncRun) sweep(rk uint64) (maxAbs float64, err error) {
	a, alpha, dim := s.cur, s.alpha, uint64(s.dim)
	for i := range a {
		h := draw(rk, i)
		t := i ^ cubeBit(h, dim)
		if dim == 0 {
			t = s.neighbor(h, i)
		}
		if uint(t) >= uint(len(a)) {
			s.stats[0] = workerStat{bad: true, badNode: i, badTo: t}
			return 0, s.badOverlay()
		}
		hx, hw := a[i][0]*0.5, a[i][1]*0.5
		a[i] = pair{hx, hw}
		a[t][0] += hx
		a[t][1] += hw
		// y_i = x_i / w_i after the send: hx / hw, also when t = i, since
		// doubling both halves leaves the quotient unchanged.
		maxAbs = max(maxAbs, math.Abs(hx/hw-alpha))
	}
	return maxAbs, nil
}
