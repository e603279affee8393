package aggregate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
)

// MonitorConfig configures a Monitor: the group (as for Join) and the
// metrics it aggregates.
type MonitorConfig struct {
	Config
	// Metrics are the names of the metrics, the same list in the same order
	// at every member. Every live member takes part in every metric: one
	// that has not Set (or Added to) a metric yet counts as 0 in it, which
	// is right for a counter and pulls a gauge's Mean, Min or Max toward 0
	// until the member sets it. Set gauges as soon as StartMonitor returns:
	// the first aggregation this member starts is due at the next multiple
	// of Interval, but it may take part, with zeros, in one the others
	// started before that. Count is the live members, not those that set
	// the metric.
	Metrics []string
	// Integers names the metrics among Metrics that take whole values only
	// (counters, counts, up/down flags): Set and Add refuse a value with a
	// fraction, and a snapshot's Sum of them is a whole number, exact while
	// the group's accuracy allows (Summary.Exact). Every member must
	// declare the same.
	Integers []string
	// Interval is how often the group aggregates (default 10s). Aggregations
	// start on multiples of Interval since the Unix epoch, by each member's
	// clock, so members whose clocks agree to well within Interval start the
	// same aggregation together.
	Interval time.Duration
	// Timeout bounds one aggregation (default Interval).
	Timeout time.Duration
	// OnSnapshot, if set, is called with every completed aggregation, from
	// the monitor's own goroutines; it must not block for long.
	OnSnapshot func(Snapshot)
}

// Summary is one metric across the live members of the group. Count, Sum,
// Mean and Variance cover exactly the live members. Min and Max are taken
// over the live members and, when a member fails during the aggregation
// after its value has spread, may include that member's value (a maximum
// cannot be taken back); the next aggregation no longer counts it.
type Summary struct {
	Count int // live members
	Sum   float64
	Mean  float64
	Min   float64
	Max   float64
	// Variance is the population variance, E[x²] - E[x]², computed from
	// the averaged squares: with a target accuracy ε, expect an absolute
	// error of about ε·E[x²], which swamps a variance much smaller than the
	// squared mean.
	Variance float64
	// Exact reports that Sum is the exact sum of the members' values: a
	// metric declared in MonitorConfig.Integers whose sum the group's
	// accuracy pins to one whole number. The members' values are whole, so
	// their sum is; when they share a sign (Min ≥ 0 or Max ≤ 0: counters,
	// counts, flags) the agreed Mean is within ε·|Mean| of theirs
	// (relative accuracy ε, Config.Epsilon), so Mean·Count is within
	// ε·|Sum| + 2⁻⁵¹·|Sum| of it, and rounding gives the sum itself while
	// that bound is below one half (|Sum| below about 5·10⁸ at the default
	// ε 1e-9). Otherwise Sum is Mean·Count and Exact is false.
	Exact bool
}

// Snapshot is one aggregation of every metric.
type Snapshot struct {
	// Epoch identifies the aggregation: the Unix time in milliseconds at
	// which it was due.
	Epoch uint64
	// Due is the time the epoch stands for; Completed when this member had
	// the result. Age tells how stale a snapshot is.
	Due, Completed time.Time
	// Live is the number of members covered; Members the group size.
	Live, Members int
	// Absent are the members not covered (left, crashed or not started).
	Absent []gossip.NodeID
	// View and Names are the view of an elastic group the aggregation ran
	// over and its members' names (Absent holds ids into Names); zero for
	// a fixed group.
	View    uint64
	Names   []string
	Metrics map[string]Summary
}

// Age returns how long ago the aggregation was due.
func (s Snapshot) Age(now time.Time) time.Duration { return now.Sub(s.Due) }

// Monitor keeps a member's local metrics and the group's aggregate of them
// up to date: every Interval, and on demand, the group computes, for every
// metric, the count of live members, the sum, mean, minimum, maximum and
// variance over them. Members may join (StartMonitor) and leave (Close) at
// any time, or crash; the next aggregations count whoever is there. Safe for
// concurrent use.
type Monitor struct {
	cfg    MonitorConfig
	node   *Node
	index  map[string]int
	quit   chan struct{}
	closed sync.WaitGroup

	integer []bool // per metric: declared in Integers

	mu     sync.Mutex
	local  []float64
	latest Snapshot
	have   bool
	last   uint64 // the latest epoch this member took part in or asked for
	errs   int
}

