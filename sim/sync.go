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
// [SyncConfig.MaxRounds] is zero. A hypercube of 2^20 nodes needs about 500
// Jacobi rounds to reach ε = 1e-13; a ring of N nodes needs of the order of
// N² rounds, so long rings need an explicit, larger limit.
const DefaultMaxRounds = 100_000

// Nodes are processed in chunks of 2^chunkBits (see [RunSync]): N/16
// nodes, so that there are 16 chunks to share among workers, but at least
// 2^minChunkBits and at most 2^maxChunkBits, whose round-start and next
// pairs take 2 × 1 MiB and stay in cache while the chunk's sends are
// added. The chunk size depends on N alone, never on the number of workers,
// which keeps runs bit-identical whatever that is.
const (
	minChunkBits = 10
	maxChunkBits = 16
)

// syncMaxNodes is the largest overlay RunSync accepts: 2^31 nodes, 64 GiB of
// state in Jacobi mode.
const syncMaxNodes = 1 << 31

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
	// once for every round r = 0, 1, … that was measured, with the largest
	// relative error over all nodes after r rounds (r = 0 is the inputs). In
	// Sequential mode the error of a round r ≥ 1 is the residual of
	// Algorithm 7, line 10 (see RunSync).
	Progress func(round int, maxRelErr float64)

	// chunkBits overrides the chunk size when positive; tests shrink it
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
	// Aggregate is α, the average of the inputs, rounded once from their
	// exact sum.
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
	// node pairs, targets and the lists of sends between chunks.
	StateBytes int64
}

