// Package livegroup runs whole groups of aggregate members in one process:
// joining them, one operation on every member at once, faults injected into
// some of them, and the check of what they returned. It is the one live-run
// harness of the run, bench and chaos commands and of package aggregate's
// tests.
package livegroup

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/parallel"
	"github.com/gossipreduce/gossipreduce/sdc"
	"github.com/gossipreduce/gossipreduce/transport"
)

// Faults says what goes wrong in a group's operations.
type Faults struct {
	Crash      []gossip.NodeID // members that crash …
	CrashAfter int             // … once they have sent this many messages in an operation
	// Kill makes a crashing member die; it runs on a goroutine of its
	// own. Nil closes the member (which announces that it leaves). Tests
	// over transport.Memory crash it there instead, silently.
	Kill func(id gossip.NodeID, nd *aggregate.Node)
	// Silence, if set, makes a crashing member fall silent at once, on
	// its own goroutine, before Kill runs on another: a member killed
	// only by Kill's goroutine could finish the operation before that
	// goroutine ran (TestExchangeCrashes failed once in CI, a crashed
	// member returning a result: the exchange of 16 over memory takes a
	// few milliseconds).
	Silence func(id gossip.NodeID)

	FlipBit    int           // a single flip of this bit (-1: none) …
	FlipTarget sdc.Target    // … in this kind of word …
	FlipNode   gossip.NodeID // … at this member …
	FlipAfter  int           // … once it has sent this many messages
	FlipRate   float64       // flips per word per message at every member
}

// None is the fault-free schedule.
var None = Faults{FlipBit: -1}

// JoinWorkers is how many members Join joins at once. Each join waits a
// round trip to the server and a little more for a duplicate's answer
// (transport.NATS.Open); one after the other, 256 members took 25 s on a
// busy machine.
const JoinWorkers = 32

// Group is n members of one group, joined in one process.
type Group struct {
	Nodes    []*aggregate.Node
	crashing map[gossip.NodeID]bool
	flippers []sdc.Injector // every flip injector, to count their flips
}

// Join joins members 0 … n−1 of a new group over tr, each with tmpl (ID
// and Nodes filled in, and Founding set: they start the group together)
// and the injectors f asks for. It fails with the first
// member's error if any fails to join within ctx, and then closes those
// that did.
func Join(ctx context.Context, tr transport.Transport, tmpl aggregate.Config, n int, f Faults) (*Group, error) {
	g := &Group{Nodes: make([]*aggregate.Node, n), crashing: map[gossip.NodeID]bool{}}
	for _, c := range f.Crash {
		g.crashing[c] = true
	}
	cfgs := make([]aggregate.Config, n)
	for i := range cfgs {
		cfg := tmpl
		cfg.ID, cfg.Nodes, cfg.Founding = gossip.NodeID(i), n, true
		var injs injectors
		if g.crashing[cfg.ID] {
			kill := f.Kill
			if kill == nil {
				kill = func(_ gossip.NodeID, nd *aggregate.Node) { nd.Close() }
			}
			c := &crashInjector{after: f.CrashAfter, kill: func() { kill(cfg.ID, g.Nodes[i]) }}
			if f.Silence != nil {
				c.silence = func() { f.Silence(cfg.ID) }
			}
			injs = append(injs, c)
		}
		if f.FlipBit >= 0 && cfg.ID == f.FlipNode {
			s, err := sdc.NewSingle(f.FlipBit, f.FlipTarget, f.FlipAfter, 0)
			if err != nil {
				return nil, err
			}
			injs = append(injs, s)
			g.flippers = append(g.flippers, s)
		}
		if f.FlipRate > 0 {
			r, err := sdc.NewRate(f.FlipRate, f.FlipTarget, 0, 63)
			if err != nil {
				return nil, err
			}
			injs = append(injs, r)
			g.flippers = append(g.flippers, r)
		}
		if len(injs) > 0 {
			cfg.Injector = func(uint64) gossip.Injector { return injs }
		}
		cfgs[i] = cfg
	}
	err := parallel.For(ctx, n, JoinWorkers, func(ctx context.Context, i int) error {
		nd, err := aggregate.Join(ctx, tr, cfgs[i])
		g.Nodes[i] = nd
		return err
	}, nil)
	if err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// Average runs one Average on every member at once, member i with
// inputs[i], and returns what each returned.
func (g *Group) Average(ctx context.Context, inputs [][]float64) *Outcome {
	n := len(g.Nodes)
	o := &Outcome{Inputs: inputs, Results: make([]aggregate.Result, n), Errs: make([]error, n), Alive: make([]bool, n)}
	excluded := 0
	for _, nd := range g.Nodes {
		excluded -= nd.Stats().Excluded
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i, nd := range g.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o.Results[i], o.Errs[i] = nd.Average(ctx, inputs[i])
		}()
	}
	wg.Wait()
	o.Seconds = time.Since(start).Seconds()
	for i, nd := range g.Nodes {
		excluded += nd.Stats().Excluded
		o.Alive[i] = !g.crashing[gossip.NodeID(i)]
	}
	o.Excluded = excluded
	for _, f := range g.flippers {
		o.Flips += f.Count()
	}
	return o
}

// Close stops every member (Node.Stop: they leave together, so none
// tells the others).
func (g *Group) Close() {
	// Several at a time: closing an endpoint waits for its member's
	// goroutine and unsubscribes, and one after the other 10,000 members
	// took 14 s to close.
	parallel.For(context.Background(), len(g.Nodes), JoinWorkers, func(_ context.Context, i int) error {
		if nd := g.Nodes[i]; nd != nil {
			nd.Stop() // all at once: nobody is left to tell
		}
		return nil
	}, nil)
}

