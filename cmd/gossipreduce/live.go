package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/parallel"
	"github.com/gossipreduce/gossipreduce/sdc"
	"github.com/gossipreduce/gossipreduce/transport"
)

// liveNet is the NATS a live verb uses: an embedded server on a random
// loopback port, or external servers.
type liveNet struct {
	srv *transport.Server
	tr  *transport.NATS
	url string
}

func (l *liveNet) Close() {
	l.tr.Close()
	if l.srv != nil {
		l.srv.Shutdown()
	}
}

// faults says what goes wrong in one live operation.
type faults struct {
	crash      []gossip.NodeID // members that crash …
	crashAfter int             // … once they have sent this many messages
	flipBit    int             // a single flip of this bit (-1: none) …
	flipTarget sdc.Target      // … in this kind of word …
	flipNode   gossip.NodeID   // … at this member …
	flipAfter  int             // … once it has sent this many messages
	flipRate   float64         // flips per word per message at every member
}

// liveOutcome is one live operation of a whole group.
type liveOutcome struct {
	inputs  [][]float64
	results []aggregate.Result
	errs    []error
	alive   []bool // not meant to crash: these members must return a result
	seconds float64
	flips   int
	// excluded sums the neighbours the members declared dead or absent
	// (false deaths show here).
	excluded int
}

// crashInjector closes its member once it has sent after messages.
type crashInjector struct {
	after int
	kill  func()
	once  sync.Once
}

func (c *crashInjector) InjectMessage(gossip.InjectPoint, *gossip.Message) {}
func (c *crashInjector) InjectState(p gossip.InjectPoint, _ gossip.Machine) {
	if p.Sent >= c.after {
		c.once.Do(func() { go c.kill() }) // Close waits for the member's goroutine, which is the caller
	}
}

// injectors applies several injectors in order.
type injectors []gossip.Injector

func (c injectors) InjectMessage(p gossip.InjectPoint, m *gossip.Message) {
	for _, i := range c {
		i.InjectMessage(p, m)
	}
}

func (c injectors) InjectState(p gossip.InjectPoint, m gossip.Machine) {
	for _, i := range c {
		i.InjectState(p, m)
	}
}

// sharedIdle is the aggregate.Config.Idle for n members sharing this
// process's cores: the default 4 ms, or 120 µs per member per core if that
// is longer (15 ms for 256 members on two cores).
//
// A member takes a gossip step on its own after a silence of Idle, and
// every such step adds a message that circulates until the operation ends.
// On its own machine a member hears a message every few microseconds and a
// 4 ms silence means loss; members sharing two cores hear one every
// 0.6 ms at 256 members (about 100,000 messages per second and core
// through the embedded server), a 4 ms silence came by chance once in
// e^6.7 ≈ 800 gaps, and the added messages drowned the exchange: 5,000 to
// 9,000 messages per member instead of 250, sometimes no result in 30 s.
// 120 µs·N/cores makes the silence about twelve average gaps (once in
// e^12 ≈ 160,000).
func sharedIdle(n int) time.Duration {
	return max(4*time.Millisecond, time.Duration(n)*120*time.Microsecond/time.Duration(runtime.GOMAXPROCS(0)))
}

// joinWorkers is how many members of a group runGroup joins at once.
const joinWorkers = 32

// runGroup joins n members of a fresh group over tr, runs one Average with
// inputs on all of them at once, and closes them. timeout bounds the whole
// of it, joining included: on a busy machine joining hundreds of members
// is not instant, and a set-up that hangs must not outlive --timeout.
func runGroup(ctx context.Context, tr transport.Transport, tmpl aggregate.Config, inputs [][]float64, f faults, timeout time.Duration) (*liveOutcome, error) {
	ctx, cancelAll := context.WithTimeout(ctx, timeout)
	defer cancelAll()
	n := len(inputs)
	if tmpl.Idle == 0 {
		tmpl.Idle = sharedIdle(n)
	}
	nodes := make([]*aggregate.Node, n)
	var flippers []sdc.Injector // every flip injector, to count their flips
	crashing := map[gossip.NodeID]bool{}
	for _, c := range f.crash {
		crashing[c] = true
	}
	cfgs := make([]aggregate.Config, n)
	for i := range nodes {
		cfg := tmpl
		cfg.ID, cfg.Nodes = gossip.NodeID(i), n
		var injs []gossip.Injector
		if crashing[cfg.ID] {
			ci := &crashInjector{after: f.crashAfter}
			ci.kill = func() { nodes[i].Close() }
			injs = append(injs, ci)
		}
		if f.flipBit >= 0 && cfg.ID == f.flipNode {
			s, err := sdc.NewSingle(f.flipBit, f.flipTarget, f.flipAfter, 0)
			if err != nil {
				return nil, err
			}
			injs = append(injs, s)
			flippers = append(flippers, s)
		}
		if f.flipRate > 0 {
			r, err := sdc.NewRate(f.flipRate, f.flipTarget, 0, 63)
			if err != nil {
				return nil, err
			}
			injs = append(injs, r)
			flippers = append(flippers, r)
		}
		if len(injs) > 0 {
			cfg.Injector = func(uint64) gossip.Injector { return injectors(injs) }
		}
		cfgs[i] = cfg
	}
	// Join concurrently: each join waits a round trip to the server and a
	// little more for a duplicate's answer (transport.NATS.Open), which one
	// after the other took 25 s for 256 members on a busy machine.
	err := parallel.For(ctx, n, joinWorkers, func(ctx context.Context, i int) error {
		nd, err := aggregate.Join(ctx, tr, cfgs[i])
		nodes[i] = nd
		return err
	}, nil)
	if err != nil {
		for _, m := range nodes {
			if m != nil {
				m.Close()
			}
		}
		return nil, fmt.Errorf("joining %d members (within --timeout %v): %w", n, timeout, err)
	}
	out := &liveOutcome{inputs: inputs, results: make([]aggregate.Result, n), errs: make([]error, n), alive: make([]bool, n)}
	start := time.Now()
	var wg sync.WaitGroup
	for i, nd := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out.results[i], out.errs[i] = nd.Average(ctx, inputs[i])
		}()
	}
	wg.Wait()
	out.seconds = time.Since(start).Seconds()
	for _, nd := range nodes {
		out.excluded += nd.Stats().Excluded
		nd.Close()
	}
	for i := range nodes {
		out.alive[i] = !crashing[gossip.NodeID(i)]
	}
	for _, f := range flippers {
		out.flips += len(f.Flips())
	}
	return out, nil
}

