package sim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gossipreduce/gossipreduce/algo"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/eventq"
	"github.com/gossipreduce/gossipreduce/topology"
)

// StopRule says when a simulated all-reduce is finished.
type StopRule uint8

const (
	// StopAll stops once every live node is ε-accurate (equation 4.1).
	StopAll StopRule = iota
	// StopFirst stops once the first node is ε-accurate, as the thesis's
	// MPI implementations did.
	StopFirst
)

// String returns "all" or "first".
func (s StopRule) String() string {
	if s == StopFirst {
		return "first"
	}
	return "all"
}

// Crash makes a node stop at a given simulated time.
type Crash struct {
	Node gossip.NodeID
	At   float64
}

// DefaultMaxMsgs is the message cap when Config.MaxMsgs is zero.
const DefaultMaxMsgs = 10000

// Config describes one simulated all-reduce.
type Config struct {
	// Algorithm is an algo name: "ps", "pfcc", "rdb", … Default "ps".
	Algorithm string
	// Overlay is the communication graph. Required.
	Overlay topology.Graph
	// Inputs are the nodes' values, one vector each. Nil draws Components
	// values per node uniformly from [0, 1) with the run's seed.
	Inputs [][]float64
	// Components is the vector length k when Inputs is nil (default 1).
	Components int
	// Mode selects average or sum.
	Mode gossip.WeightMode
	// Epsilon is the target accuracy ε, 0 < ε < 1.
	Epsilon float64
	// Stop is the stop rule.
	Stop StopRule
	// MaxMsgs stops the run, unconverged, once a node has sent this many
	// messages. Zero means DefaultMaxMsgs.
	MaxMsgs int
	// Seed makes the run reproducible.
	Seed uint64

	// L is the message latency (default 1), O the overhead of one send or
	// one receive (default 0).
	L, O float64
	// Jitter multiplies each latency by 1 + U[0, Jitter).
	Jitter float64
	// Distance, if set, multiplies the latency of a message from one node to
	// another, e.g. by the hop count of a physical network (thesis 5.4).
	Distance func(from, to gossip.NodeID) float64

	// TickEvery ticks every node periodically (with a random phase); zero
	// ticks only at time 0. Algorithms that send only on ticks (algo.Spec
	// Ticked) default to 2L+2O.
	TickEvery float64
	// RTO is the retransmission timeout after which a node whose message
	// went to a dead node ticks. Zero means 2(L+2O).
	RTO float64

	// Loss is the probability that a message is lost (0 ≤ Loss < 1).
	Loss float64
	// Dead nodes never run.
	Dead []gossip.NodeID
	// Crashes stop nodes during the run.
	Crashes []Crash
	// DetectAfter is the delay after which the neighbours of a dead or
	// crashed node exclude it. Negative: never (the default zero means at
	// once).
	DetectAfter float64

	// Tau is passed to the machines (checksum threshold of PFLC/PFCC).
	Tau float64
	// Injector, if set, sees every message and every machine after each
	// step, to inject silent data corruption.
	Injector gossip.Injector
	// NewInjector, if set, builds a fresh injector for each run, for
	// injectors that keep per-run state (a single flip fires once per run)
	// and so cannot be shared by the parallel runs of RunMany. Set Injector
	// or NewInjector, not both.
	NewInjector func() gossip.Injector
	// TraceEvery samples the maximum relative error every this many time
	// units into Result.Trace; zero records no trace.
	TraceEvery float64
}

// TracePoint is one sample of the maximum relative error over time.
type TracePoint struct {
	Time        float64 `json:"time"`
	MaxRelError float64 `json:"max_rel_error"`
	MaxMsgs     int     `json:"max_msgs"`
}