// StartMonitor joins the group and starts aggregating every Interval.
func StartMonitor(ctx context.Context, t transport.Transport, cfg MonitorConfig) (*Monitor, error) {
	if len(cfg.Metrics) == 0 {
		return nil, fmt.Errorf("aggregate: %w: no metrics", gossip.ErrInvalidConfig)
	}
	if cfg.Interval == 0 {
		cfg.Interval = 10 * time.Second
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = cfg.Interval
	}
	if cfg.Interval < time.Millisecond || cfg.Timeout <= 0 {
		return nil, fmt.Errorf("aggregate: %w: interval %v, timeout %v", gossip.ErrInvalidConfig, cfg.Interval, cfg.Timeout)
	}
	m := &Monitor{cfg: cfg, index: map[string]int{}, quit: make(chan struct{}), local: make([]float64, len(cfg.Metrics)),
		integer: make([]bool, len(cfg.Metrics))}
	for i, name := range cfg.Metrics {
		if _, dup := m.index[name]; dup || name == "" {
			return nil, fmt.Errorf("aggregate: %w: metric %q empty or listed twice", gossip.ErrInvalidConfig, name)
		}
		m.index[name] = i
	}
	for _, name := range cfg.Integers {
		i, ok := m.index[name]
		if !ok || m.integer[i] {
			return nil, fmt.Errorf("aggregate: %w: integer metric %q not among the metrics, or listed twice", gossip.ErrInvalidConfig, name)
		}
		m.integer[i] = true
	}
	// The metric names, and which are whole, are part of what every member
	// must agree on.
	cfg.Config.hashExtra = "metrics:" + strings.Join(cfg.Metrics, "\x00") + "\x01integers:" + strings.Join(cfg.Integers, "\x00")
	var node *Node
	var err error
	if cfg.Name != "" {
		// An elastic group aggregates every Interval; Refresh runs an
		// aggregation the others do not join (they have no autoJoin yet).
		node, err = joinElastic(ctx, t, cfg.Config)
	} else {
		node, err = join(ctx, t, cfg.Config, m.autoJoin)
	}
	if err != nil {
		return nil, err
	}
	if node.r.spec.Finite && !node.r.spec.Extremes {
		node.Close()
		return nil, fmt.Errorf("aggregate: %w: a monitor needs min and max: a gossip algorithm or exchange, not %s", gossip.ErrInvalidConfig, node.r.Algorithm)
	}
	m.mu.Lock()
	m.node = node // from now on autoJoin takes part (see there)
	m.mu.Unlock()
	m.closed.Add(1)
	go m.loop()
	return m, nil
}

// Set sets a local metric. Until a metric is first set or added to, this
// member counts as 0 in it (see MonitorConfig.Metrics).
func (m *Monitor) Set(name string, v float64) error {
	return m.update(name, func(float64) float64 { return v })
}

// Add adds delta to a local metric (a counter).
func (m *Monitor) Add(name string, delta float64) error {
	return m.update(name, func(old float64) float64 { return old + delta })
}

func (m *Monitor) update(name string, f func(float64) float64) error {
	i, ok := m.index[name]
	if !ok {
		return fmt.Errorf("aggregate: %w: unknown metric %q", gossip.ErrInvalidConfig, name)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	v := f(m.local[i])
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("aggregate: metric %q: %w: %v", name, gossip.ErrNotFinite, v)
	}
	if m.integer[i] && (v != math.Trunc(v) || math.Abs(v) > 1<<53) {
		return fmt.Errorf("aggregate: %w: metric %q is declared whole (MonitorConfig.Integers) and cannot take %v", gossip.ErrInvalidConfig, name, v)
	}
	m.local[i] = v
	return nil
}

// Local returns this member's own value of a metric.
func (m *Monitor) Local(name string) (float64, bool) {
	i, ok := m.index[name]
	if !ok {
		return 0, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.local[i], true
}

// Latest returns the most recent snapshot, if there is one yet.
func (m *Monitor) Latest() (Snapshot, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.latest, m.have
}

// Refresh starts an aggregation now (the other members take part as soon
// as they hear of it) and returns its snapshot.
func (m *Monitor) Refresh(ctx context.Context) (Snapshot, error) {
	m.mu.Lock()
	epoch := max(uint64(time.Now().UnixMilli()), m.last+1)
	m.mu.Unlock()
	return m.run(ctx, epoch)
}

// Failures returns how many aggregations this member took part in that
// ended without a result (timed out, excluded, group mismatch).
func (m *Monitor) Failures() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.errs
}

// Node returns the member's underlying node, for its Stats.
func (m *Monitor) Node() *Node { return m.node }

// Close leaves the group (the others stop counting this member from their
// next aggregation) and stops the monitor.
func (m *Monitor) Close() error {
	select {
	case <-m.quit:
	default:
		close(m.quit)
	}
	m.closed.Wait()
	return m.node.Close()
}