// RunSync simulates Push-Sum in average mode on scalar data in synchronous
// rounds, for up to 2^31 nodes, and reports how many rounds it took until
// every node's estimate is ε-accurate.
//
// Node i starts with x_i drawn uniformly from [0, 1) and w_i = 1. In every
// round every node halves its pair (x_i, w_i) and sends the half to a
// neighbour chosen uniformly at random; its estimate is y_i = x_i / w_i.
// The exact aggregate α = Σ x_i / N is rounded once from the exact sum of
// the inputs (each is an integer times 2^-53, so the sum is an integer
// computed exactly). The run stops after the first round whose state has
// every |y_i - α| / |α| ≤ Epsilon, after MaxRounds rounds, or when ctx is
// done (checked once per round). Running out of rounds is not an error
// (Converged is false); a cancelled context returns the partial result with
// ctx.Err() wrapped.
//
// # Randomness
//
// Inputs and neighbour choices come from a counter-based hash of (seed,
// round, node), not from a sequential generator: any worker can draw node
// i's choice of round r on its own, so the run is the same whatever the
// number of workers. Round r's key is a splitmix64 finaliser of the seed
// and r; node i's 64-bit number h is wyrand's output for the state key +
// (i+1)·c, c being wyrand's increment; neighbour k = ⌊h · degree / 2^64⌋
// is taken. (This hash stands in for a math/rand/v2 source, which could
// not be drawn from out of order.) bench/alg7/alg7.c draws the same
// numbers, so its Algorithm 7 loop and the Sequential mode can be checked
// against each other round for round.
//
// # Jacobi mode (default)
//
// Nodes are split into chunks (2^16 nodes from N = 2^20 on, N/16 for
// smaller N), and the chunks into contiguous ranges, one per worker. A
// round is one pass of each worker over its chunks, then a barrier. For
// each chunk, the worker
//
//  1. sets the chunk's next pairs to zero;
//  2. adds the sends other chunks make to it in this round, which their
//     workers listed during the previous round (by sending worker, each
//     list in sender order);
//  3. walks the chunk's nodes in order: each adds one half of its
//     round-start pair to its own next pair and the other to its target's
//     if the target lies in the chunk (sends that leave it were listed);
//  4. walks the chunk again, now complete: measures each node's estimate
//     (the convergence check, on data still in cache, so it costs no pass
//     over memory; a test |x - α·w| < lim·w, proven safe by rounding
//     bounds, spares most nodes the division), draws its target for the
//     next round (kept, 4 bytes per node), and lists the send if it
//     leaves the chunk.
//
// Each next pair is thus the sum, from zero, of the sends from other chunks
// in increasing sender order and then those from its own chunk in
// increasing sender order: an order fixed by the chunk size, not by the
// number of workers, so the floating-point results are bit-identical for
// any Workers.
//
// On the hypercube fast path, while at most a third of the sends leave
// their chunk (on a 2^20 hypercube a fifth do), a listed send carries its
// half pair (24 bytes), so that the receiver reads it in order and no
// chunk ever reads another's pairs. The state is then updated in place, in
// one array of interleaved (x, w) pairs, 16 bytes per node: each worker
// copies a chunk's round-start pairs aside before stage 1. Otherwise (almost
// every send may leave its chunk), a listed send is only (sender, target),
// 8 bytes, the receiver reads the sender's round-start pair, and the state
// takes two arrays, round-start and next. Two rounds' lists coexist, sized
// from round 1 with a sixteenth to spare. Memory: 20 or 36 bytes per node
// plus the lists, under 64 bytes per node in all (32 on the 2^20
// hypercube) unless a round needs far more cross-chunk sends than round 1.
//
// # Sequential mode
//
// Algorithm 7 (thesis, appendix A.1) as printed, in place, 16 bytes per
// node (and one chunk's targets): for i = 0 … N-1 in order, node i draws
// j, halves its pair, adds the half to j's pair and records y_i = x_i /
// w_i; after the sweep the residual is max_i |y_i - α| / |α|. A node may
// still receive after its own turn, so that residual describes each node
// at its turn, not the state at the end of the round. When the residual is
// ≤ Epsilon, one extra pass measures the end-of-round state, and the run
// stops only if that too is within Epsilon, so a converged result is
// always ε-accurate as reported. Gauss-Seidel mixing uses values sent
// earlier in the same round and needs fewer rounds than Jacobi: on
// hypercubes of 2^10 to 2^20 nodes at ε = 1e-13, Jacobi takes 1.26 to
// 1.30 times as many.
//
// On amd64 the sweep's two halves are in assembly: the hypercube's
// neighbour choices are drawn eight at a time with AVX-512 where the CPU
// has it, and the node-by-node loop prefetches the pair that the node 64
// places on will send to, which on a large overlay is a cache miss the
// loop would otherwise wait for. Both compute what the Go code would, bit
// for bit (cubedraw_amd64.s); on a 2^20 hypercube they take a round from
// about 6 to about 3 ns per node.
func RunSync(ctx context.Context, cfg SyncConfig) (SyncResult, error) {
	s, err := newSyncRun(cfg)
	if err != nil {
		return SyncResult{}, err
	}
	return s.run(ctx)
}

// xwPair is a node's (x, w), interleaved for locality.
type xwPair [2]float64

// carriedSend is a send between chunks that carries its half pair, so that the
// receiving chunk need not read the sender's.
type carriedSend struct {
	to   uint32
	half xwPair
}

// noTarget marks an invalid target in the list of targets; no node has it.
const noTarget = math.MaxUint32

// maxSpare bounds the pairs each worker has beyond the N nodes' in the
// capacity of the Jacobi state arrays (spare = N/64 of them, a power of two
// between 1 and maxSpare). A send that leaves its chunk is listed, and its
// target in the chunk's list of targets becomes one of its worker's spare
// pairs, so that the in-chunk loop adds every second half somewhere
// without a branch (whose outcome would be random), without making all
// such adds wait on one another, and without workers sharing a pair. They
// are never read.
const maxSpare = 64

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

	// cur and next are the round-start and next state: one array when the
	// Jacobi mode updates in place (carry) and in Sequential mode, two
	// otherwise.
	cur, next []xwPair
	// tg holds every node's target for the round at hand (Jacobi, set
	// during the previous round), or one chunk's (Sequential).
	tg      []uint32
	spare   int        // see maxSpare
	stage   [][]uint32 // per worker, see list
	snap    [][]xwPair // per worker, a chunk's round-start pairs (carry)
	chunkLo []int      // worker w owns chunks [chunkLo[w], chunkLo[w+1])
	// in[w][c] lists this round's sends from worker w's nodes into chunk c
	// from other chunks, in sender order, as sender<<32 | target, or with
	// their halves in cin when carry is set; out and cout collect the next
	// round's.
	carry     bool
	in, out   [][][]uint64
	cin, cout [][][]carriedSend
	stats     []syncWorkerStat
}