// Result is the outcome of one simulated all-reduce.
type Result struct {
	Algorithm string  `json:"algo"`
	Topology  string  `json:"topology"`
	Nodes     int     `json:"nodes"`
	Live      int     `json:"live"`
	Seed      uint64  `json:"seed"`
	Converged bool    `json:"converged"`
	Reason    string  `json:"reason"` // "all-accurate", "first-accurate", "message-cap", "quiescent", "cancelled"
	Epsilon   float64 `json:"eps"`
	// MaxRelError is the largest relative error over the live nodes when
	// the run stopped.
	MaxRelError float64 `json:"max_rel_error"`
	// MaxMsgs and MeanMsgs are the messages sent per node, over all nodes,
	// when the run stopped.
	MaxMsgs   int     `json:"max_msgs"`
	MeanMsgs  float64 `json:"mean_msgs"`
	TotalMsgs int64   `json:"total_msgs"`
	SimTime   float64 `json:"sim_time"`
	Events    int64   `json:"events"`
	// Lost counts messages lost to Loss or to dead receivers; Rejected
	// counts messages a machine refused (foreign or malformed).
	Lost     int64 `json:"lost"`
	Rejected int64 `json:"rejected"`
	// Exact is the aggregate the estimates were measured against.
	Exact []float64    `json:"exact"`
	Trace []TracePoint `json:"trace,omitempty"`
}

type evKind uint8

const (
	evDeliver  evKind = iota
	evTick            // one tick: start, loss wake-up, retransmission timeout
	evPeriodic        // a periodic tick, which schedules the next
	evCrash
	evDetect
)

type event struct {
	kind evKind
	node gossip.NodeID
	msg  int32 // index into the message slab, for evDeliver
}

// Run simulates one all-reduce. It returns an error for a configuration that
// cannot run; a run that does not converge is a Result with Converged false.
// Cancelling ctx stops the run and returns the partial Result with ctx's
// error.
func Run(ctx context.Context, cfg Config) (Result, error) {
	s, err := newRun(cfg)
	if err != nil {
		return Result{}, err
	}
	return s.run(ctx)
}

type runState struct {
	cfg     Config
	spec    algo.Spec
	n       int
	eps     float64
	ms      []gossip.Machine
	dead    []bool
	errs    []float64
	ok      []bool // node counts as accurate
	nOK     int
	live    int
	sent    []int
	maxSent int
	total   int64
	busy    []float64
	exact   []float64
	q       eventq.Queue[event]
	slab    []gossip.Message
	free    []int32
	net     *rand.Rand // loss and jitter
	inj     *rand.Rand
	buf     []gossip.Message
	est     []float64
	inNbrs  [][]gossip.NodeID
	res     Result
	now     float64
	nextTr  float64
}

