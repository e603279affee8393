package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/livegroup"
	"github.com/gossipreduce/gossipreduce/transport"
)

func init() {
	register("bench", "live performance side by side: gossip vs recursive doubling, the ring and a central gather over one NATS (time and bytes per member, ratios to the fastest and to rdb)",
		liveFamily, func() command { return &benchCmd{} })
}

// benchAlgo is one algorithm's row of the bench verb (field names are a
// contract). The figures are over the runs that did not fail: time per
// operation, its median and maximum; messages and bytes per member, means.
// Bytes are the encoded messages the members handed to the transport
// during the operation (transport.EncodedLen: header, payload words,
// certificate attachment; runtime control messages too), before
// fragmentation, MACs, session handshakes and NATS framing. The
// ratios are of the median times: to the fastest algorithm of the run
// (the one with the lowest median) and to rdb's; 0 when there is no such
// time (every run failed, or rdb not run).
type benchAlgo struct {
	Algo         string  `json:"algo"`
	SecondsP50   float64 `json:"seconds_p50"`
	SecondsMax   float64 `json:"seconds_max"`
	MsgsPerNode  float64 `json:"msgs_per_node"`
	BytesPerNode float64 `json:"bytes_per_node"`
	RatioToBest  float64 `json:"ratio_to_best"`
	RatioToRDB   float64 `json:"ratio_to_rdb"`
	Failed       int     `json:"failed_runs"`
}

type benchOutput struct {
	Nodes      int         `json:"nodes"`
	Components int         `json:"components"`
	Topology   string      `json:"topology"`
	Eps        float64     `json:"eps"`
	Runs       int         `json:"runs"`
	NATS       string      `json:"nats"`
	Seed       uint64      `json:"seed"`
	Algorithms []benchAlgo `json:"algorithms"`
	Warnings   []string    `json:"warnings"`
}

// benchCmd is the bench verb: --runs rounds, each an operation of every
// --algo on the same inputs, one after the other.
type benchCmd struct {
	algo   listFlag[string]
	group  groupFlags
	timing liveTiming
	nats   natsFlags
	seed   seedFlag
	comps  int
	runs   int
}

// benchAlgos are the algorithms bench compares by default: every kind,
// and rdb, the reference of the ratios. With vectors of more than one
// component the ring (benchVectorAlgo) is added: the bandwidth-optimal
// schedule is the yardstick for vectors; for a single number it is only
// 2(N−1) message times on a chain.
const (
	benchAlgos      = "exchange,ps,pfcc,rdb,central"
	benchVectorAlgo = "ring"
)

func (c *benchCmd) flags(fs *flag.FlagSet) {
	d := familyDefaults[liveFamily]
	registerAlgo(fs, &c.algo, "bench", benchAlgos)
	deprecate(fs, "algos", "algo")
	c.group.register(fs, d)
	registerComponents(fs, &c.comps)
	registerRuns(fs, &c.runs, 20)
	c.timing.register(fs, false)
	registerSeed(fs, &c.seed)
	c.nats.register(fs, "")
}

func (c *benchCmd) check() error {
	if err := firstError(c.nats.check(), c.group.check(), checkCount("runs", c.runs, 1), checkCount("components", c.comps, 1)); err != nil {
		return err
	}
	if !c.algo.given && c.comps > 1 {
		c.algo.vals = append(c.algo.vals, benchVectorAlgo)
	}
	for _, n := range c.algo.vals {
		cfg := aggregate.Config{Group: "check", Nodes: c.group.nodes, Algorithm: n, Topology: c.group.topology, Epsilon: c.group.eps}
		if err := cfg.Validate(); err != nil {
			return usagef("%v", err)
		}
	}
	return c.timing.check()
}

func (c *benchCmd) exec(ctx context.Context, out *stdio) error {
	s := c.seed.value()
	ws := newWarnings("bench", out)
	if c.nats.url != "" {
		ws.warnNoKey(&c.nats, subjectPrefix(c.nats.prefix)+".>")
	}
	net, err := c.nats.openNet(ctx, transport.Options{Seed: s, Buffer: 8192})
	if err != nil {
		return err
	}
	defer net.Close()
	rows, err := c.measure(ctx, net.tr, s, newProgress(out, "bench"))
	if err != nil {
		return err
	}
	o := benchOutput{Nodes: c.group.nodes, Components: c.comps, Topology: c.group.topology, Eps: c.group.eps, Runs: c.runs, NATS: net.url, Seed: s,
		Algorithms: rows, Warnings: ws.list}
	if out.json {
		return writeJSON(out.Stdout, o)
	}
	o.text(out.Stdout)
	return nil
}