// syncWorkerStat is one worker's findings in a pass, padded to 128 bytes so
// that two workers' never share a cache line.
type syncWorkerStat struct {
	err          runningMaxErr // the worker's nodes' max |y_i - α|
	sumHi, sumLo uint64        // Σ of the inputs' 53-bit integers, as 128 bits
	bad          bool          // the overlay returned an invalid neighbour or degree
	badNode      int
	badTo        int // the neighbour returned, or -1 for a degree ≤ 0
	_            [56]byte
}

// dimOverlay is what the fast path asks of an overlay.
type dimOverlay interface{ Dim() int }

func newSyncRun(cfg SyncConfig) (*syncRun, error) {
	if cfg.Overlay == nil {
		return nil, fmt.Errorf("sim: %w: no overlay", gossip.ErrInvalidConfig)
	}
	n := cfg.Overlay.Len()
	if n < 1 {
		return nil, fmt.Errorf("sim: %w: overlay has %d nodes", gossip.ErrInvalidConfig, n)
	}
	if n > syncMaxNodes {
		return nil, fmt.Errorf("sim: %w: %d nodes, more than the 2^31 supported", gossip.ErrInvalidConfig, n)
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
		chunkBits: uint(min(maxChunkBits, max(minChunkBits, bits.Len(uint(n-1))-4))),
		base:      splitmix64(cfg.Seed ^ syncSeedSalt),
	}
	if s.maxRounds == 0 {
		s.maxRounds = DefaultMaxRounds
	}
	if cfg.chunkBits > 0 {
		s.chunkBits = min(cfg.chunkBits, 31)
	}
	s.dim = fastCubeDim(cfg.Overlay, n)
	if s.dim == 0 {
		for v := range n {
			if d := cfg.Overlay.Degree(gossip.NodeID(v)); d < 1 {
				return nil, fmt.Errorf("sim: %w: node %d has degree %d, every node needs a neighbour",
					gossip.ErrInvalidConfig, v, d)
			}
		}
	}
	chunks := (n-1)>>s.chunkBits + 1
	s.workers = 1
	if !cfg.Sequential {
		s.workers = cfg.Workers
		if s.workers == 0 {
			s.workers = runtime.GOMAXPROCS(0)
		}
		s.workers = min(s.workers, chunks)
		// On the hypercube a send leaves its chunk when it crosses one of
		// the dim - chunkBits highest dimensions.
		s.carry = s.dim > 0 && 3*(s.dim-int(s.chunkBits)) <= s.dim
		lists := func() [][][]uint64 { return make([][][]uint64, s.workers) }
		carriedLists := func() [][][]carriedSend { return make([][][]carriedSend, s.workers) }
		s.in, s.out, s.cin, s.cout = lists(), lists(), carriedLists(), carriedLists()
		for w := range s.workers {
			if s.carry {
				s.cin[w], s.cout[w] = make([][]carriedSend, chunks), make([][]carriedSend, chunks)
			} else {
				s.in[w], s.out[w] = make([][]uint64, chunks), make([][]uint64, chunks)
			}
		}
	}
	s.chunkLo = make([]int, s.workers+1)
	for w := range s.workers {
		s.chunkLo[w+1] = (w + 1) * chunks / s.workers
	}
	s.stats = make([]syncWorkerStat, s.workers)
	return s, nil
}

