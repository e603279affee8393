package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/gossip"
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
	results []aggregate.Result
	errs    []error
	alive   []bool
	exact   []float64
	seconds float64
	flips   int
	// excluded sums the neighbours the members declared dead or absent
	// (false deaths show here); overflow the messages the transport dropped
	// at full receive buffers during the operation.
	excluded int
	overflow uint64
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

// runGroup joins n members of a fresh group over tr, runs one Average with
// inputs on all of them at once, and closes them.
func runGroup(ctx context.Context, tr transport.Transport, tmpl aggregate.Config, inputs [][]float64, f faults, timeout time.Duration) (*liveOutcome, error) {
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
		nd, err := aggregate.Join(ctx, tr, cfg)
		if err != nil {
			for _, m := range nodes[:i] {
				m.Close()
			}
			return nil, err
		}
		nodes[i] = nd
	}
	out := &liveOutcome{results: make([]aggregate.Result, n), errs: make([]error, n), alive: make([]bool, n)}
	opCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	overflow0 := tr.Stats().Overflow
	var wg sync.WaitGroup
	for i, nd := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out.results[i], out.errs[i] = nd.Average(opCtx, inputs[i])
		}()
	}
	wg.Wait()
	out.seconds = time.Since(start).Seconds()
	out.overflow = tr.Stats().Overflow - overflow0
	for _, nd := range nodes {
		out.excluded += nd.Stats().Excluded
		nd.Close()
	}
	var survivors [][]float64
	var weights []float64
	for i := range nodes {
		out.alive[i] = !crashing[gossip.NodeID(i)]
		if out.alive[i] {
			survivors = append(survivors, inputs[i])
			weights = append(weights, 1)
		}
	}
	exact, err := gossip.Aggregate(survivors, weights)
	if err != nil {
		return nil, err
	}
	out.exact = exact
	for _, f := range flippers {
		out.flips += len(f.Flips())
	}
	return out, nil
}

// check summarises an outcome: whether every live member got the bitwise
// same result, the worst relative error against the survivors' aggregate,
// and the messages sent.
func (o *liveOutcome) check() (identical bool, worst float64, total, most int, firstErr error) {
	identical = true
	var ref []float64
	for i, r := range o.results {
		total += r.Messages
		most = max(most, r.Messages)
		if !o.alive[i] {
			continue
		}
		if o.errs[i] != nil {
			identical = false
			if firstErr == nil {
				firstErr = fmt.Errorf("node %d: %w", i, o.errs[i])
			}
			worst = math.Inf(1)
			continue
		}
		if ref == nil {
			ref = r.Value
		}
		for c := range ref {
			if c >= len(r.Value) || math.Float64bits(ref[c]) != math.Float64bits(r.Value[c]) {
				identical = false
			}
		}
		worst = max(worst, gossip.RelError(r.Value, o.exact))
	}
	return identical, worst, total, most, firstErr
}

// firstResult is the value the first live member returned.
func (o *liveOutcome) firstResult() []float64 {
	for i, r := range o.results {
		if o.alive[i] && o.errs[i] == nil {
			return r.Value
		}
	}
	return nil
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
