package aggregate

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
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
// named "<group>_v<view number>_<genesis>" (see viewGroup) so that
// members of two views never exchange a message, nor members of two groups
// that formed apart (on the two sides of a partition) and reached the same
// view number. The fixed groups are opened as views are used and
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

// foreignMember is a member of another configuration's view.
type foreignMember struct {
	at   time.Duration
	hash uint64
	desc string
}

// maxForeign bounds the foreign members remembered.
const maxForeign = 256

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

	// r is the configuration every view's fixed group shares (resolved as
	// a group of one): its hash and description travel with every
	// membership message, so that a member configured differently is
	// told, not taken in.
	r *resolved
	// foreign holds the members of views of another configuration heard
	// lately, by name (loop's goroutine only).
	foreign map[string]foreignMember

	mu       sync.Mutex
	mismatch error            // set once this member finds itself the odd one out
	nodes    map[string]*Node // the fixed group of the view in use, by group name (one at a time)
	last     uint64           // the last epoch begun
	once     sync.Once
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
	if c.StateFile != "" {
		return nil, fmt.Errorf("aggregate: %w: StateFile is for members joined by ID, not by name (%q)", gossip.ErrInvalidConfig, c.Name)
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
			return nil, fmt.Errorf("aggregate: a group joined by name needs an overlay that takes every size (sizes 1 to %d are checked), and at %d members: %w", sizesChecked, n, err)
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
		nodes: map[string]*Node{}, r: r, foreign: map[string]foreignMember{}}
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
		case el.misconfigured() != nil:
			err := el.misconfigured()
			el.close(false)
			return nil, fmt.Errorf("aggregate: join %s as %q: %w", cfg.Group, cfg.Name, err)
		case in && len(v.Members) >= max(cfg.MinMembers, 1):
			return &Node{r: r, el: el, log: el.log}, nil
		}
		select {
		case <-ctx.Done():
			el.close(false)
			waiting := "no view yet"
			if in {
				waiting = fmt.Sprintf("in view %d of %d members", v.Num, len(v.Members))
			}
			return nil, fmt.Errorf("aggregate: join %s as %q: waiting for a view of at least %d members (%s): %w",
				cfg.Group, cfg.Name, max(cfg.MinMembers, 1), waiting, ctx.Err())
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
			leaving = time.After((view.LeaveVotes + 1) * suspect)
			quit = nil
		case <-leaving:
			return
		case raw, ok := <-el.ch.Messages():
			if !ok {
				return
			}
			hash, desc, body, err := openEnvelope(raw)
			var msg view.Msg
			if err == nil {
				msg, err = view.Decode(body)
			}
			if err != nil {
				el.log.Debug("dropped a membership message", "err", err)
				break
			}
			if hash != el.r.hash {
				el.heardForeign(now(), msg, hash, desc)
				break
			}
			vm.Step(now(), msg)
		case <-tick.C:
			// Checked before the tick that could found a group of one: a
			// member configured differently from the group it meets must
			// not found one of its own beside it.
			if el.checkForeign(now(), vm) {
				vm.Leave(now())
				break
			}
			vm.Tick(now())
		case f := <-el.reqs:
			f(vm)
		}
		for _, msg := range vm.Outbox() {
			if err := el.ch.Publish(context.Background(), view.AppendEncode(el.envelope(), msg)); err != nil {
				el.log.Debug("membership message not sent", "err", err)
			}
		}
		if vm.Stopped() && leaving != nil {
			return
		}
	}
}

// envelope returns the head of every membership message this member
// sends: its configuration hash and description.
func (el *elastic) envelope() []byte {
	desc := el.r.describe()
	b := binary.LittleEndian.AppendUint64(nil, el.r.hash)
	b = binary.AppendUvarint(b, uint64(len(desc)))
	return append(b, desc...)
}