// fastCubeDim returns d when g is the 2^d-node hypercube with neighbour k
// of v being v XOR 2^k, checked on a few nodes, and 0 otherwise.
func fastCubeDim(g gossip.Neighborhood, n int) int {
	h, ok := g.(dimOverlay)
	if !ok {
		return 0
	}
	d := h.Dim()
	if d < 1 || d > 31 || n != 1<<d {
		return 0
	}
	probe := []int{0, n - 1, n / 2, int(splitmix64(uint64(n)) % uint64(n))}
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

// Randomness. The key of stream r (0: inputs, r ≥ 1: round r) is a
// splitmix64 finaliser of the seed's key and r; value number i of a stream
// with key k is wyrand's output for the state k + (i+1)·wyInc.
const (
	splitmixGamma = 0x9e3779b97f4a7c15
	syncSeedSalt  = 0x5eed5eed5eed5eed
	wyInc         = 0xa0761d6478bd642f
	wyXor         = 0xe7037ed1a0b428db
)

// splitmix64 is the splitmix64 finaliser, a bijection on 64-bit words whose
// output bits all depend on all input bits.
func splitmix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// syncStreamKey is the key of stream r of the run whose seed gave base.
func syncStreamKey(base uint64, r int) uint64 { return splitmix64(base + splitmixGamma*uint64(r)) }

// syncDraw is value number i of the stream with key k.
func syncDraw(k uint64, i int) uint64 {
	s := k + wyInc*uint64(i+1)
	hi, lo := bits.Mul64(s, s^wyXor)
	return hi ^ lo
}

// syncInput is node i's x_i, uniform on [0, 1) with 53 random bits.
func syncInput(k uint64, i int) float64 { return float64(syncDraw(k, i)>>11) * 0x1p-53 }

// cubeBit is 2^k for the hypercube fast path's neighbour k = ⌊h · dim /
// 2^64⌋: node i sends to i XOR cubeBit(h, dim).
func cubeBit(h, dim uint64) int {
	k, _ := bits.Mul64(h, dim)
	return 1 << (k & 63)
}

// cubeTargets sets tg[k] to the target of node lo+k on the hypercube fast
// path of dimension dim in the round with key rk: (lo+k) XOR cubeBit(h,
// dim) for h = syncDraw(rk, lo+k). On amd64 with AVX-512 a vector loop
// (cubedraw_amd64.s) draws eight nodes at a time, the same numbers; drawing
// is otherwise about half of a Sequential round's time on a 2^20
// hypercube. The nodes the vector loop leaves, at most seven, are drawn
// here.
func cubeTargets(tg []uint32, lo int, rk, dim uint64) {
	for k := cubeTargetsVector(tg, lo, rk, dim); k < len(tg); k++ {
		i := lo + k
		tg[k] = uint32(i ^ cubeBit(syncDraw(rk, i), dim))
	}
}

// neighbor is the overlay's neighbour k = ⌊h · degree / 2^64⌋ of node i,
// for the hash h of (seed, round, i). A generic overlay may answer with a
// node out of range, or a degree < 1, for which neighbor returns -1.
func (s *syncRun) neighbor(h uint64, i int) int {
	deg := s.g.Degree(gossip.NodeID(i))
	if deg < 1 {
		return -1
	}
	k, _ := bits.Mul64(h, uint64(deg))
	return int(s.g.Neighbor(gossip.NodeID(i), int(k)))
}

// chunk returns the node range [lo, hi) of chunk c.
func (s *syncRun) chunk(c int) (lo, hi int) {
	lo = c << s.chunkBits
	return lo, min(lo+1<<s.chunkBits, s.n)
}

// parallel runs f(0), …, f(workers-1) at once, f(0) on the calling
// goroutine, and returns when all have returned.
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

// init computes α and allocates and fills the state, each worker for its
// own chunks, without a second array of inputs. Every input is an integer
// m_i < 2^53 times 2^-53, so Σ m_i (below 2^84) is summed exactly in 128
// bits, and α = Σ m_i · 2^-53 / N is rounded once: exact to half an ulp,
// and the same whatever the number of workers. In Jacobi mode init also
// measures the inputs and lists the sends of round 1; it returns the
// relative error of the inputs in Jacobi mode, and NaN in Sequential mode.
func (s *syncRun) init() float64 {
	k0 := syncStreamKey(s.base, 0)
	s.parallel(func(w int) {
		st := &s.stats[w]
		*st = syncWorkerStat{}
		lo, _ := s.chunk(s.chunkLo[w])
		hi := min(s.chunkLo[w+1]<<s.chunkBits, s.n)
		for i := lo; i < hi; i++ {
			var carry uint64
			st.sumLo, carry = bits.Add64(st.sumLo, syncDraw(k0, i)>>11, 0)
			st.sumHi += carry
		}
	})
	sum, part := new(big.Int), new(big.Int)
	for _, st := range s.stats {
		part.SetUint64(st.sumHi).Lsh(part, 64).Or(part, new(big.Int).SetUint64(st.sumLo))
		sum.Add(sum, part)
	}
	num := new(big.Float).SetInt(sum)
	num.SetMantExp(num, -53) // exact: a power of two
	s.alpha, _ = new(big.Float).SetPrec(53).Quo(num, new(big.Float).SetInt64(int64(s.n))).Float64()
	s.scale = math.Abs(s.alpha)
	if s.scale == 0 {
		s.scale = 1
	}

	if s.cfg.Sequential {
		s.cur = make([]xwPair, s.n)
		s.tg = make([]uint32, min(1<<s.chunkBits, s.n))
	} else {
		s.spare = min(maxSpare, 1<<max(0, bits.Len(uint(s.n>>6))-1))
		c := s.n + s.workers*s.spare
		s.cur = make([]xwPair, s.n, c)
		s.next = s.cur
		if !s.carry {
			s.next = make([]xwPair, s.n, c)
		}
		s.tg = make([]uint32, s.n)
		s.stage = make([][]uint32, s.workers)
		s.snap = make([][]xwPair, s.workers)
		for w := range s.stage {
			s.stage[w] = make([]uint32, min(1<<s.chunkBits, s.n))
			if s.carry {
				s.snap[w] = make([]xwPair, min(1<<s.chunkBits, s.n))
			}
		}
	}
	k1 := syncStreamKey(s.base, 1)
	s.parallel(func(w int) {
		if !s.cfg.Sequential {
			s.reserve(w, k1)
		}
		m := newRunningMaxErr(s.alpha)
		for c := s.chunkLo[w]; c < s.chunkLo[w+1]; c++ {
			lo, hi := s.chunk(c)
			for i := lo; i < hi; i++ {
				s.cur[i] = xwPair{syncInput(k0, i), 1}
			}
			if !s.cfg.Sequential {
				m = s.list(w, c, k1, s.cur, m)
			}
		}
		s.stats[w].err = m
	})
	if s.cfg.Sequential {
		return math.NaN()
	}
	return s.workerError()
}

// reserve sizes worker w's lists, for both rounds at hand, from its sends
// of round 1 (key rk), with a sixteenth more and two to spare, so that
// they seldom grow: a list that grows leaves its old copy behind as
// garbage, and the memory budget has no room for that.
func (s *syncRun) reserve(w int, rk uint64) {
	count := make([]int, (s.n-1)>>s.chunkBits+1)
	for c := s.chunkLo[w]; c < s.chunkLo[w+1]; c++ {
		lo, hi := s.chunk(c)
		tg := s.tg[lo:hi]
		s.targets(w, tg, lo, rk)
		for _, t := range tg {
			if to := int(t) >> s.chunkBits; to != c && t != noTarget {
				count[to]++
			}
		}
	}
	for to, k := range count {
		if k == 0 {
			continue
		}
		k += k/16 + 2
		if s.carry {
			s.cin[w][to], s.cout[w][to] = make([]carriedSend, 0, k), make([]carriedSend, 0, k)
		} else {
			s.in[w][to], s.out[w][to] = make([]uint64, 0, k), make([]uint64, 0, k)
		}
	}
}

// targets fills tg with where the nodes lo, lo+1, … send in the round with
// key rk, so that the loops using them stay small and make no calls. An
// invalid answer from a generic overlay is noted in worker w's stat and
// becomes noTarget.
func (s *syncRun) targets(w int, tg []uint32, lo int, rk uint64) {
	if s.dim > 0 {
		cubeTargets(tg, lo, rk, uint64(s.dim))
		return
	}
	for k := range tg {
		i := lo + k
		t := s.neighbor(syncDraw(rk, i), i)
		if uint(t) >= uint(s.n) {
			if st := &s.stats[w]; !st.bad {
				st.bad, st.badNode, st.badTo = true, i, t
			}
			t = noTarget
		}
		tg[k] = uint32(t)
	}
}

// list measures chunk c of state, which is complete, into m; sets the
// chunk's targets for the round with key rk; and lists, for worker w, the
// sends that leave the chunk, in sender order, pointing their targets in
// tg to spare pairs instead. The first loop notes the leaving sends in
// worker w's stage without a branch (their positions are random, and a
// branch would be mispredicted on most of them); the second lists them.
func (s *syncRun) list(w, c int, rk uint64, state []xwPair, m runningMaxErr) runningMaxErr {
	lo, hi := s.chunk(c)
	tg := s.tg[lo:hi]
	s.targets(w, tg, lo, rk)
	cb, stage := s.chunkBits, s.stage[w][:len(tg)]
	leaving := 0
	for k, t := range tg {
		if p := state[lo+k]; !m.below(p) {
			m = m.add(m.err(p))
		}
		stage[leaving] = uint32(k)
		if int(t)>>cb != c { // always so for noTarget
			leaving++
		}
	}
	out, cout := s.out[w], s.cout[w]
	for _, k := range stage[:leaving] {
		t := tg[k]
		switch to := int(t) >> cb; {
		case t == noTarget:
		case s.carry:
			p := state[lo+int(k)]
			cout[to] = pushListed(cout[to], carriedSend{t, xwPair{p[0] * 0.5, p[1] * 0.5}})
		default:
			out[to] = pushListed(out[to], uint64(lo+int(k))<<32|uint64(t))
		}
		tg[k] = uint32(s.n + w*s.spare + int(k)&(s.spare-1))
	}
	return m
}

// pushListed appends e to l, growing l by an eighth when it is full rather than
// by append's quarter or double: the lists' capacity settles at the most
// sends a round needed, and the memory budget has little room for slack.
func pushListed[E any](l []E, e E) []E {
	if len(l) == cap(l) {
		l = growListed(l)
	}
	return append(l, e)
}

func growListed[E any](l []E) []E {
	g := make([]E, len(l), len(l)+len(l)/8+4)
	copy(g, l)
	return g
}

// runningMaxErr is a running max of e_i = |y_i - α| over estimates y_i = x_i/w_i
// that notes NaN estimates apart. Its methods are value methods that
// inline, so the loops keep it in registers, and their branches are almost
// never taken, so the loops do not wait on a chain of max operations.
type runningMaxErr struct {
	abs   float64 // the max so far
	lim   float64 // see the method below
	alpha float64
	nan   bool
}

func newRunningMaxErr(alpha float64) runningMaxErr {
	return runningMaxErr{alpha: alpha, lim: math.Inf(-1)}
}

// add returns m with e folded in.
func (m runningMaxErr) add(e float64) runningMaxErr {
	if e > m.abs {
		// Rounding bounds (u = 2^-53): e_i as computed is within
		// (1+u)(|q-α| + |q|u) of the exact quotient q = x_i/w_i, and the
		// screen D = |x_i - α·w_i| of below is at least
		// w_i(1-u)(|q-α| - |α|u). So D < lim·w_i, with lim this far
		// below abs, proves that e_i ≤ abs.
		m.abs, m.lim = e, e-0x1p-50*(e+math.Abs(m.alpha))
	} else if e != e {
		m.nan = true
	}
	return m
}

// below reports, without a division, that p's estimate cannot raise the
// max; the loops call m.add(m.err(p)) only for the pairs it does not
// clear, and get the max of all e_i. NaN, zero and infinite values are
// never cleared. (Two methods rather than one so that both inline.)
func (m runningMaxErr) below(p xwPair) bool {
	d, l := p[0]-m.alpha*p[1], m.lim*p[1]
	return d < l && -d < l
}

// err is p's e_i, as computed for every pair below does not clear.
func (m runningMaxErr) err(p xwPair) float64 { return math.Abs(p[0]/p[1] - m.alpha) }

// relError turns m into the relative error of equation 4.1, +Inf if some
// estimate was NaN (so that it never looks converged).
func (s *syncRun) relError(m runningMaxErr) float64 {
	if m.nan {
		return math.Inf(1)
	}
	return m.abs / s.scale
}

// workerError is the relative error the workers measured in their last
// pass.
func (s *syncRun) workerError() float64 {
	var m runningMaxErr
	for _, st := range s.stats {
		m = m.add(st.err.abs)
		m.nan = m.nan || st.err.nan
	}
	return s.relError(m)
}

// measure is the relative error of a state, in one pass.
func (s *syncRun) measure(state []xwPair) float64 {
	m := newRunningMaxErr(s.alpha)
	for _, p := range state {
		if !m.below(p) {
			m = m.add(m.err(p))
		}
	}
	return s.relError(m)
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
		StateBytes:  int64(cap(s.cur))*16 + int64(cap(s.tg))*4,
	}
	if !s.carry {
		r.StateBytes += int64(cap(s.next)) * 16
	}
	for w := range s.snap {
		r.StateBytes += int64(cap(s.snap[w])*16 + cap(s.stage[w])*4)
	}
	for w := range s.in {
		for c := range s.in[w] {
			r.StateBytes += int64(cap(s.in[w][c])+cap(s.out[w][c])) * 8
		}
		for c := range s.cin[w] {
			r.StateBytes += int64(cap(s.cin[w][c])+cap(s.cout[w][c])) * 24
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

func (s *syncRun) runJacobi(ctx context.Context) (SyncResult, error) {
	relErr := s.init()
	for r := 0; ; r++ {
		if r > 0 {
			rkNext := syncStreamKey(s.base, r+1)
			s.parallel(func(w int) { s.step(w, rkNext) })
			s.cur, s.next = s.next, s.cur
			relErr = s.workerError()
		}
		// What was listed (by init or step) is received next round.
		s.in, s.out = s.out, s.in
		s.cin, s.cout = s.cout, s.cin
		s.progress(r, relErr)
		if done, err := s.stop(ctx, r, relErr); done {
			return s.result(r, relErr), err
		}
		if err := s.badOverlay(); err != nil {
			return s.result(r, relErr), err
		}
	}
}

// step is one Jacobi round for worker w's chunks; rkNext is the next
// round's key. See RunSync for the four stages per chunk. The round-start
// state is only read, so a chunk's owner may read any node's pair.
func (s *syncRun) step(w int, rkNext uint64) {
	st := &s.stats[w]
	*st = syncWorkerStat{}
	for c := range s.out[w] {
		s.out[w][c] = s.out[w][c][:0]
	}
	for c := range s.cout[w] {
		s.cout[w][c] = s.cout[w][c][:0]
	}
	m := newRunningMaxErr(s.alpha)
	for c := s.chunkLo[w]; c < s.chunkLo[w+1]; c++ {
		lo, hi := s.chunk(c)
		start := s.cur[lo:hi]
		if s.carry { // in place: keep the round-start pairs aside
			start = s.snap[w][:hi-lo]
			copy(start, s.cur[lo:hi])
		}
		clear(s.next[lo:hi])
		for from := range s.workers {
			if s.carry {
				receiveCarried(s.next, s.cin[from][c])
			} else {
				receiveListed(s.cur, s.next, s.in[from][c])
			}
		}
		jacobi(start, s.next, s.tg[lo:hi], lo)
		m = s.list(w, c, rkNext, s.next, m)
	}
	st.err = m
}

// receiveListed adds listed sends (sender<<32 | target) to next.
func receiveListed(cur, next []xwPair, sends []uint64) {
	for _, e := range sends {
		i, t := e>>32, uint32(e)
		next[t][0] += cur[i][0] * 0.5
		next[t][1] += cur[i][1] * 0.5
	}
}

// receiveCarried adds listed sends with their halves to next.
func receiveCarried(next []xwPair, sends []carriedSend) {
	for _, e := range sends {
		next[e.to][0] += e.half[0]
		next[e.to][1] += e.half[1]
	}
}

// jacobi is stage 3 of a Jacobi round for the chunk of nodes lo, lo+1, …
// with round-start pairs cur and targets tg: each node adds one half of its
// pair to its own next pair and the other to its target's, a node of the
// chunk or, for a send that was listed, a spare pair (see maxSpare).
func jacobi(cur, next []xwPair, tg []uint32, lo int) {
	own, cur := next[lo:lo+len(tg)], cur[:len(tg)]
	next = next[:cap(next)]
	for k, t := range tg {
		hx, hw := cur[k][0]*0.5, cur[k][1]*0.5
		own[k][0] += hx
		own[k][1] += hw
		next[t][0] += hx
		next[t][1] += hw
	}
}

func (s *syncRun) runSequential(ctx context.Context) (SyncResult, error) {
	s.init()
	relErr := s.measure(s.cur)
	s.progress(0, relErr)
	if done, err := s.stop(ctx, 0, relErr); done {
		return s.result(0, relErr), err
	}
	for r := 1; ; r++ {
		residual, err := s.sweep(syncStreamKey(s.base, r))
		if err != nil {
			return s.result(r-1, math.Inf(1)), err
		}
		if residual <= s.cfg.Epsilon {
			// Algorithm 7 would stop here; make sure the state at the end
			// of the round agrees.
			residual = s.measure(s.cur)
		}
		s.progress(r, residual)
		if done, err := s.stop(ctx, r, residual); done {
			if residual > s.cfg.Epsilon {
				residual = s.measure(s.cur)
			}
			return s.result(r, residual), err
		}
	}
}

// sweep is one round of Algorithm 7, lines 4 to 8, returning the residual
// of line 10: the relative error of the estimates as each node left its
// turn.
func (s *syncRun) sweep(rk uint64) (residual float64, err error) {
	m := newRunningMaxErr(s.alpha)
	for c := range s.chunkLo[1] {
		lo, hi := s.chunk(c)
		tg := s.tg[:hi-lo]
		if s.targets(0, tg, lo, rk); s.stats[0].bad {
			return 0, s.badOverlay()
		}
		m = gaussSeidel(s.cur[lo:hi], tg, s.cur, m)
	}
	return s.relError(m), nil
}

// gaussSeidel runs Algorithm 7's inner loop over the nodes of a, which
// send to the nodes tg of all: each halves its pair, adds the half to its
// target's pair in place and measures y_i = x_i / w_i into m.
//
// On amd64 an assembly loop (gaussSeidelSSE) does the nodes whose halves
// the screen clears and whose targets are in range, with the same
// arithmetic in the same order, and prefetches targets ahead; the others
// (a handful per round: those that raise the running maximum) are done
// here.
func gaussSeidel(a []xwPair, tg []uint32, all []xwPair, m runningMaxErr) runningMaxErr {
	for k := 0; k < len(tg); k++ {
		if haveGaussSeidelAsm {
			if k = gaussSeidelFrom(a, tg, all, k, m); k >= len(tg) {
				break
			}
		}
		t := tg[k]
		hx, hw := a[k][0]*0.5, a[k][1]*0.5
		a[k] = xwPair{hx, hw}
		all[t][0] += hx
		all[t][1] += hw
		// y_i after the send is hx / hw, also when t = i, since doubling
		// both halves leaves the quotient unchanged.
		if p := (xwPair{hx, hw}); !m.below(p) {
			m = m.add(m.err(p))
		}
	}
	return m
}
