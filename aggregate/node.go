package aggregate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/member"
	"github.com/gossipreduce/gossipreduce/transport"
)

// Node is one member of a group: it owns a transport endpoint and runs one
// goroutine that drives the member's machines. Operations are taken one at a
// time; call them from any goroutine.
type Node struct {
	r      *resolved
	ep     transport.Endpoint
	log    *slog.Logger
	reqs   chan *request
	quit   chan struct{}
	exited chan struct{}
	once   sync.Once
	silent atomic.Bool // set by Stop: leave without telling the others
	// autoJoin, if set, makes the member take part in an operation another
	// member started (package Monitor uses it): it returns the request for
	// that epoch, or nil to leave it be.
	autoJoin func(epoch uint64) *request
	// state keeps the member's votes across restarts (Config.StateFile);
	// nil: none kept.
	state *stateFile
	// el is set for a member joined by name (Config.Name): its
	// operations run over the fixed groups of its views.
	el *elastic

	mu    sync.Mutex
	stats Stats
	// ticks counts the machine's ticks (for tests: see driver.pace).
	ticks atomic.Int64
}

// Stats counts what a Node did over its life (see member.Stats).
type Stats = member.Stats

// Request is one operation: what this member contributes.
type Request struct {
	// Epoch numbers the operation; every member must use the same number
	// for the same operation. Zero takes the next after this member's last
	// operation (the n-th operation of every member is then the group's
	// n-th). An explicit epoch must be larger than the last one.
	Epoch uint64
	// Values are averaged element-wise over the live members.
	Values []float64
	// Extremes are reduced element-wise to their maximum over the members
	// (negate a component to get a minimum). They need a gossip algorithm
	// or exchange (algo.Spec.Extremes); the other finite algorithms refuse
	// them.
	Extremes []float64
}

type request struct {
	ctx  context.Context
	req  Request
	sum  bool
	done func(Result, error) // called on the node's goroutine
}

// Join makes this process member cfg.ID of a group over t: it opens the
// member's endpoint, tells the other members it is here (so that a member
// coming back after it left or was declared dead is counted again from
// their next operation), and starts its goroutine. The other members may
// join before or after; an operation waits for them until its context ends.
//
// With Config.Name set, Join joins an elastic group by name instead, and
// returns once the member is in a view (of at least Config.MinMembers).
func Join(ctx context.Context, t transport.Transport, cfg Config) (*Node, error) {
	if cfg.Name != "" {
		return joinElastic(ctx, t, cfg)
	}
	return join(ctx, t, cfg, nil)
}

