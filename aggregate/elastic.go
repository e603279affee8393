package aggregate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/member/view"
	"github.com/gossipreduce/gossipreduce/transport"
)

// Elastic groups (Config.Name).
//
// A member joined by name runs the view protocol of package member/view on
// the group's broadcast channel "views" (transport.Channel), and each
// operation over the view that serves its epoch: as member i of a fixed
// group of the view's size, i its place among the view's sorted names,
// named "<group>_v<view number>" so that members of two views never
// exchange a message. The fixed groups are opened as views are used and
// closed once a later view serves this member's operations.

var (
	// ErrDuplicateName reports that another process holds this member's
	// name in the group.
	ErrDuplicateName = view.ErrDuplicateName
	// ErrNoView reports an operation of an elastic member that is in no
	// view (it was taken out of the group, and is being taken back in), or
	// whose epoch comes before the member's first view.
	ErrNoView = errors.New("aggregate: no view serves this operation")
)

// viewsChannel is the name of the broadcast channel of the view protocol.
const viewsChannel = "views"

// elastic is the state of a member joined by name.
type elastic struct {
	cfg Config // the template of every view's fixed group
	t   transport.Transport
	ch  transport.Channel
	log *slog.Logger
	// origin is the view machine's time zero.
	origin time.Time
	reqs   chan func(*view.Machine)
	quit   chan struct{}
	done   chan struct{}

	mu    sync.Mutex
	nodes map[uint64]*Node // fixed groups by view number
	last  uint64           // the last epoch begun
	once  sync.Once
}

// sizesChecked are the group sizes an elastic group's overlay must take:
// views come in every size.
const sizesChecked = 9

// resolveElastic checks an elastic member's configuration (Config.Name)
// and resolves it as a group of one, the settings every view's fixed group
// shares.
func (c Config) resolveElastic() (*resolved, error) {
	if c.ID != 0 || c.Nodes != 0 {
		return nil, fmt.Errorf("aggregate: %w: a member joined by name (%q) takes no ID or Nodes", gossip.ErrInvalidConfig, c.Name)
	}
	if c.MinMembers < 0 {
		return nil, fmt.Errorf("aggregate: %w: MinMembers %d", gossip.ErrInvalidConfig, c.MinMembers)
	}
	if _, err := view.New(view.Config{Name: c.Name, Inc: 1}); err != nil {
		return nil, fmt.Errorf("aggregate: %w: %w", gossip.ErrInvalidConfig, err)
	}
	// Every view size must make a valid fixed group.
	for n := sizesChecked; n >= 1; n-- {
		f := c
		f.Name, f.Nodes = "", n
		r, err := f.resolve()
		if err != nil {
			return nil, fmt.Errorf("aggregate: elastic group of %d members: %w", n, err)
		}
		if n == 1 {
			return r, nil
		}
	}
	panic("unreachable")
}