// openEnvelope splits a membership message into its sender's configuration
// hash and description and the view protocol's message.
func openEnvelope(raw []byte) (hash uint64, desc string, body []byte, err error) {
	if len(raw) < 8 {
		return 0, "", nil, fmt.Errorf("aggregate: membership message of %d bytes", len(raw))
	}
	hash = binary.LittleEndian.Uint64(raw)
	n, k := binary.Uvarint(raw[8:])
	if k <= 0 || n > transport.MaxNotice || n > uint64(len(raw)-8-k) {
		return 0, "", nil, errors.New("aggregate: membership message: bad description")
	}
	return hash, string(raw[8+k : 8+k+int(n)]), raw[8+k+int(n):], nil
}

// heardForeign notes a member of another configuration's view.
func (el *elastic) heardForeign(now time.Duration, msg view.Msg, hash uint64, desc string) {
	if msg.Kind != view.Beat || msg.Num == 0 {
		return // only members in a view count: a misconfigured joiner is not the group
	}
	if _, ok := el.foreign[msg.From.Name]; !ok && len(el.foreign) >= maxForeign {
		return
	}
	el.foreign[msg.From.Name] = foreignMember{at: now, hash: hash, desc: desc}
}

// checkForeign decides whether this member is the odd one out: more members
// of another configuration's views were heard within Suspect than its own
// group has, and it has listened for two heartbeats (a joiner hears its own
// group's heartbeats by then). It records the error, naming the
// difference, and reports true the first time.
func (el *elastic) checkForeign(now time.Duration, vm *view.Machine) bool {
	if el.misconfigured() != nil || now < el.r.Suspect/2 {
		return false
	}
	var names []string
	votes := map[string]int{}
	for name, f := range el.foreign {
		if now-f.at > el.r.Suspect {
			delete(el.foreign, name)
			continue
		}
		names = append(names, name)
		votes[el.r.foreignWhy(transport.ForeignConfig{Hash: f.hash, Describe: f.desc})]++
	}
	if len(names) == 0 || len(names) <= vm.GroupSize() {
		return false
	}
	slices.Sort(names)
	why, most := "", 0
	for w, n := range votes {
		if n > most || (n == most && w < why) {
			why, most = w, n
		}
	}
	if len(names) > 8 {
		names = append(names[:8], "…")
	}
	err := fmt.Errorf("%w: this member's configuration is not the group's: %d members (%s) run %s; %d run this member's",
		ErrGroupMismatch, len(el.foreign), strings.Join(names, ", "), why, vm.GroupSize())
	el.mu.Lock()
	el.mismatch = err
	el.mu.Unlock()
	el.log.Warn("configuration differs from the group's", "err", err)
	return true
}

// misconfigured returns the error of a member that found itself the odd
// one out, or nil.
func (el *elastic) misconfigured() error {
	el.mu.Lock()
	defer el.mu.Unlock()
	return el.mismatch
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
	mismatch := el.mismatch
	el.mu.Unlock()
	if mismatch != nil {
		return Result{Epoch: req.Epoch}, mismatch
	}
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
	group := viewGroup(el.cfg.Group, v)
	for g, n := range el.nodes {
		if g != group {
			_ = n.Stop()
			delete(el.nodes, g)
		}
	}
	if n := el.nodes[group]; n != nil {
		return n, nil
	}
	c := el.cfg
	c.Name, c.MinMembers = "", 0
	c.Group = group
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
	el.nodes[group] = n
	return n, nil
}

// viewGroup names the fixed group of view v of elastic group group:
// "<group>_v<number>_<genesis>", the genesis (founder, incarnation and
// sequence) as 16 hex digits of its FNV-1a hash. The view number alone
// would not do: two groups formed apart reach the same numbers with other
// members, and a member of one would take the other's messages for its
// own view's (found by a helper with a partitioned NATS cluster: a result
// naming one side's members with the other side's inputs).
func viewGroup(group string, v view.View) string {
	h := fnv.New64a()
	g := v.Genesis
	var b [8]byte
	h.Write([]byte(g.Founder.Name))
	h.Write(binary.BigEndian.AppendUint64(b[:0], g.Founder.Inc))
	h.Write(binary.BigEndian.AppendUint64(b[:0], g.Seq))
	return fmt.Sprintf("%s_v%d_%016x", group, v.Num, h.Sum64())
}

// close stops the member: with leave, it tells the group and waits (at
// most view.LeaveVotes+1 Suspect) until the view without it is installed.
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
	for _, n := range el.nodes {
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
