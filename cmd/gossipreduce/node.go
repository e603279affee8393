package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/livegroup"
	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/nats-io/nats.go"
)

func init() {
	register("node", "one member of a live group, as its own process (see gossipreduce server)", liveFamily, func() command { return &nodeCmd{} })
}

// nodeOutput is the JSON of the node verb. Result, Live, Absent and Root
// are what the group agreed on, null when the node failed; Estimate is then
// this member's own estimate, which the others do not share.
type nodeOutput struct {
	Group string `json:"group"`
	ID    int    `json:"id"`
	Nodes int    `json:"nodes"`
	// Name, View and Members describe a member of an elastic group
	// (--name): the view the operation ran over and its members' names
	// (member i of the view is Members[i]: Absent holds such ids).
	Name     string          `json:"name,omitempty"`
	View     uint64          `json:"view,omitempty"`
	Members  []string        `json:"members,omitempty"`
	Algo     string          `json:"algo"`
	Op       string          `json:"op"`
	Result   []float64       `json:"result"`
	Estimate []float64       `json:"estimate,omitempty"`
	Live     *int            `json:"live"`
	Absent   []gossip.NodeID `json:"absent"`
	Epoch    uint64          `json:"epoch"`
	Root     *int            `json:"root"`
	Messages int             `json:"messages"`
	Seconds  float64         `json:"seconds"`
	dropCounts
	Warnings []string `json:"warnings"`
	Error    string   `json:"error,omitempty"`
}

// nodeCmd is the node verb: one member joins its group and runs one
// operation with the others.
type nodeCmd struct {
	algo   listFlag[string]
	group  groupFlags
	timing liveTiming
	nats   natsFlags
	name   string // --group
	id     int
	member string // --name
	min    int    // --min-members
	value  string
	sum    bool
	linger time.Duration
	state  string           // --state-file
	debug  bool             // -v
	cfg    aggregate.Config // checked
	vec    []float64        // --value, parsed
}

func (c *nodeCmd) flags(fs *flag.FlagSet) {
	d := familyDefaults[liveFamily]
	d.nodes = 0 // required (flagDifferences)
	registerAlgo(fs, &c.algo, "node", d.algo)
	c.group.register(fs, d)
	c.timing.register(fs, true)
	c.nats.register(fs, "nats://127.0.0.1:4222")
	fs.StringVar(&c.name, "group", "gossipreduce", "group name (a NATS subject token)")
	fs.IntVar(&c.id, "id", -1, "this member's id, 0 … nodes-1 (required, unless --name)")
	fs.StringVar(&c.member, "name", "", "join an elastic group by this name instead of --id and --nodes: the members agree on views, and the operation runs over one")
	fs.IntVar(&c.min, "min-members", 0, "with --name: wait until the view has at least this many members before the operation")
	fs.StringVar(&c.value, "value", "", "this member's vector, comma separated (required)")
	fs.BoolVar(&c.sum, "sum", false, "compute the sum instead of the average")
	fs.DurationVar(&c.linger, "linger", 10*time.Second, "after its result, stay in the group up to this long before leaving, answering members still at it "+
		"(a partner that lost a message; with exchange, a member asking for a partial or the result that only finished members hold; "+
		"after a disagreement, the members that have not heard of it); it leaves sooner, after --suspect, once none has sent it anything for --suspect; 0 leaves at once")
	fs.BoolVar(&c.debug, "v", false, "log this member's protocol decisions to stderr (neighbours declared dead, a fallback and why, messages rejected)")
	fs.StringVar(&c.state, "state-file", "", "keep this member's votes in this file across restarts (one file a member): a member killed and started again under the same --id "+
		"while an operation is under way needs it, or the group may decide two results; a file belongs to one run of the group (start a new run with new files); not with --name")
}