func (m *Monitor) loop() {
	defer m.closed.Done()
	for {
		m.mu.Lock()
		last := m.last
		m.mu.Unlock()
		next := nextEpoch(time.Now().UnixMilli(), int64(last), m.cfg.Interval.Milliseconds())
		t := time.NewTimer(time.Until(time.UnixMilli(next)))
		select {
		case <-m.quit:
			t.Stop()
			return
		case <-t.C:
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-m.quit:
				cancel()
			case <-ctx.Done():
			}
		}()
		_, err := m.run(ctx, uint64(next))
		cancel()
		if err != nil && !errors.Is(err, errNotAfter) {
			m.node.log.Debug("aggregation failed", "epoch", next, "err", err)
		}
	}
}

// nextEpoch returns the epoch (a boundary of the interval iv, in
// milliseconds since 1970) that a member whose last aggregation was last
// runs next, at now: the next boundary, or the one just passed if this
// member has not run it and is less than half an interval late. The
// second case matters: an aggregation that timed out (Timeout defaults to
// Interval) ends just after the next boundary, and a member that waited
// for the one after would run every other epoch from then on, out of
// step with the members whose aggregation had succeeded. Two halves of a
// group each waiting for the other's epoch never finish one again (a
// helper's partition trials: every aggregation failed after the heal).
func nextEpoch(now, last, iv int64) int64 {
	passed := now / iv * iv
	if last > 0 && passed > last && now-passed < iv/2 {
		return passed
	}
	return passed + iv
}

// request builds this member's contribution: each metric and its square
// (averaged), and each metric and its negation (maximised).
func (m *Monitor) request(epoch uint64) Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := len(m.local)
	req := Request{Epoch: epoch, Values: make([]float64, 2*k), Extremes: make([]float64, 2*k)}
	for i, v := range m.local {
		req.Values[i], req.Values[k+i] = v, v*v
		req.Extremes[i], req.Extremes[k+i] = v, -v
	}
	return req
}

func (m *Monitor) run(ctx context.Context, epoch uint64) (Snapshot, error) {
	m.mu.Lock()
	if epoch <= m.last {
		m.mu.Unlock()
		return Snapshot{}, fmt.Errorf("%w: %d", errNotAfter, epoch)
	}
	m.last = epoch
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, m.cfg.Timeout)
	defer cancel()
	res, err := m.node.Reduce(ctx, m.request(epoch))
	return m.record(epoch, res, err)
}

// autoJoin runs on the node's goroutine when another member started an
// aggregation this one has not: it takes part with its current metrics.
func (m *Monitor) autoJoin(epoch uint64) *request {
	m.mu.Lock()
	// Not before StartMonitor has the node: the driver runs as soon as
	// the member has joined, and a record before then read m.node while
	// StartMonitor wrote it (a data race under -race, and a nil node).
	if m.node == nil || epoch <= m.last {
		m.mu.Unlock()
		return nil
	}
	m.last = epoch
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.Timeout)
	return &request{ctx: ctx, req: m.request(epoch), done: func(res Result, err error) {
		cancel()
		m.record(epoch, res, err)
	}}
}

func (m *Monitor) record(epoch uint64, res Result, err error) (Snapshot, error) {
	if err != nil {
		m.mu.Lock()
		m.errs++
		m.mu.Unlock()
		return Snapshot{}, err
	}
	k := len(m.cfg.Metrics)
	s := Snapshot{Epoch: epoch, Due: time.UnixMilli(int64(epoch)), Completed: res.At, Live: res.Live,
		Members: m.node.r.Nodes, Absent: slices.Clone(res.Absent), Metrics: make(map[string]Summary, k),
		View: res.View, Names: res.Names}
	if res.Names != nil {
		s.Members = len(res.Names)
	}
	for i, name := range m.cfg.Metrics {
		mean, sq := res.Value[i], res.Value[k+i]
		sum := mean * float64(res.Live)
		exact := false
		lo, hi := -res.Extremes[k+i], res.Extremes[i]
		if m.integer[i] && (lo >= 0 || hi <= 0) {
			sum, exact = wholeSum(sum, m.node.r.Epsilon)
		}
		s.Metrics[name] = Summary{
			Count: res.Live, Mean: mean, Sum: sum, Exact: exact,
			Max: hi, Min: lo, Variance: max(sq-mean*mean, 0),
		}
	}
	m.mu.Lock()
	if !m.have || s.Epoch > m.latest.Epoch {
		m.latest, m.have = s, true
	}
	m.mu.Unlock()
	if m.cfg.OnSnapshot != nil {
		m.cfg.OnSnapshot(s)
	}
	return s, nil
}

// wholeSum rounds sum = Mean·Count of a whole-valued metric whose values
// share a sign (so that the mean's relative accuracy eps bounds the sum's)
// to the whole number it stands for, when eps pins it to one (see
// Summary.Exact); the product adds one rounding, which 2⁻⁵¹ covers with
// room to spare.
func wholeSum(sum, eps float64) (float64, bool) {
	bound := (eps*(1+eps) + 0x1p-51) * math.Abs(sum)
	if bound >= 0.5 {
		return sum, false
	}
	return math.Round(sum), true
}
