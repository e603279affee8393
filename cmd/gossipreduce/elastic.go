package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
)

// elasticOutput is the JSON of run --elastic (field names are a contract).
type elasticOutput struct {
	Algo  string  `json:"algo"`
	Nodes int     `json:"nodes"`
	Churn float64 `json:"churn"`
	// Rounds is the operations run (one epoch each, every member of the
	// group at the time taking part); MemberOps the member operations.
	Rounds    int `json:"rounds"`
	MemberOps int `json:"member_ops"`
	// Failed counts member operations that ended with an error; NoView
	// those refused because no view served the epoch yet (a member that
	// had just joined).
	Failed int `json:"failed"`
	NoView int `json:"no_view"`
	// Wrong counts results (nil error) that differ from another result of
	// the same epoch and view, or from the exact average of the inputs
	// they name by more than eps: the safety invariant (goal 0).
	Wrong int `json:"wrong"`
	// Views is the number of distinct views the results ran over.
	Views int `json:"views"`
	// Joins, Leaves and Kills are the churn applied; MinMembers and
	// MaxMembers the group's size over the run.
	Joins      int `json:"joins"`
	Leaves     int `json:"leaves"`
	Kills      int `json:"kills"`
	MinMembers int `json:"min_members"`
	MaxMembers int `json:"max_members"`
	// MaxRelError is the worst error of a result against the exact
	// average of the inputs it names.
	MaxRelError float64  `json:"max_rel_error"`
	Seconds     float64  `json:"seconds"`
	Seed        uint64   `json:"seed"`
	NATS        string   `json:"nats"`
	Errors      []string `json:"errors"` // the first few distinct error texts
	Warnings    []string `json:"warnings"`
	Error       string   `json:"error,omitempty"`
}

// elasticRun is run --elastic: a group of members joined by name in this
// process, rounds of one operation each, members joining, leaving and
// dying between rounds, every result checked against the exact average of
// the inputs of the view it names.
type elasticRun struct {
	c   *runCmd
	tr  transport.Transport
	rng *rand.Rand
	o   elasticOutput

	mu      sync.Mutex
	members map[string]*aggregate.Node
	joining int
	next    int // the next new member's number
	errs    map[string]bool
	views   map[uint64]bool
}

// input is member name's value in round e: the same in every run of the
// seed.
func elasticInput(seed uint64, name string, e uint64) float64 {
	h := seed ^ e*0x9e3779b97f4a7c15
	for _, c := range []byte(name) {
		h = (h ^ uint64(c)) * 0x100000001b3
	}
	return float64(h%10000) / 100
}

func (c *runCmd) execElastic(ctx context.Context, out *stdio, ws *warnings) error {
	s := c.seed.value()
	net, err := c.nats.openNet(ctx, transport.Options{Loss: c.faults.loss.one(), Seed: s, Buffer: 8192})
	if err != nil {
		return err
	}
	defer net.Close()
	r := &elasticRun{c: c, tr: net.tr, rng: rand.New(rand.NewPCG(s, 0xe1a5)), members: map[string]*aggregate.Node{},
		errs: map[string]bool{}, views: map[uint64]bool{}}
	r.o = elasticOutput{Algo: c.algo.one(), Nodes: c.group.nodes, Churn: c.churn, Seed: s, NATS: net.url, Warnings: ws.list,
		MinMembers: c.group.nodes, MaxMembers: c.group.nodes}
	start := time.Now()
	runErr := r.run(ctx, out)
	r.o.Seconds = time.Since(start).Seconds()
	r.stopAll()
	if runErr != nil {
		r.o.Error = runErr.Error()
	}
	if out.json {
		return firstError(runErr, writeJSON(out.Stdout, r.o))
	}
	r.o.print(out.Stdout)
	if runErr == nil && r.o.Wrong > 0 {
		return fmt.Errorf("run --elastic: %d wrong results", r.o.Wrong)
	}
	return runErr
}

func (r *elasticRun) run(ctx context.Context, out *stdio) error {
	c := r.c
	// The first members found the group together.
	var wg sync.WaitGroup
	errc := make(chan error, c.group.nodes)
	for range c.group.nodes {
		name := r.newName()
		wg.Go(func() {
			if err := r.join(ctx, name, c.group.nodes); err != nil {
				errc <- err
			}
		})
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return fmt.Errorf("run --elastic: starting the group: %w", err)
	}
	prog := newProgress(out, "run --elastic")
	deadline := time.Now().Add(c.duration)
	for e := uint64(1); ; e++ {
		if c.duration > 0 && !time.Now().Before(deadline) || c.duration == 0 && int(e) > c.runs {
			break
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("stopped after %d rounds: %w", r.o.Rounds, err)
		}
		r.round(ctx, e)
		r.churn(ctx)
		if c.duration > 0 {
			prog.update(int(time.Since(deadline.Add(-c.duration))/time.Second), int(c.duration/time.Second))
		} else {
			prog.update(int(e), c.runs)
		}
	}
	r.o.Views = len(r.views)
	return nil
}

func (r *elasticRun) newName() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	return fmt.Sprintf("m-%04d", r.next)
}