// measure runs the rounds and returns a row per algorithm. A group that
// cannot be set up ends the measurement with its error; a run that fails
// is counted.
func (c *benchCmd) measure(ctx context.Context, tr transport.Transport, s uint64, prog *progress) ([]benchAlgo, error) {
	names := c.algo.vals
	secs := make([][]float64, len(names))
	msgs := make([]float64, len(names))
	bytes := make([]float64, len(names))
	rows := make([]benchAlgo, len(names))
	ct := &countingTransport{Transport: tr}
	for r := range c.runs {
		inputs := drawInputs(c.group.nodes, c.comps, s+uint64(r))
		// Each run takes the algorithms in an order of its own, drawn from
		// the seed, so that none always follows the same one: in one
		// process an operation's time depends on what the operation before
		// left of the heap (rhd at 100,000 components: 53 ms after ring,
		// 112 ms after exchange; see operation).
		for _, a := range rand.New(rand.NewPCG(s, uint64(r))).Perm(len(names)) {
			name := names[a]
			cfg := aggregate.Config{Group: fmt.Sprintf("bench-%d-%s-%d", s, name, r), Prefix: c.nats.prefix, Algorithm: name,
				Topology: c.group.topology, Epsilon: c.group.eps, Seed: s + uint64(r)}
			res, sent, err := c.operation(ctx, ct, cfg, inputs)
			if err != nil {
				return nil, err
			}
			v := res.Check()
			if v.Err != nil {
				rows[a].Failed++
				continue
			}
			msgs[a] += float64(v.Total) / float64(c.group.nodes)
			bytes[a] += float64(sent) / float64(c.group.nodes)
			secs[a] = append(secs[a], res.Seconds)
		}
		prog.update(r+1, c.runs)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return benchRows(names, rows, secs, msgs, bytes), nil
}

// operation joins a group of cfg over ct, runs one operation on inputs
// and closes the group, within --timeout, as runGroup does; it returns
// the bytes sent during the operation too. One group at a time, so what
// ct counts meanwhile is this group's (not its joining or leaving).
func (c *benchCmd) operation(ctx context.Context, ct *countingTransport, cfg aggregate.Config, inputs [][]float64) (*livegroup.Outcome, uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timing.timeout)
	defer cancel()
	g, err := livegroup.Join(ctx, ct, cfg, len(inputs), livegroup.None)
	if err != nil {
		return nil, 0, fmt.Errorf("joining %d members: %w (within --timeout %v)", len(inputs), err, c.timing.timeout)
	}
	defer g.Close()
	// Collect the garbage of the operations before, as testing does
	// before a benchmark, so that an operation does not pay for it.
	runtime.GC()
	before := ct.bytes.Load()
	res := g.Average(ctx, inputs)
	return res, ct.bytes.Load() - before, nil
}

// benchRows completes the rows from each algorithm's times and its
// messages and bytes per member, summed over the runs that did not fail.
func benchRows(names []string, rows []benchAlgo, secs [][]float64, msgs, bytes []float64) []benchAlgo {
	rdb, best := 0.0, math.Inf(1)
	for a, name := range names {
		rows[a].Algo = name
		if ok := len(secs[a]); ok > 0 {
			rows[a].MsgsPerNode = msgs[a] / float64(ok)
			rows[a].BytesPerNode = bytes[a] / float64(ok)
			rows[a].SecondsMax = slices.Max(secs[a])
			rows[a].SecondsP50 = median(secs[a])
			best = min(best, rows[a].SecondsP50)
		}
		if name == "rdb" {
			rdb = rows[a].SecondsP50
		}
	}
	for a := range rows {
		if rows[a].SecondsP50 == 0 {
			continue
		}
		rows[a].RatioToBest = rows[a].SecondsP50 / best
		if rdb > 0 {
			rows[a].RatioToRDB = rows[a].SecondsP50 / rdb
		}
	}
	return rows
}

// countingTransport counts the bytes of the messages the members hand to
// the transport, encoded (transport.EncodedLen), as the sends succeed.
type countingTransport struct {
	transport.Transport
	bytes atomic.Uint64
}

// Open opens the node's endpoint and counts what it sends.
func (t *countingTransport) Open(ctx context.Context, g transport.Group, id gossip.NodeID) (transport.Endpoint, error) {
	ep, err := t.Transport.Open(ctx, g, id)
	if err != nil {
		return nil, err
	}
	return &countingEndpoint{Endpoint: ep, bytes: &t.bytes}, nil
}

type countingEndpoint struct {
	transport.Endpoint
	bytes *atomic.Uint64
}

// Send sends m and counts its encoded length once the transport took it.
func (e *countingEndpoint) Send(ctx context.Context, m gossip.Message) error {
	err := e.Endpoint.Send(ctx, m)
	if err == nil {
		e.bytes.Add(uint64(transport.EncodedLen(transport.Header{}, m)))
	}
	return err
}

func (o benchOutput) text(w io.Writer) {
	fmt.Fprintf(w, "live benchmark: %d members, %d components, %s overlay for gossip, eps %g, %d runs each, seed %d, NATS %s\n",
		o.Nodes, o.Components, o.Topology, o.Eps, o.Runs, o.Seed, o.NATS)
	width := len("algo")
	for _, r := range o.Algorithms {
		width = max(width, len(r.Algo))
	}
	fmt.Fprintf(w, "  %-*s %12s %12s %12s %12s %9s %9s\n", width, "algo", "p50 (ms)", "max (ms)", "msgs/node", "kB/node", "vs best", "vs rdb")
	for _, r := range o.Algorithms {
		fmt.Fprintf(w, "  %-*s %12.3f %12.3f %12.1f %12.1f %9.2f %9.2f", width, r.Algo, 1000*r.SecondsP50, 1000*r.SecondsMax, r.MsgsPerNode,
			r.BytesPerNode/1000, r.RatioToBest, r.RatioToRDB)
		if r.Failed > 0 {
			fmt.Fprintf(w, "  (%d runs failed)", r.Failed)
		}
		fmt.Fprintln(w)
	}
}