func joinElastic(ctx context.Context, t transport.Transport, cfg Config) (*Node, error) {
	r, err := cfg.resolveElastic()
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, fmt.Errorf("aggregate: %w: no transport", gossip.ErrInvalidConfig)
	}
	vm, err := view.New(view.Config{Name: cfg.Name, Inc: rand.Uint64() | 1, Suspect: r.Suspect, MinMembers: cfg.MinMembers})
	if err != nil {
		return nil, fmt.Errorf("aggregate: %w: %w", gossip.ErrInvalidConfig, err)
	}
	g := transport.Group{Prefix: cfg.Prefix, Name: cfg.Group}
	ch, err := t.Channel(ctx, g, viewsChannel)
	if err != nil {
		return nil, fmt.Errorf("aggregate: join %s as %q: %w", cfg.Group, cfg.Name, err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	el := &elastic{cfg: cfg, t: t, ch: ch, log: log.With("group", cfg.Group, "name", cfg.Name), origin: time.Now(),
		reqs: make(chan func(*view.Machine)), quit: make(chan struct{}), done: make(chan struct{}),
		nodes: map[uint64]*Node{}}
	go el.loop(vm, r.Suspect)
	// Join returns once the member is in a view of at least MinMembers.
	for {
		var (
			v   view.View
			in  bool
			err error
		)
		if !el.call(func(m *view.Machine) { v, in = m.Current(); err = m.Err() }) {
			return nil, ErrClosed
		}
		switch {
		case err != nil:
			el.close(false)
			return nil, fmt.Errorf("aggregate: join %s as %q: %w", cfg.Group, cfg.Name, err)
		case in && len(v.Members) >= max(cfg.MinMembers, 1):
			return &Node{r: r, el: el}, nil
		}
		select {
		case <-ctx.Done():
			el.close(false)
			return nil, fmt.Errorf("aggregate: join %s as %q: %w", cfg.Group, cfg.Name, ctx.Err())
		case <-time.After(r.Tick * 10):
		}
	}
}

// loop drives the view machine: messages from the channel, ticks, and
// calls from the member's other goroutines.
func (el *elastic) loop(vm *view.Machine, suspect time.Duration) {
	defer close(el.done)
	now := func() time.Duration { return time.Since(el.origin) }
	quit := el.quit
	tick := time.NewTicker(max(suspect/64, time.Millisecond))
	defer tick.Stop()
	var leaving <-chan time.Time
	for {
		select {
		case <-quit:
			vm.Leave(now())
			leaving = time.After(2 * suspect)
			quit = nil
		case <-leaving:
			return
		case raw, ok := <-el.ch.Messages():
			if !ok {
				return
			}
			msg, err := view.Decode(raw)
			if err != nil {
				el.log.Debug("dropped a membership message", "err", err)
				break
			}
			vm.Step(now(), msg)
		case <-tick.C:
			vm.Tick(now())
		case f := <-el.reqs:
			f(vm)
		}
		for _, msg := range vm.Outbox() {
			if err := el.ch.Publish(context.Background(), view.AppendEncode(nil, msg)); err != nil {
				el.log.Debug("membership message not sent", "err", err)
			}
		}
		if vm.Stopped() && leaving != nil {
			return
		}
	}
}

// call runs f on the loop's goroutine; false once the loop has ended.
func (el *elastic) call(f func(*view.Machine)) bool {
	ran := make(chan struct{})
	select {
	case el.reqs <- func(m *view.Machine) { f(m); close(ran) }:
		<-ran
		return true
	case <-el.done:
		return false
	}
}

// do runs one operation over the view that serves its epoch.
func (el *elastic) do(ctx context.Context, req Request, sum bool) (Result, error) {
	el.mu.Lock()
	if req.Epoch == 0 {
		req.Epoch = el.last + 1
	}
	if req.Epoch <= el.last {
		el.mu.Unlock()
		return Result{}, fmt.Errorf("aggregate: %w: epoch %d is not after the last one, %d", gossip.ErrInvalidConfig, req.Epoch, el.last)
	}
	el.last = req.Epoch
	el.mu.Unlock()
	var (
		v  view.View
		ok bool
	)
	if !el.call(func(m *view.Machine) { v, ok = m.Begin(time.Since(el.origin), req.Epoch) }) {
		return Result{}, ErrClosed
	}
	if !ok {
		return Result{Epoch: req.Epoch}, fmt.Errorf("%w (epoch %d)", ErrNoView, req.Epoch)
	}
	n, err := el.node(ctx, v)
	if err != nil {
		return Result{Epoch: req.Epoch}, err
	}
	res, err := n.do(ctx, req, sum)
	res.View, res.Names = v.Num, v.Names()
	return res, err
}

// node returns the member's node in view v's fixed group, opening it if
// needed, and stops the nodes of earlier views (their operations are over:
// operations of one member run one at a time, in epoch order).
func (el *elastic) node(ctx context.Context, v view.View) (*Node, error) {
	el.mu.Lock()
	defer el.mu.Unlock()
	for num, n := range el.nodes {
		if num < v.Num {
			_ = n.Stop()
			delete(el.nodes, num)
		}
	}
	if n := el.nodes[v.Num]; n != nil {
		return n, nil
	}
	c := el.cfg
	c.Name, c.MinMembers = "", 0
	c.Group = el.cfg.Group + "_v" + strconv.FormatUint(v.Num, 10)
	c.Nodes = len(v.Members)
	for i, e := range v.Members {
		if e.Name == el.cfg.Name {
			c.ID = gossip.NodeID(i)
		}
	}
	c.Founding = true
	n, err := Join(ctx, el.t, c)
	if err != nil {
		return nil, err
	}
	el.nodes[v.Num] = n
	return n, nil
}

// close stops the member: with leave, it tells the group and waits (at
// most 2 Suspect) until the view without it is installed.
func (el *elastic) close(leave bool) error {
	el.once.Do(func() {
		if leave {
			close(el.quit)
			<-el.done
		} else {
			el.ch.Close()
			<-el.done
		}
		_ = el.ch.Close()
		el.mu.Lock()
		for num, n := range el.nodes {
			_ = n.Stop()
			delete(el.nodes, num)
		}
		el.mu.Unlock()
	})
	return nil
}

// stats returns the counts of the node of the latest view used.
func (el *elastic) stats() Stats {
	el.mu.Lock()
	defer el.mu.Unlock()
	var latest uint64
	for num := range el.nodes {
		latest = max(latest, num)
	}
	if n := el.nodes[latest]; n != nil {
		return n.Stats()
	}
	return Stats{}
}

// View returns the number and the member names (sorted) of the view this
// member is in now, for a member of an elastic group (Config.Name); ok is
// false when it is in none (it was taken out and is being taken back in),
// or for a member of a fixed group.
func (n *Node) View() (num uint64, names []string, ok bool) {
	if n.el == nil {
		return 0, nil, false
	}
	v, in := n.el.current()
	if !in {
		return 0, nil, false
	}
	return v.Num, v.Names(), true
}

// current returns the member's current view.
func (el *elastic) current() (view.View, bool) {
	var (
		v  view.View
		ok bool
	)
	el.call(func(m *view.Machine) { v, ok = m.Current() })
	return v, ok
}