func newRun(cfg Config) (*runState, error) {
	if cfg.Algorithm == "" {
		cfg.Algorithm = "ps"
	}
	spec, err := algo.Lookup(cfg.Algorithm)
	if err != nil {
		return nil, err
	}
	if cfg.Overlay == nil {
		return nil, fmt.Errorf("sim: %w: no overlay", gossip.ErrInvalidConfig)
	}
	n := cfg.Overlay.Len()
	if n < 1 {
		return nil, fmt.Errorf("sim: %w: overlay has %d nodes", gossip.ErrInvalidConfig, n)
	}
	if !(cfg.Epsilon > 0 && cfg.Epsilon < 1) {
		return nil, fmt.Errorf("sim: %w: epsilon %v must be in (0, 1)", gossip.ErrInvalidConfig, cfg.Epsilon)
	}
	if cfg.L == 0 {
		cfg.L = 1
	}
	for name, v := range map[string]float64{"L": cfg.L, "o": cfg.O, "jitter": cfg.Jitter, "tick": cfg.TickEvery, "rto": cfg.RTO, "trace": cfg.TraceEvery} {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("sim: %w: %s = %v must be finite and ≥ 0", gossip.ErrInvalidConfig, name, v)
		}
	}
	if !(cfg.Loss >= 0 && cfg.Loss < 1) {
		return nil, fmt.Errorf("sim: %w: loss %v must be in [0, 1)", gossip.ErrInvalidConfig, cfg.Loss)
	}
	if math.IsNaN(cfg.DetectAfter) || math.IsInf(cfg.DetectAfter, 0) {
		return nil, fmt.Errorf("sim: %w: detect-after %v", gossip.ErrInvalidConfig, cfg.DetectAfter)
	}
	if cfg.MaxMsgs < 0 {
		return nil, fmt.Errorf("sim: %w: max-msgs %d", gossip.ErrInvalidConfig, cfg.MaxMsgs)
	}
	if cfg.MaxMsgs == 0 {
		cfg.MaxMsgs = DefaultMaxMsgs
	}
	if cfg.RTO == 0 {
		cfg.RTO = 2 * (cfg.L + 2*cfg.O)
	}
	if spec.Ticked && cfg.TickEvery == 0 {
		cfg.TickEvery = 2*cfg.L + 2*cfg.O
	}
	if cfg.NewInjector != nil {
		if cfg.Injector != nil {
			return nil, fmt.Errorf("sim: %w: both Injector and NewInjector set", gossip.ErrInvalidConfig)
		}
		cfg.Injector = cfg.NewInjector()
	}
	if cfg.Components == 0 {
		cfg.Components = 1
	}
	if cfg.Components < 0 {
		return nil, fmt.Errorf("sim: %w: %d components", gossip.ErrInvalidConfig, cfg.Components)
	}
	if cfg.Stop != StopAll && cfg.Stop != StopFirst {
		return nil, fmt.Errorf("sim: %w: stop rule %d", gossip.ErrInvalidConfig, cfg.Stop)
	}

	inputs := cfg.Inputs
	if inputs == nil {
		r := rand.New(rand.NewPCG(mix(cfg.Seed, 1), 0))
		inputs = make([][]float64, n)
		for i := range inputs {
			inputs[i] = make([]float64, cfg.Components)
			for c := range inputs[i] {
				inputs[i][c] = r.Float64()
			}
		}
	}
	if len(inputs) != n {
		return nil, fmt.Errorf("sim: %w: %d input vectors for %d nodes", gossip.ErrLength, len(inputs), n)
	}

	s := &runState{
		cfg: cfg, spec: spec, n: n, eps: cfg.Epsilon,
		ms:   make([]gossip.Machine, n),
		dead: make([]bool, n), errs: make([]float64, n), ok: make([]bool, n),
		sent: make([]int, n), busy: make([]float64, n),
		net: rand.New(rand.NewPCG(mix(cfg.Seed, 2), 0)),
		inj: rand.New(rand.NewPCG(mix(cfg.Seed, 3), 0)),
	}
	for _, d := range cfg.Dead {
		if int(d) >= n {
			return nil, fmt.Errorf("sim: %w: dead node %d out of range", gossip.ErrInvalidConfig, d)
		}
		s.dead[d] = true
	}
	for _, c := range cfg.Crashes {
		if int(c.Node) >= n || !(c.At >= 0) || math.IsInf(c.At, 0) {
			return nil, fmt.Errorf("sim: %w: crash of node %d at %v", gossip.ErrInvalidConfig, c.Node, c.At)
		}
	}

	// The reference: everyone, or the survivors when failures are detected
	// and excluded.
	weights := make([]float64, n)
	gone := slices.Clone(s.dead)
	for _, c := range cfg.Crashes {
		gone[c.Node] = true
	}
	survivors := cfg.DetectAfter >= 0 && (len(cfg.Dead) > 0 || len(cfg.Crashes) > 0)
	var refIn [][]float64
	var refW []float64
	for i := range n {
		c := gossip.Config{ID: gossip.NodeID(i), Overlay: cfg.Overlay, Mode: cfg.Mode}
		weights[i] = c.Weight()
		if survivors && gone[i] {
			continue
		}
		refIn = append(refIn, inputs[i])
		refW = append(refW, weights[i])
	}
	if len(refIn) == 0 {
		return nil, fmt.Errorf("sim: %w: no node survives", gossip.ErrInvalidConfig)
	}
	exact, err := gossip.Aggregate(refIn, refW)
	if err != nil {
		return nil, fmt.Errorf("inputs: %w", err)
	}
	s.exact = exact

	for i := range n {
		m, err := spec.New(gossip.Config{
			ID: gossip.NodeID(i), Overlay: cfg.Overlay, Value: inputs[i], Mode: cfg.Mode,
			Rand: rand.NewPCG(mix(cfg.Seed, 4), uint64(i)), Tau: cfg.Tau,
		})
		if err != nil {
			return nil, fmt.Errorf("node %d: %w", i, err)
		}
		s.ms[i] = m
	}
	s.res = Result{
		Algorithm: cfg.Algorithm, Topology: cfg.Overlay.Name(), Nodes: n, Seed: cfg.Seed,
		Epsilon: cfg.Epsilon, Exact: exact,
	}
	return s, nil
}