func join(ctx context.Context, t transport.Transport, cfg Config, auto func(uint64) *request) (*Node, error) {
	r, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, fmt.Errorf("aggregate: %w: no transport", gossip.ErrInvalidConfig)
	}
	ep, err := t.Open(ctx, transport.Group{Prefix: cfg.Prefix, Name: cfg.Group, ConfigHash: r.hash, Describe: r.describe()}, cfg.ID)
	if err != nil {
		return nil, fmt.Errorf("join %s as %d: %w", cfg.Group, cfg.ID, err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	n := &Node{
		r: r, ep: ep, log: log.With("group", cfg.Group, "node", cfg.ID), autoJoin: auto,
		reqs: make(chan *request), quit: make(chan struct{}), exited: make(chan struct{}),
	}
	mcfg := r.member
	mcfg.Authenticated = ep.Authenticated()
	mm, err := member.New(mcfg)
	if err == nil && cfg.StateFile != "" {
		n.state = &stateFile{path: cfg.StateFile}
		if n.state.lock, err = lockState(cfg.StateFile); err == nil {
			var hs member.HardState
			if hs, err = n.state.load(); err == nil {
				err = mm.Restore(hs)
			}
		}
	}
	if err != nil {
		n.state.release()
		ep.Close()
		return nil, err
	}
	// The announcement goes to every other member, a session opened for
	// each: with thousands of members it takes long, and the caller's
	// deadline bounds it as it bounds the rest of Join. A founding member
	// has nobody to announce itself to (see Config.Founding).
	if !cfg.Founding {
		mm.Announce()
	}
	for _, msg := range mm.Outbox() {
		err := ep.Send(ctx, msg)
		if err != nil && ctx.Err() != nil {
			n.state.release()
			ep.Close()
			return nil, fmt.Errorf("aggregate: join %s as %d: announcing: %w", cfg.Group, cfg.ID, ctx.Err())
		}
		if err != nil {
			n.log.Debug("send failed", "to", msg.To, "err", err)
		}
	}
	open.Add(1)
	d := newDriver(n, mm)
	d.flush()
	go d.loop()
	return n, nil
}

// MaxComponents is the most components (values and extremes together) one
// operation takes: 2^20, a little over a million. Its messages then carry
// about 8 MiB of values and the certificate's estimate of them as much
// again; the transport
// splits what exceeds the NATS server's max_payload into fragments, and
// reassembles at most [transport.Options.Reassembly] bytes per member.
const MaxComponents = 1 << 20

// Reduce runs one operation: the average of Values and the maximum of
// Extremes over the live members, the bitwise same Result at every one.
// Every member must take part with vectors of the same lengths. If ctx ends
// first, it returns this member's best estimate with an error wrapping
// ErrNotConverged.
func (n *Node) Reduce(ctx context.Context, req Request) (Result, error) {
	return n.do(ctx, req, false)
}

// Average returns the element-wise average of the members' vectors (see
// Reduce).
func (n *Node) Average(ctx context.Context, value []float64) (Result, error) {
	return n.do(ctx, Request{Values: value}, false)
}

// Sum returns the element-wise sum of the members' vectors: the average
// times the number of live members, so after a member is excluded it is the
// survivors' sum (see Reduce).
func (n *Node) Sum(ctx context.Context, value []float64) (Result, error) {
	return n.do(ctx, Request{Values: value}, true)
}

func (n *Node) do(ctx context.Context, req Request, sum bool) (Result, error) {
	if err := checkRequest(n.r, req); err != nil {
		return Result{}, err
	}
	if n.el != nil {
		return n.el.do(ctx, req, sum)
	}
	type reply struct {
		res Result
		err error
	}
	ch := make(chan reply, 1)
	rq := &request{ctx: ctx, req: cloneRequest(req), sum: sum, done: func(r Result, err error) { ch <- reply{r, err} }}
	select {
	case n.reqs <- rq:
	case <-n.exited:
		return Result{}, ErrClosed
	case <-ctx.Done():
		return Result{}, fmt.Errorf("%w: %w", ErrNotConverged, ctx.Err())
	}
	rep := <-ch
	return rep.res, rep.err
}

func checkRequest(r *resolved, req Request) error {
	if len(req.Values) == 0 {
		return fmt.Errorf("aggregate: %w: empty vector", gossip.ErrLength)
	}
	if k := len(req.Values) + len(req.Extremes); k > MaxComponents {
		return fmt.Errorf("aggregate: %w: %d components (values and extremes), at most %d", gossip.ErrLength, k, MaxComponents)
	}
	if err := gossip.CheckFinite(req.Values); err != nil {
		return fmt.Errorf("values: %w", err)
	}
	if err := gossip.CheckFinite(req.Extremes); err != nil {
		return fmt.Errorf("extremes: %w", err)
	}
	if len(req.Extremes) > 0 && r.spec.Finite && !r.spec.Extremes {
		return fmt.Errorf("aggregate: %w: extremes need a gossip algorithm or exchange, not %s", gossip.ErrInvalidConfig, r.Algorithm)
	}
	return nil
}

func cloneRequest(req Request) Request {
	req.Values = slices.Clone(req.Values)
	req.Extremes = slices.Clone(req.Extremes)
	return req
}

// Stats returns the node's counts so far; for a member of an elastic
// group, those of its node in the latest view it ran an operation over.
func (n *Node) Stats() Stats {
	if n.el != nil {
		return n.el.stats()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stats
}

func (n *Node) setStats(s Stats) {
	n.mu.Lock()
	n.stats = s
	n.mu.Unlock()
}

// Close leaves the group: it tells the other members (so that they stop
// counting this one from their next operation without waiting for it to
// fall silent), stops the node and closes its endpoint. An operation under
// way returns ErrClosed. Close is safe to call more than once. Right
// after an operation, prefer Leave, which first answers the members still
// at it.
func (n *Node) Close() error {
	if n.el != nil {
		return n.el.close(true)
	}
	var err error
	n.once.Do(func() {
		close(n.quit)
		<-n.exited
		open.Add(-1)
		err = n.ep.Close()
	})
	return err
}

// Stop closes the node as Close does, but without telling the other
// members that it leaves: for a caller that stops every member of a group
// at once (a test, or the run command), where the announcements would
// only cost a session with every other member each (with N members in one
// process, N² handshakes). A member stopped while others go on is
// excluded by them once it has been silent for Suspect.
func (n *Node) Stop() error {
	if n.el != nil {
		return n.el.close(false)
	}
	n.silent.Store(true)
	return n.Close()
}

// Leave leaves the group gracefully: it stays a member, answering the
// others, until ctx ends, and then closes the node as Close does. A member
// that closes the moment it has its result can take with it what others
// still need from it: a message the transport holds for a peer whose
// session is not yet established (see transport's Stats.Unsent), a step
// message a partner lost and asks for again, and, with the exchange
// algorithm, the partials and the result that only finished members hold;
// after an operation that ended with ErrGroupMismatch, the word of the
// disagreement, without which the members that have not heard it decide
// without the ones that stopped (their silence reads as death). (Close
// and Leave both end with a leave notice, which says that this member
// returned the exchange's result and names it by its hash: a member that
// holds the same result and waits only for the second pass's vouches
// returns it then. One that has not finished the first pass still needs
// the members that linger.)
//
// It leaves before ctx ends once it has stayed Config.Suspect and no
// member still at its last operation has sent it anything for Suspect
// (Stats.Late stood still): such members send at least every Suspect/4,
// so none is left. So a generous deadline costs nothing when every member
// has finished, and keeps the member for a straggler: with 160 member
// processes on 2 cores a member that started late found the partners of
// its exchange gone a second after their results, and never finished. The
// node command lingers up to 10 s. Leave returns Close's error; an
// operation started meanwhile returns ErrClosed.
func (n *Node) Leave(ctx context.Context) error {
	n.linger(ctx)
	if n.el != nil {
		return n.el.close(true) // leave the view
	}
	return n.Close()
}

// linger returns when ctx ends, when the node closes, or once no member
// still at its last operation has sent it anything for Suspect, after at
// least Suspect (see Leave).
func (n *Node) linger(ctx context.Context) {
	quiet := n.r.Suspect
	poll := time.NewTicker(quiet / 4)
	defer poll.Stop()
	late, since := n.Stats().Late, time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.quit:
			return
		case <-poll.C:
			if l := n.Stats().Late; l != late {
				late, since = l, time.Now()
			} else if time.Since(since) >= quiet {
				return
			}
		}
	}
}

// ID returns the member's id; for a member of an elastic group, its
// place in its current view (0 when it is in none).
func (n *Node) ID() gossip.NodeID {
	if n.el != nil {
		v, _ := n.el.current()
		for i, e := range v.Members {
			if e.Name == n.el.cfg.Name {
				return gossip.NodeID(i)
			}
		}
		return 0
	}
	return n.r.ID
}

// ConfigHash returns the hash of the settings all members must share.
func (n *Node) ConfigHash() uint64 { return n.r.hash }

var errNotAfter = errors.New("aggregate: epoch not after the last")
