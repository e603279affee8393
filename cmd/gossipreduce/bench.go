package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/internal/livegroup"
	"github.com/gossipreduce/gossipreduce/transport"
)

func init() {
	register("bench", "live performance side by side: gossip vs recursive doubling vs a central gather over one NATS (times as ratios to rdb)",
		liveFamily, func() command { return &benchCmd{} })
}

// benchAlgo is one algorithm's row of the bench verb (field names are a
// contract).
type benchAlgo struct {
	Algo        string  `json:"algo"`
	SecondsP50  float64 `json:"seconds_p50"`
	SecondsMax  float64 `json:"seconds_max"`
	MsgsPerNode float64 `json:"msgs_per_node"`
	RatioToRDB  float64 `json:"ratio_to_rdb"`
	Failed      int     `json:"failed_runs"`
}

type benchOutput struct {
	Nodes      int         `json:"nodes"`
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
	runs   int
}

// benchAlgos are the algorithms bench compares by default: every kind,
// and rdb, the reference of the ratios.
const benchAlgos = "exchange,ps,pfcc,rdb,central"

func (c *benchCmd) flags(fs *flag.FlagSet) {
	d := familyDefaults[liveFamily]
	registerAlgo(fs, &c.algo, "bench", benchAlgos)
	deprecate(fs, "algos", "algo")
	c.group.register(fs, d)
	registerRuns(fs, &c.runs, 20)
	c.timing.register(fs, false)
	registerSeed(fs, &c.seed)
	c.nats.register(fs, "")
}

func (c *benchCmd) check() error {
	if err := firstError(c.nats.check(), c.group.check(), checkCount("runs", c.runs, 1)); err != nil {
		return err
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
	o := benchOutput{Nodes: c.group.nodes, Topology: c.group.topology, Eps: c.group.eps, Runs: c.runs, NATS: net.url, Seed: s,
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
	rows := make([]benchAlgo, len(names))
	for r := range c.runs {
		inputs := drawInputs(c.group.nodes, 1, s+uint64(r))
		for a, name := range names {
			cfg := aggregate.Config{Group: fmt.Sprintf("bench-%d-%s-%d", s, name, r), Prefix: c.nats.prefix, Algorithm: name,
				Topology: c.group.topology, Epsilon: c.group.eps, Seed: s + uint64(r)}
			res, err := runGroup(ctx, tr, cfg, inputs, livegroup.None, c.timing.timeout)
			if err != nil {
				return nil, err
			}
			v := res.Check()
			if v.Err != nil {
				rows[a].Failed++
				continue
			}
			msgs[a] += float64(v.Total) / float64(c.group.nodes)
			secs[a] = append(secs[a], res.Seconds)
		}
		prog.update(r+1, c.runs)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return benchRows(names, rows, secs, msgs), nil
}

// benchRows completes the rows from each algorithm's times and its
// messages per member, summed over the runs that did not fail.
func benchRows(names []string, rows []benchAlgo, secs [][]float64, msgs []float64) []benchAlgo {
	rdb := 0.0
	for a, name := range names {
		rows[a].Algo = name
		if ok := len(secs[a]); ok > 0 {
			rows[a].MsgsPerNode = msgs[a] / float64(ok)
			rows[a].SecondsMax = slices.Max(secs[a])
			rows[a].SecondsP50 = median(secs[a])
		}
		if name == "rdb" {
			rdb = rows[a].SecondsP50
		}
	}
	for a := range rows {
		if rdb > 0 {
			rows[a].RatioToRDB = rows[a].SecondsP50 / rdb
		}
	}
	return rows
}

func (o benchOutput) text(w io.Writer) {
	fmt.Fprintf(w, "live benchmark: %d members, %s overlay for gossip, eps %g, %d runs each, seed %d, NATS %s\n",
		o.Nodes, o.Topology, o.Eps, o.Runs, o.Seed, o.NATS)
	fmt.Fprintf(w, "  %-8s %12s %12s %12s %10s\n", "algo", "p50 (ms)", "max (ms)", "msgs/node", "vs rdb")
	for _, r := range o.Algorithms {
		fmt.Fprintf(w, "  %-8s %12.3f %12.3f %12.1f %10.2f", r.Algo, 1000*r.SecondsP50, 1000*r.SecondsMax, r.MsgsPerNode, r.RatioToRDB)
		if r.Failed > 0 {
			fmt.Fprintf(w, "  (%d runs failed)", r.Failed)
		}
		fmt.Fprintln(w)
	}
}