// mix derives independent stream seeds from the run's seed (splitmix64).
func mix(seed, stream uint64) uint64 {
	z := seed + stream*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (s *runState) run(ctx context.Context) (Result, error) {
	cfg := &s.cfg
	for i := range s.n {
		if s.dead[i] {
			continue
		}
		s.live++
		s.refresh(gossip.NodeID(i))
	}
	// Detection of the dead-from-start nodes goes first, so that with
	// DetectAfter = 0 no initial tick sends to them.
	if cfg.DetectAfter >= 0 {
		for _, d := range cfg.Dead {
			s.q.Push(cfg.DetectAfter, event{kind: evDetect, node: d})
		}
	}
	for i := range s.n {
		if s.dead[i] {
			continue
		}
		if cfg.Injector != nil {
			cfg.Injector.InjectState(s.point(gossip.NodeID(i)), s.ms[i])
			s.refresh(gossip.NodeID(i))
		}
		s.q.Push(0, event{kind: evTick, node: gossip.NodeID(i)})
		if cfg.TickEvery > 0 {
			s.q.Push(s.net.Float64()*cfg.TickEvery, event{kind: evPeriodic, node: gossip.NodeID(i)})
		}
	}
	for _, c := range cfg.Crashes {
		s.q.Push(c.At, event{kind: evCrash, node: c.Node})
	}
	if cfg.TraceEvery > 0 {
		s.sample()
		s.nextTr = cfg.TraceEvery
	}

	var ctxErr error
	for {
		if reason, done := s.finished(); done {
			s.res.Reason = reason
			s.res.Converged = reason == "all-accurate" || reason == "first-accurate"
			break
		}
		if s.res.Events&1023 == 0 {
			if err := ctx.Err(); err != nil {
				s.res.Reason = "cancelled"
				ctxErr = fmt.Errorf("sim: %w", err)
				break
			}
		}
		at, ev, ok := s.q.Pop()
		if !ok {
			s.res.Reason = "quiescent"
			break
		}
		for cfg.TraceEvery > 0 && at >= s.nextTr {
			s.now = s.nextTr
			s.sample()
			s.nextTr += cfg.TraceEvery
		}
		s.now = at
		s.res.Events++
		s.handle(ev)
	}
	return s.result(), ctxErr
}

func (s *runState) finished() (string, bool) {
	if s.cfg.Stop == StopFirst && s.nOK > 0 {
		return "first-accurate", true
	}
	if s.cfg.Stop == StopAll && s.nOK == s.live && s.live > 0 {
		return "all-accurate", true
	}
	if s.maxSent >= s.cfg.MaxMsgs {
		return "message-cap", true
	}
	return "", false
}

func (s *runState) handle(ev event) {
	switch ev.kind {
	case evDeliver:
		m := s.slab[ev.msg]
		j := m.To
		if s.dead[j] {
			s.release(ev.msg)
			s.res.Lost++
			if !s.dead[m.From] {
				s.q.Push(s.now+s.cfg.RTO, event{kind: evTick, node: m.From})
			}
			return
		}
		if s.busy[j] > s.now {
			s.q.Push(s.busy[j], ev) // the node is busy: the message waits
			return
		}
		s.release(ev.msg)
		start := s.now + s.cfg.O
		var err error
		if s.cfg.Loss > 0 && s.net.Float64() < s.cfg.Loss {
			s.res.Lost++
			s.buf = s.ms[j].Tick(s.buf[:0])
		} else {
			s.buf, err = s.ms[j].Step(m, s.buf[:0])
			if err != nil {
				s.res.Rejected++
			}
		}
		s.after(j, start)
	case evTick, evPeriodic:
		j := ev.node
		if s.dead[j] {
			return
		}
		if s.busy[j] > s.now {
			s.q.Push(s.busy[j], ev)
			return
		}
		if ev.kind == evPeriodic {
			s.q.Push(s.now+s.cfg.TickEvery, ev)
		}
		s.buf = s.ms[j].Tick(s.buf[:0])
		s.after(j, s.now)
	case evCrash:
		j := ev.node
		if s.dead[j] {
			return
		}
		s.dead[j] = true
		s.live--
		if s.ok[j] {
			s.ok[j] = false
			s.nOK--
		}
		if s.cfg.DetectAfter >= 0 {
			s.q.Push(s.now+s.cfg.DetectAfter, event{kind: evDetect, node: j})
		}
	case evDetect:
		for _, u := range s.inNeighbors(ev.node) {
			if s.dead[u] {
				continue
			}
			s.ms[u].Exclude(ev.node)
			s.refresh(u)
		}
	}
}

// after accounts for one step of node j that began at start: it injects
// faults, sends the messages in s.buf one o apart, and refreshes j's error.
func (s *runState) after(j gossip.NodeID, start float64) {
	inj := s.cfg.Injector
	t := start
	for i := range s.buf {
		m := &s.buf[i]
		if inj != nil {
			inj.InjectMessage(s.point(j), m)
		}
		t += s.cfg.O
		s.sent[j]++
		s.total++
		if s.sent[j] > s.maxSent {
			s.maxSent = s.sent[j]
		}
		lat := s.cfg.L
		if s.cfg.Distance != nil {
			lat *= s.cfg.Distance(m.From, m.To)
		}
		if s.cfg.Jitter > 0 {
			lat *= 1 + s.cfg.Jitter*s.net.Float64()
		}
		s.q.Push(t+lat, event{kind: evDeliver, msg: s.hold(*m)})
		*m = gossip.Message{}
	}
	s.busy[j] = t
	if inj != nil {
		inj.InjectState(s.point(j), s.ms[j])
	}
	s.refresh(j)
}

func (s *runState) point(j gossip.NodeID) gossip.InjectPoint {
	return gossip.InjectPoint{Node: j, Time: s.now, Sent: s.sent[j], MaxSent: s.maxSent, Rand: s.inj}
}

// refresh recomputes node j's error and whether it counts as accurate.
func (s *runState) refresh(j gossip.NodeID) {
	s.est = s.ms[j].Estimate(s.est[:0])
	e := gossip.RelError(s.est, s.exact)
	s.errs[j] = e
	ok := e <= s.eps && !s.dead[j]
	if s.spec.Finite {
		ok = ok && s.ms[j].(gossip.Finisher).Done()
	}
	if ok != s.ok[j] {
		s.ok[j] = ok
		if ok {
			s.nOK++
		} else {
			s.nOK--
		}
	}
}

func (s *runState) hold(m gossip.Message) int32 {
	if k := len(s.free); k > 0 {
		i := s.free[k-1]
		s.free = s.free[:k-1]
		s.slab[i] = m
		return i
	}
	s.slab = append(s.slab, m)
	return int32(len(s.slab) - 1)
}

func (s *runState) release(i int32) {
	s.slab[i] = gossip.Message{}
	s.free = append(s.free, i)
}

// inNeighbors returns the nodes that send to v (for an undirected overlay,
// v's neighbours), computed on first use.
func (s *runState) inNeighbors(v gossip.NodeID) []gossip.NodeID {
	g := s.cfg.Overlay
	if !g.Directed() {
		out := make([]gossip.NodeID, g.Degree(v))
		for k := range out {
			out[k] = g.Neighbor(v, k)
		}
		return out
	}
	if s.inNbrs == nil {
		s.inNbrs = make([][]gossip.NodeID, s.n)
		for u := range s.n {
			for k := range g.Degree(gossip.NodeID(u)) {
				w := g.Neighbor(gossip.NodeID(u), k)
				s.inNbrs[w] = append(s.inNbrs[w], gossip.NodeID(u))
			}
		}
	}
	return s.inNbrs[v]
}

func (s *runState) maxErr() float64 {
	worst := 0.0
	for i, e := range s.errs {
		if !s.dead[i] && (e > worst || math.IsNaN(e)) {
			worst = e
		}
	}
	return worst
}

func (s *runState) sample() {
	s.res.Trace = append(s.res.Trace, TracePoint{Time: s.now, MaxRelError: s.maxErr(), MaxMsgs: s.maxSent})
}

func (s *runState) result() Result {
	r := s.res
	r.Live = s.live
	r.MaxRelError = s.maxErr()
	r.MaxMsgs = s.maxSent
	r.TotalMsgs = s.total
	// The mean is over the nodes that ran at all: dead-from-start nodes
	// send nothing and would only dilute it.
	r.MeanMsgs = float64(s.total) / float64(s.n-len(s.cfg.Dead))
	r.SimTime = s.now
	return r
}