func (c *nodeCmd) check() error {
	if err := c.nats.check(); err != nil {
		return err
	}
	switch {
	case c.member != "" && (c.id >= 0 || c.group.nodes > 0):
		return usagef("--name joins an elastic group: it takes no --id or --nodes")
	case c.member != "" && c.state != "":
		return usagef("--state-file is for a member joined by --id, not --name")
	case c.member == "" && c.min != 0:
		return usagef("--min-members needs --name")
	case c.min < 0:
		return usagef("--min-members %d must be ≥ 0", c.min)
	case c.member == "" && (c.id < 0 || c.group.nodes < 1 || c.value == ""):
		return usagef("--id, --nodes and --value are required (or --name and --value)")
	case c.value == "":
		return usagef("--value is required")
	}
	vec, err := parseVector(c.value)
	if err != nil {
		return err
	}
	groupErr := c.group.check()
	if c.member != "" {
		groupErr = checkEps(c.group.eps) // the size is the view's
	}
	if err := firstError(groupErr, c.timing.check()); err != nil {
		return err
	}
	if c.linger < 0 {
		return usagef("--linger %v must be ≥ 0", c.linger)
	}
	c.vec = vec
	c.cfg = aggregate.Config{Group: c.name, Prefix: c.nats.prefix, ID: gossip.NodeID(c.id), Nodes: c.group.nodes, Algorithm: c.algo.one(),
		Topology: c.group.topology, Epsilon: c.group.eps, Suspect: c.timing.suspect, Name: c.member, MinMembers: c.min, StateFile: c.state}
	if c.member != "" {
		c.cfg.ID = 0
	}
	if err := c.cfg.Validate(); err != nil {
		return usagef("%v", err)
	}
	return nil
}

func (c *nodeCmd) exec(ctx context.Context, out *stdio) error {
	op := "average"
	if c.sum {
		op = "sum"
	}
	o := nodeOutput{Group: c.name, ID: c.id, Nodes: c.group.nodes, Algo: c.algo.one(), Op: op, Name: c.member}
	// The node always talks through a NATS server outside this process.
	ws := newWarnings("node", out)
	ws.warnPushSum(c.algo.one(), nil)
	ws.warnNoKey(&c.nats, subjectPrefix(c.nats.prefix)+"."+c.name+".*")
	if c.debug {
		c.cfg.Logger = debugLogger(out.Stderr)
	}
	leave, err := joinAndReduce(ctx, &o, &c.nats, c.cfg, c.vec, c.sum, c.timing.timeout)
	defer leave(ctx, c.linger)
	o.Warnings = ws.list
	if err != nil {
		o.Error = err.Error()
	}
	if out.json {
		return errors.Join(err, writeJSON(out.Stdout, o))
	}
	if err != nil {
		return err
	}
	if o.Name != "" {
		fmt.Fprintf(out.Stdout, "%s of %s (member %d of view %d: %s): %s = %v\n", o.Name, o.Group, o.ID, o.View, strings.Join(o.Members, ", "), op, o.Result)
	} else {
		fmt.Fprintf(out.Stdout, "node %d of %s: %s = %v\n", o.ID, o.Group, op, o.Result)
	}
	fmt.Fprintf(out.Stdout, "  covers    %s\n", livegroup.Coverage(*o.Live, o.Nodes, o.Absent))
	fmt.Fprintf(out.Stdout, "  epoch %d, root %d, %d messages, %.4f s\n", o.Epoch, *o.Root, o.Messages, o.Seconds)
	fmt.Fprintf(out.Stdout, "  dropped   %v\n", o.dropCounts)
	return nil
}

