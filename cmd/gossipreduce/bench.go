package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/algo"
	"github.com/gossipreduce/gossipreduce/internal/livegroup"
	"github.com/gossipreduce/gossipreduce/transport"
)

func init() {
	registerLegacy("bench", "live performance side by side: gossip vs recursive doubling vs a central gather over one NATS", runBench)
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

func runBench(ctx context.Context, args []string, out *stdio) error {
	fs := newFlags("bench", out)
	var seed seedFlag
	var (
		nodes   = fs.Int("nodes", 16, "number of members N")
		algos   = fs.String("algos", "exchange,ps,pfcc,rdb,central", "algorithms to compare, comma separated (rdb is the reference of the ratios)")
		topo    = fs.String("topology", "complete", "overlay of the gossip algorithms")
		eps     = fs.Float64("eps", 1e-9, "target accuracy ε of the gossip algorithms")
		runs    = fs.Int("runs", 20, "operations per algorithm (alternating between algorithms)")
		natsURL = fs.String("nats", "", "NATS server URL(s) (default: an embedded server)")
		timeout = fs.Duration("timeout", 30*time.Second, "give up a run, joining the group included, after this long")
		asJSON  = fs.Bool("json", false, "print one JSON object")
	)
	fs.Var(&seed, "seed", "random seed (default: drawn at random and printed)")
	nf := addNATSFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := nf.check(); err != nil {
		return err
	}
	if err := checkEps(*eps); err != nil {
		return err
	}
	if *nodes < 1 || *runs < 1 {
		return usagef("--nodes and --runs must be at least 1")
	}
	names := strings.Split(*algos, ",")
	for _, n := range names {
		cfg := aggregate.Config{Group: "check", Nodes: *nodes, Algorithm: n, Topology: *topo, Epsilon: *eps}
		if _, err := algo.Lookup(n); err != nil {
			return usagef("%v", err)
		}
		if err := cfg.Validate(); err != nil {
			return usagef("%v", err)
		}
	}
	s := seed.value()
	ws := newWarnings("bench", out)
	if *natsURL != "" {
		ws.warnNoKey(nf, subjectPrefix(nf.prefix)+".>")
	}
	net, err := nf.openNet(ctx, *natsURL, transport.Options{Seed: s, Buffer: 8192})
	if err != nil {
		return err
	}
	defer net.Close()

	secs := make([][]float64, len(names))
	msgs := make([]float64, len(names))
	rows := make([]benchAlgo, len(names))
	prog := newProgress(out, "bench")
	for r := range *runs {
		inputs := drawInputs(*nodes, 1, s+uint64(r))
		for a, name := range names {
			cfg := aggregate.Config{Group: fmt.Sprintf("bench-%d-%s-%d", s, name, r), Prefix: nf.prefix, Algorithm: name,
				Topology: *topo, Epsilon: *eps, Seed: s + uint64(r)}
			res, err := runGroup(ctx, net.tr, cfg, inputs, livegroup.None, *timeout)
			if err != nil {
				return err
			}
			v := res.Check()
			if v.Err != nil {
				rows[a].Failed++
				continue
			}
			secs[a] = append(secs[a], res.Seconds)
			msgs[a] += float64(v.Total) / float64(*nodes)
		}
		prog.update(r+1, *runs)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	o := benchOutput{Nodes: *nodes, Topology: *topo, Eps: *eps, Runs: *runs, NATS: net.url, Seed: s, Warnings: ws.list}
	rdb := 0.0
	for a, name := range names {
		rows[a].Algo = name
		if ok := len(secs[a]); ok > 0 {
			rows[a].MsgsPerNode = msgs[a] / float64(ok)
			for _, x := range secs[a] {
				rows[a].SecondsMax = max(rows[a].SecondsMax, x)
			}
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
	o.Algorithms = rows
	if *asJSON {
		return writeJSON(out.Stdout, o)
	}
	fmt.Fprintf(out.Stdout, "live benchmark: %d members, %s overlay for gossip, eps %g, %d runs each, seed %d, NATS %s\n",
		o.Nodes, o.Topology, o.Eps, o.Runs, o.Seed, o.NATS)
	fmt.Fprintf(out.Stdout, "  %-8s %12s %12s %12s %10s\n", "algo", "p50 (ms)", "max (ms)", "msgs/node", "vs rdb")
	for _, r := range rows {
		fmt.Fprintf(out.Stdout, "  %-8s %12.3f %12.3f %12.1f %10.2f", r.Algo, 1000*r.SecondsP50, 1000*r.SecondsMax, r.MsgsPerNode, r.RatioToRDB)
		if r.Failed > 0 {
			fmt.Fprintf(out.Stdout, "  (%d runs failed)", r.Failed)
		}
		fmt.Fprintln(out.Stdout)
	}
	return nil
}