// verdict is what the results of one operation say.
type verdict struct {
	// results counts the members meant to survive that returned a result;
	// the other fields but total and most are only set when it is positive.
	results int
	// value, live and absent are the first result's: its value and the
	// members it covers. exact is the exact aggregate of the inputs of the
	// covered members.
	value, exact []float64
	live         int
	absent       []gossip.NodeID
	// identical: every result has the bitwise same value. worst is the
	// largest relative error of a result against exact.
	identical bool
	worst     float64
	// total is the messages all members sent, most the most one sent.
	total, most int
	// err is the first error of a member meant to survive, or a
	// disagreement between results on the members they cover.
	err error
}

// check judges an outcome: the results of the members meant to survive
// against the exact aggregate of the members the results say they cover.
func (o *liveOutcome) check() verdict {
	v := verdict{identical: true}
	first := -1
	for i, r := range o.results {
		v.total += r.Messages
		v.most = max(v.most, r.Messages)
		if !o.alive[i] {
			continue
		}
		if o.errs[i] != nil {
			if v.err == nil {
				v.err = fmt.Errorf("node %d: %w", i, o.errs[i])
			}
			continue
		}
		v.results++
		if first < 0 {
			first = i
			v.value, v.live, v.absent = r.Value, r.Live, r.Absent
			continue
		}
		if len(r.Value) != len(v.value) {
			v.identical = false
		}
		for c := range min(len(r.Value), len(v.value)) {
			if math.Float64bits(v.value[c]) != math.Float64bits(r.Value[c]) {
				v.identical = false
			}
		}
		if (r.Live != v.live || !slices.Equal(r.Absent, v.absent)) && v.err == nil {
			v.err = fmt.Errorf("members disagree on what the result covers: node %d has %s, node %d %s",
				first, coverage(v.live, len(o.results), v.absent), i, coverage(r.Live, len(o.results), r.Absent))
		}
	}
	if v.results == 0 {
		return v
	}
	absent := map[gossip.NodeID]bool{}
	for _, a := range v.absent {
		absent[a] = true
	}
	var covered [][]float64
	var weights []float64
	for i, in := range o.inputs {
		if !absent[gossip.NodeID(i)] {
			covered = append(covered, in)
			weights = append(weights, 1)
		}
	}
	exact, err := gossip.Aggregate(covered, weights)
	if err != nil {
		if v.err == nil {
			v.err = fmt.Errorf("the result covers no member: %w", err)
		}
		return v
	}
	v.exact = exact
	for i, r := range o.results {
		if o.alive[i] && o.errs[i] == nil {
			if e := gossip.RelError(r.Value, exact); e > v.worst || math.IsNaN(e) {
				v.worst = e
			}
		}
	}
	return v
}

// drawInputs returns n vectors of k values uniform in [0, 1) for a seed.
func drawInputs(n, k int, seed uint64) [][]float64 {
	r := rand.New(rand.NewPCG(seed, 0x1e7))
	in := make([][]float64, n)
	for i := range in {
		in[i] = make([]float64, k)
		for c := range in[i] {
			in[i][c] = r.Float64()
		}
	}
	return in
}

// median returns the median of xs (which it sorts).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	m := len(xs) / 2
	if len(xs)%2 == 1 {
		return xs[m]
	}
	return (xs[m-1] + xs[m]) / 2
}