// joinAndReduce connects, joins the group and runs the node's one
// operation, filling in o what it learns, also when it fails. The member
// stays in the group until leave is called: after a result, leave waits
// up to linger (or until ctx ends) first, so that members still at the
// operation can be answered, and the messages queued for peers whose
// session was not yet established get out, before the node closes.
// Leaving at once cost an operation its result in a real-process test:
// a member stopped (SIGSTOP) during start-up finished from buffered
// messages the moment it resumed and exited, its schedule messages to
// three peers still queued, and the members that could have answered
// for them had exited too.
func joinAndReduce(ctx context.Context, o *nodeOutput, nf *natsFlags, cfg aggregate.Config, vec []float64, sum bool, timeout time.Duration) (leave func(context.Context, time.Duration), err error) {
	var m membership
	leave = m.leave
	// The transport's own logs (a lost connection, a reconnection) go to
	// stderr; its warning about a missing key is the one this command
	// gives in its own words.
	opts, err := nf.options(transport.Options{Logger: slog.New(withoutNoKeyWarning{slog.Default().Handler()})})
	if err != nil {
		return leave, err
	}
	opts.Name = fmt.Sprintf("gossipreduce-%s-%d", cfg.Group, cfg.ID)
	if cfg.Name != "" {
		opts.Name = fmt.Sprintf("gossipreduce-%s-%s", cfg.Group, cfg.Name)
	}
	// The timeout bounds everything: a server not up yet is tried again
	// until then, as is usual when a script starts it beside the nodes.
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tr, err := connectRetry(ctx, nf.urls(), opts)
	if errors.Is(err, nats.ErrNoServers) {
		return leave, fmt.Errorf("%w (no NATS server answered within --timeout %v: start one with `gossipreduce server --port 4222`, or point --nats at yours)", err, timeout)
	}
	if err != nil {
		return leave, err
	}
	m.closers = append(m.closers, tr.Close)
	nd, err := aggregate.Join(ctx, tr, cfg)
	if err != nil {
		return leave, err
	}
	m.node = nd
	m.closers = append(m.closers, nd.Close)
	do := nd.Average
	if sum {
		do = nd.Sum
	}
	res, err := do(ctx, vec)
	o.dropCounts = dropsOf(tr.Stats())
	o.Epoch, o.Messages, o.Seconds = res.Epoch, res.Messages, res.Elapsed.Seconds()
	if cfg.Name != "" {
		o.View, o.Members, o.Nodes, o.ID = res.View, res.Names, len(res.Names), slices.Index(res.Names, cfg.Name)
	}
	if err != nil {
		// A member that has pushed all its weight away has no estimate
		// (0/0): leave it out.
		if gossip.CheckFinite(res.Value) == nil {
			o.Estimate = res.Value
		}
		if o.dropCounts.any() {
			err = fmt.Errorf("%w (messages dropped by the transport: %v)", err, o.dropCounts)
		}
		// A member that found the group in disagreement must stay to tell
		// the members that have not heard yet (its tells to peers whose
		// session was not established are still queued, and the others ask
		// it again): gone, it is silence, and they would decide without
		// the members that stopped.
		m.stay = errors.Is(err, aggregate.ErrGroupMismatch)
		return leave, err
	}
	root := int(res.Root)
	o.Result, o.Live, o.Absent, o.Root = res.Value, &res.Live, nonNilIDs(res.Absent), &root
	m.stay = true
	return leave, nil
}

// membership is what a node holds open in its group: its connection and
// its member, closed in reverse order when it leaves.
type membership struct {
	closers []func() error
	node    *aggregate.Node // once joined
	stay    bool            // it has a result, or an abort to tell: linger before leaving
}

// leave leaves the group (aggregate.Node.Leave) within linger (or until
// ctx ends) if the node has a result or found the group in disagreement,
// then closes what it holds.
func (m *membership) leave(ctx context.Context, linger time.Duration) {
	if m.stay && linger > 0 {
		lctx, cancel := context.WithTimeout(ctx, linger)
		m.node.Leave(lctx)
		cancel()
	}
	for _, c := range slices.Backward(m.closers) {
		c()
	}
}

// nonNilIDs returns ids, or an empty list for nil (JSON [] rather than
// null: no member is absent).
func nonNilIDs(ids []gossip.NodeID) []gossip.NodeID {
	if ids == nil {
		return []gossip.NodeID{}
	}
	return ids
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

// withoutNoKeyWarning drops transport.NoKeyWarning from a handler's records.
type withoutNoKeyWarning struct{ slog.Handler }

func (h withoutNoKeyWarning) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == transport.NoKeyWarning {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h withoutNoKeyWarning) WithAttrs(as []slog.Attr) slog.Handler {
	return withoutNoKeyWarning{h.Handler.WithAttrs(as)}
}

func (h withoutNoKeyWarning) WithGroup(name string) slog.Handler {
	return withoutNoKeyWarning{h.Handler.WithGroup(name)}
}
