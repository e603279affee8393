package broadcast

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// Delivery is a broadcast value handed to the user.
type Delivery struct {
	Root  gossip.NodeID
	Epoch uint64
	Value []float64
}

// NodeConfig configures a Node.
type NodeConfig struct {
	// ID is this process.
	ID gossip.NodeID
	// Clock relates driver time to broadcast time (see ClockMode).
	Clock ClockMode
	// Window is how many of a root's most recent epochs stay open; a
	// message for an older epoch of that root is discarded. Zero selects
	// 2.
	Window int
	// OncePerEpoch delivers at most one value per epoch whatever the root,
	// for runtimes that let another process take over a dead root's
	// broadcast under the same epoch.
	OncePerEpoch bool
	// Rand makes the gossip source of the machine for (root, epoch); nil
	// selects rand.NewPCG(epoch, id).
	Rand func(root gossip.NodeID, epoch uint64) rand.Source
}

// Node is one process's side of every broadcast it takes part in: it runs
// one Machine per (root, epoch) and guarantees integrity and no duplicates
// (corrected gossip, Claim 1). Every root numbers its broadcasts with
// increasing epochs; a Node keeps, per root, the Window most recent epochs
// open and discards messages of older ones, so a stale message can never
// start a broadcast again, and each machine colors once, so each (root,
// epoch) is delivered at most once, with the value its root started.
// Not safe for concurrent use.
type Node struct {
	plan   *Plan
	cfg    NodeConfig
	active []*nodeEntry     // sorted by (root, epoch)
	floor  map[int32]uint64 // epochs ≤ floor[root] are closed
	top    map[int32]uint64 // highest epoch seen per root
	once   map[uint64]bool  // epochs delivered, with OncePerEpoch
	out    []Delivery
	next   int // round-robin position for Poll
}

type nodeEntry struct {
	root      int32
	epoch     uint64
	m         *Machine
	delivered bool
}

// NewNode returns the node of process cfg.ID for plan.
func NewNode(plan *Plan, cfg NodeConfig) (*Node, error) {
	if plan == nil {
		return nil, fmt.Errorf("broadcast: %w: nil plan", gossip.ErrInvalidConfig)
	}
	if int64(cfg.ID) >= int64(plan.n) {
		return nil, fmt.Errorf("broadcast: %w: id %d out of range [0, %d)", gossip.ErrInvalidConfig, cfg.ID, plan.n)
	}
	if cfg.Window < 0 {
		return nil, fmt.Errorf("broadcast: %w: window %d", gossip.ErrInvalidConfig, cfg.Window)
	}
	if cfg.Window == 0 {
		cfg.Window = 2
	}
	return &Node{plan: plan, cfg: cfg, floor: map[int32]uint64{}, top: map[int32]uint64{}, once: map[uint64]bool{}}, nil
}

// open returns the machine of (root, epoch), creating it if the epoch is
// open; nil if the epoch is closed.
func (n *Node) open(root int32, epoch uint64) (*nodeEntry, error) {
	if f, ok := n.floor[root]; ok && epoch <= f {
		return nil, nil
	}
	i, found := slices.BinarySearchFunc(n.active, nodeKey{root, epoch}, compareEntry)
	if found {
		return n.active[i], nil
	}
	var src rand.Source
	if n.cfg.Rand != nil {
		src = n.cfg.Rand(gossip.NodeID(root), epoch)
	}
	m, err := NewMachine(n.plan, MachineConfig{ID: n.cfg.ID, Root: gossip.NodeID(root), Epoch: epoch, Rand: src, Clock: n.cfg.Clock})
	if err != nil {
		return nil, err
	}
	e := &nodeEntry{root: root, epoch: epoch, m: m}
	n.active = slices.Insert(n.active, i, e)
	if top, ok := n.top[root]; !ok || epoch > top {
		n.top[root] = epoch
		if w := uint64(n.cfg.Window); epoch >= w {
			n.close(root, epoch-w)
		}
	}
	return e, nil
}

