package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
)

func init() {
	register("node", "one member of a live group, as its own process (see gossipreduce server)", runNode)
}

// nodeOutput is the JSON of the node verb.
type nodeOutput struct {
	Group    string    `json:"group"`
	ID       int       `json:"id"`
	Nodes    int       `json:"nodes"`
	Algo     string    `json:"algo"`
	Op       string    `json:"op"`
	Result   []float64 `json:"result"`
	Live     int       `json:"live"`
	Epoch    uint64    `json:"epoch"`
	Root     int       `json:"root"`
	Messages int       `json:"messages"`
	Seconds  float64   `json:"seconds"`
}

func runNode(ctx context.Context, args []string, out *stdio) error {
	fs := newFlags("node", out)
	var (
		natsURL  = fs.String("nats", "nats://127.0.0.1:4222", "NATS server URL(s), comma separated")
		group    = fs.String("group", "gossipreduce", "group name (a NATS subject token)")
		id       = fs.Int("id", -1, "this member's id, 0 … nodes-1 (required)")
		nodes    = fs.Int("nodes", 0, "group size N (required)")
		value    = fs.String("value", "", "this member's vector, comma separated (required)")
		sum      = fs.Bool("sum", false, "compute the sum instead of the average")
		algoName = fs.String("algo", "pfcc", "algorithm")
		topo     = fs.String("topology", "complete", "overlay")
		eps      = fs.Float64("eps", 1e-9, "target accuracy ε")
		timeout  = fs.Duration("timeout", 30*time.Second, "give up after this long")
		suspect  = fs.Duration("suspect", time.Second, "silence after which a member is declared dead")
		asJSON   = fs.Bool("json", false, "print one JSON object")
	)
	nf := addNATSFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := nf.check(); err != nil {
		return err
	}
	if *id < 0 || *nodes < 1 || *value == "" {
		return usagef("--id, --nodes and --value are required")
	}
	vec, err := parseVector(*value)
	if err != nil {
		return err
	}
	if err := checkEps(*eps); err != nil {
		return err
	}
	cfg := aggregate.Config{Group: *group, Prefix: nf.prefix, ID: gossip.NodeID(*id), Nodes: *nodes, Algorithm: *algoName,
		Topology: *topo, Epsilon: *eps, Suspect: *suspect}
	if err := cfg.Validate(); err != nil {
		return usagef("%v", err)
	}
	opts, err := nf.options(transport.Options{})
	if err != nil {
		return err
	}
	opts.Name = fmt.Sprintf("gossipreduce-%s-%d", *group, *id)
	tr, err := transport.Connect(ctx, strings.Split(*natsURL, ","), opts)
	if err != nil {
		return err
	}
	defer tr.Close()
	nd, err := aggregate.Join(ctx, tr, cfg)
	if err != nil {
		return err
	}
	defer nd.Close()
	opCtx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	op, do := "average", nd.Average
	if *sum {
		op, do = "sum", nd.Sum
	}
	res, err := do(opCtx, vec)
	if err != nil {
		return err
	}
	o := nodeOutput{Group: *group, ID: *id, Nodes: *nodes, Algo: *algoName, Op: op, Result: res.Value,
		Live: res.Live, Epoch: res.Epoch, Root: int(res.Root), Messages: res.Messages, Seconds: res.Elapsed.Seconds()}
	if *asJSON {
		return writeJSON(out.Stdout, o)
	}
	fmt.Fprintf(out.Stdout, "node %d of %s: %s = %v (%d live members, root %d, %d messages, %.4f s)\n",
		o.ID, o.Group, op, o.Result, o.Live, o.Root, o.Messages, o.Seconds)
	return nil
}

// parseVector reads "1.5,2,-3" into finite float64s.
func parseVector(s string) ([]float64, error) {
	var v []float64
	for _, f := range strings.Split(s, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, usagef("--value %q: %q is not a number", s, f)
		}
		v = append(v, x)
	}
	if err := gossip.CheckFinite(v); err != nil {
		return nil, usagef("--value %q: %v", s, err)
	}
	return v, nil
}