// Run joins len(inputs) members of a fresh group over tr, runs one Average
// on all of them and closes them. timeout bounds the whole of it, joining
// included: on a busy machine joining hundreds of members is not instant,
// and a set-up that hangs must not outlive the caller's patience.
func Run(ctx context.Context, tr transport.Transport, tmpl aggregate.Config, inputs [][]float64, f Faults, timeout time.Duration) (*Outcome, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	g, err := Join(ctx, tr, tmpl, len(inputs), f)
	if err != nil {
		return nil, fmt.Errorf("joining %d members: %w", len(inputs), err)
	}
	defer g.Close()
	return g.Average(ctx, inputs), nil
}

// Outcome is one operation of a whole group.
type Outcome struct {
	Inputs  [][]float64
	Results []aggregate.Result
	Errs    []error
	Alive   []bool // not meant to crash: these members must return a result
	Seconds float64
	Flips   int
	// Excluded sums the neighbours the members declared dead or absent
	// during the operation (false deaths show here).
	Excluded int
}

// Verdict is what the results of one operation say.
type Verdict struct {
	// Results counts the members meant to survive that returned a result;
	// the other fields but Total and Most are only set when it is positive.
	Results int
	// Value, Live and Absent are the first result's: its value and the
	// members it covers. Exact is the exact aggregate of the inputs of the
	// covered members.
	Value, Exact []float64
	Live         int
	Absent       []gossip.NodeID
	// Identical: every result has the bitwise same value. Worst is the
	// largest relative error of a result against Exact.
	Identical bool
	Worst     float64
	// Total is the messages all members sent, Most the most one sent.
	Total, Most int
	// Err is the first error of a member meant to survive, or a
	// disagreement between results on the members they cover or on the
	// epoch.
	Err error
}

// Check judges an outcome: the results of the members meant to survive
// against the exact aggregate of the members the results say they cover.
func (o *Outcome) Check() Verdict {
	v := Verdict{Identical: true}
	first := -1
	for i, r := range o.Results {
		v.Total += r.Messages
		v.Most = max(v.Most, r.Messages)
		if !o.Alive[i] {
			continue
		}
		if o.Errs[i] != nil {
			if v.Err == nil {
				v.Err = fmt.Errorf("node %d: %w", i, o.Errs[i])
			}
			continue
		}
		v.Results++
		if first < 0 {
			first = i
			v.Value, v.Live, v.Absent = r.Value, r.Live, r.Absent
			continue
		}
		if len(r.Value) != len(v.Value) {
			v.Identical = false
		}
		for c := range min(len(r.Value), len(v.Value)) {
			if math.Float64bits(v.Value[c]) != math.Float64bits(r.Value[c]) {
				v.Identical = false
			}
		}
		if r.Epoch != o.Results[first].Epoch && v.Err == nil {
			v.Err = fmt.Errorf("members disagree on the epoch: node %d has %d, node %d %d", first, o.Results[first].Epoch, i, r.Epoch)
		}
		if (r.Live != v.Live || !slices.Equal(r.Absent, v.Absent)) && v.Err == nil {
			v.Err = fmt.Errorf("members disagree on what the result covers: node %d has %s, node %d %s",
				first, Coverage(v.Live, len(o.Results), v.Absent), i, Coverage(r.Live, len(o.Results), r.Absent))
		}
	}
	if v.Results == 0 {
		return v
	}
	absent := map[gossip.NodeID]bool{}
	for _, a := range v.Absent {
		absent[a] = true
	}
	var covered [][]float64
	var weights []float64
	for i, in := range o.Inputs {
		if !absent[gossip.NodeID(i)] {
			covered = append(covered, in)
			weights = append(weights, 1)
		}
	}
	exact, err := gossip.Aggregate(covered, weights)
	if err != nil {
		if v.Err == nil {
			v.Err = fmt.Errorf("the result covers no member: %w", err)
		}
		return v
	}
	v.Exact = exact
	for i, r := range o.Results {
		if o.Alive[i] && o.Errs[i] == nil {
			if e := gossip.RelError(r.Value, exact); e > v.Worst || math.IsNaN(e) {
				v.Worst = e
			}
		}
	}
	return v
}

// Coverage says whose inputs of n members a result covers: "inputs of 16
// of 16 members, none absent", or "inputs of 14 of 16 members, absent 3 9".
// A covered input may be of a member that has died since it contributed
// (dimension exchange keeps it), so the count is not of members alive.
func Coverage(live, n int, absent []gossip.NodeID) string {
	s := fmt.Sprintf("inputs of %d of %d members", live, n)
	if len(absent) == 0 {
		return s + ", none absent"
	}
	return s + ", absent " + IDList(absent)
}

// IDList formats member ids as "1 3 5".
func IDList(ids []gossip.NodeID) string {
	f := make([]string, len(ids))
	for i, id := range ids {
		f[i] = id.String()
	}
	return strings.Join(f, " ")
}

// crashInjector kills its member once it has sent after messages.
type crashInjector struct {
	after   int
	silence func() // nil: none
	kill    func()
	once    sync.Once
}

func (c *crashInjector) InjectMessage(gossip.InjectPoint, *gossip.Message) {}
func (c *crashInjector) InjectState(p gossip.InjectPoint, _ gossip.Machine) {
	if p.Sent >= c.after {
		c.once.Do(func() {
			if c.silence != nil {
				c.silence()
			}
			go c.kill() // Close waits for the member's goroutine, which is the caller
		})
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