// close retires every epoch ≤ upTo of root.
func (n *Node) close(root int32, upTo uint64) {
	if f, ok := n.floor[root]; ok && f >= upTo {
		return
	}
	n.floor[root] = upTo
	n.active = slices.DeleteFunc(n.active, func(e *nodeEntry) bool { return e.root == root && e.epoch <= upTo })
	n.next = 0
}

type nodeKey struct {
	root  int32
	epoch uint64
}

func compareEntry(e *nodeEntry, k nodeKey) int {
	if c := cmp.Compare(e.root, k.root); c != 0 {
		return c
	}
	return cmp.Compare(e.epoch, k.epoch)
}

// Broadcast starts a broadcast of value rooted at this process under epoch,
// at driver time now. The epoch must be newer than every earlier epoch this
// process rooted.
func (n *Node) Broadcast(now int64, epoch uint64, value []float64) error {
	root := int32(n.cfg.ID)
	if top, ok := n.top[root]; ok && epoch <= top {
		return fmt.Errorf("broadcast: %w: epoch %d not newer than %d", gossip.ErrInvalidConfig, epoch, top)
	}
	e, err := n.open(root, epoch)
	if err != nil {
		return err
	}
	if err := e.m.Start(now, value); err != nil {
		return err
	}
	n.collect(e)
	return nil
}

// Step delivers a received message at driver time now. Messages of closed
// epochs are dropped silently (nil error); foreign or malformed messages
// return the machine's error.
func (n *Node) Step(now int64, msg gossip.Message) error {
	if msg.Kind != gossip.KindBroadcast {
		return fmt.Errorf("broadcast: %w: kind %s", gossip.ErrForeignMessage, msg.Kind)
	}
	_, _, root, _ := DecodeTag(msg.Tag)
	if int64(root) >= int64(n.plan.n) {
		return fmt.Errorf("broadcast: %w: root %d", gossip.ErrForeignMessage, root)
	}
	e, err := n.open(int32(root), msg.Epoch)
	if err != nil || e == nil {
		return err
	}
	if err := e.m.Step(now, msg); err != nil {
		return err
	}
	n.collect(e)
	return nil
}

// Poll appends the next message of any open broadcast (one at most; the
// send port is shared) and returns out. Broadcasts take turns.
func (n *Node) Poll(now int64, out []gossip.Message) []gossip.Message {
	for k := range n.active {
		i := (n.next + k) % len(n.active)
		e := n.active[i]
		before := len(out)
		out = e.m.Poll(now, out)
		n.collect(e)
		if len(out) > before {
			n.next = (i + 1) % len(n.active)
			return out
		}
	}
	return out
}

// Wake returns the earliest driver time any open broadcast wants to be
// polled, or Never.
func (n *Node) Wake() int64 {
	w := int64(Never)
	for _, e := range n.active {
		w = min(w, e.m.Wake())
	}
	return w
}

// Deliveries appends the values delivered since the last call to dst and
// returns it.
func (n *Node) Deliveries(dst []Delivery) []Delivery {
	dst = append(dst, n.out...)
	n.out = n.out[:0]
	return dst
}

func (n *Node) collect(e *nodeEntry) {
	if e.delivered || !e.m.Delivered() {
		return
	}
	e.delivered = true
	if n.cfg.OncePerEpoch {
		if n.once[e.epoch] {
			return
		}
		n.once[e.epoch] = true
	}
	n.out = append(n.out, Delivery{Root: gossip.NodeID(e.root), Epoch: e.epoch, Value: e.m.Value(nil)})
}

// Machine returns the machine of (root, epoch) if it is open.
func (n *Node) Machine(root gossip.NodeID, epoch uint64) *Machine {
	i, found := slices.BinarySearchFunc(n.active, nodeKey{int32(root), epoch}, compareEntry)
	if !found {
		return nil
	}
	return n.active[i].m
}