// join joins member name (waiting for a view of at least min members)
// and adds it to the group.
func (r *elasticRun) join(ctx context.Context, name string, min int) error {
	cfg := r.c.tmpl
	cfg.Group, cfg.Name, cfg.MinMembers = "elastic", name, min
	jctx, cancel := context.WithTimeout(ctx, r.c.timing.timeout)
	defer cancel()
	n, err := aggregate.Join(jctx, r.tr, cfg)
	if err != nil {
		return fmt.Errorf("join %s: %w", name, err)
	}
	r.mu.Lock()
	r.members[name] = n
	r.mu.Unlock()
	return nil
}

// round runs epoch e at every member and checks the results.
func (r *elasticRun) round(ctx context.Context, e uint64) {
	r.mu.Lock()
	nodes := make(map[string]*aggregate.Node, len(r.members))
	for name, n := range r.members {
		nodes[name] = n
	}
	r.mu.Unlock()
	type outcome struct {
		res aggregate.Result
		err error
	}
	var mu sync.Mutex
	outs := map[string]outcome{}
	var wg sync.WaitGroup
	for name, n := range nodes {
		wg.Go(func() {
			octx, cancel := context.WithTimeout(ctx, r.c.timing.timeout)
			defer cancel()
			res, err := n.Reduce(octx, aggregate.Request{Epoch: e, Values: []float64{elasticInput(r.o.Seed, name, e)}})
			mu.Lock()
			outs[name] = outcome{res, err}
			mu.Unlock()
		})
	}
	wg.Wait()
	r.o.Rounds++
	byView := map[uint64][]float64{}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range outs {
			if !yield(k) {
				return
			}
		}
	}) {
		oc := outs[name]
		r.o.MemberOps++
		switch {
		case oc.err != nil && errorsIsNoView(oc.err):
			r.o.NoView++
			continue
		case oc.err != nil:
			r.o.Failed++
			if len(r.errs) < 8 {
				r.errs[oc.err.Error()] = true
				r.o.Errors = slices.Sorted(func(yield func(string) bool) {
					for k := range r.errs {
						if !yield(k) {
							return
						}
					}
				})
			}
			continue
		}
		res := oc.res
		r.views[res.View] = true
		if first, ok := byView[res.View]; ok && !slices.Equal(first, res.Value) {
			r.o.Wrong++
			continue
		}
		byView[res.View] = res.Value
		if !slices.Contains(res.Names, name) {
			r.o.Wrong++ // a result that does not cover its own member
			continue
		}
		absent := map[gossip.NodeID]bool{}
		for _, id := range res.Absent {
			absent[id] = true
		}
		var sum float64
		var k int
		for i, m := range res.Names {
			if !absent[gossip.NodeID(i)] {
				sum += elasticInput(r.o.Seed, m, e)
				k++
			}
		}
		exact := sum / float64(k)
		rel := math.Abs(res.Value[0]-exact) / math.Max(math.Abs(exact), math.SmallestNonzeroFloat64)
		r.o.MaxRelError = max(r.o.MaxRelError, rel)
		if k != res.Live || rel > r.c.group.eps {
			r.o.Wrong++
		}
	}
}

func errorsIsNoView(err error) bool { return errors.Is(err, aggregate.ErrNoView) }

// churn makes at most one change with probability --churn: a member joins
// (in the background: it takes part once it is in a view), leaves, or
// dies; the group stays between half and twice --nodes.
func (r *elasticRun) churn(ctx context.Context) {
	if r.rng.Float64() >= r.c.churn {
		return
	}
	r.mu.Lock()
	size := len(r.members) + r.joining
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range r.members {
			if !yield(k) {
				return
			}
		}
	})
	r.mu.Unlock()
	lo, hi := max(2, r.c.group.nodes/2), 2*r.c.group.nodes
	switch a := r.rng.IntN(3); {
	case a == 0 && size < hi || size <= lo:
		name := r.newName()
		r.mu.Lock()
		r.joining++
		r.o.Joins++
		r.mu.Unlock()
		go func() {
			_ = r.join(ctx, name, 0)
			r.mu.Lock()
			r.joining--
			r.mu.Unlock()
		}()
	default:
		name := names[r.rng.IntN(len(names))]
		r.mu.Lock()
		n := r.members[name]
		delete(r.members, name)
		r.mu.Unlock()
		if a == 1 {
			r.o.Leaves++
			go n.Close()
		} else {
			r.o.Kills++
			go n.Stop()
		}
	}
	r.mu.Lock()
	r.o.MinMembers = min(r.o.MinMembers, len(r.members))
	r.o.MaxMembers = max(r.o.MaxMembers, len(r.members))
	r.mu.Unlock()
}

func (r *elasticRun) stopAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	var wg sync.WaitGroup
	for _, n := range r.members {
		wg.Go(func() { n.Stop() })
	}
	wg.Wait()
}

func (o *elasticOutput) print(w io.Writer) {
	fmt.Fprintf(w, "run --elastic: %d rounds, %d member operations over %d views in %.1f s (seed %d)\n", o.Rounds, o.MemberOps, o.Views, o.Seconds, o.Seed)
	fmt.Fprintf(w, "  churn      %d joins, %d leaves, %d kills; %d to %d members\n", o.Joins, o.Leaves, o.Kills, o.MinMembers, o.MaxMembers)
	fmt.Fprintf(w, "  failed     %d (and %d not yet in a view)\n", o.Failed, o.NoView)
	fmt.Fprintf(w, "  wrong      %d (max rel error %.2g)\n", o.Wrong, o.MaxRelError)
	for _, e := range o.Errors {
		fmt.Fprintf(w, "  error      %s\n", e)
	}
}
