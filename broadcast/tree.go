package broadcast

import (
	"container/heap"
	"fmt"
	"slices"
	"strconv"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// TreeKind names the shape of a dissemination tree (corrected trees, 3.2).
type TreeKind uint8

// Tree shapes.
const (
	// KAry gives every process K children: process r on level ℓ sends to
	// r + i·K^ℓ, i = 1 … K (section 3.2.1; the paper prints 0 < i < k, but
	// its figure 3 and text give k children, as does the reference
	// simulator).
	KAry TreeKind = iota + 1
	// Binomial is the Lamé tree of order 1: r sends to r + 2^i for every
	// 2^i > r (equation 2 with R(t) = 2^t).
	Binomial
	// Lame is the Lamé tree of order K, T_t = T_{t-1} • T_{t-K} (section
	// 3.2.2): a process becomes ready to send K iterations after it was
	// created and then creates one child per iteration.
	Lame
	// Optimal is the latency-optimal LogP broadcast tree T_t = T_{t-o} •
	// T_{t-2o-L} (section 3.2.3): a process sends every o and a receiver
	// can send 2o+L after its parent started sending to it. Its shape
	// depends on L and o. With o = 1 it is the Lamé tree of order 2+L and
	// interleaved; for o > 1 the paper's equation does not give a tree, so
	// the greedy schedule (Karp et al.) is numbered in creation order,
	// which is not always interleaved (the smallest counterexample is
	// P = 15 with L = 1, o = 2).
	Optimal
)

// String returns "kary", "binomial", "lame" or "optimal".
func (k TreeKind) String() string {
	switch k {
	case KAry:
		return "kary"
	case Binomial:
		return "binomial"
	case Lame:
		return "lame"
	case Optimal:
		return "optimal"
	}
	return "treekind(" + strconv.Itoa(int(k)) + ")"
}

// Order is how the processes of a tree are numbered, which fixes where
// subtrees land on the correction ring.
type Order uint8

// Numberings.
const (
	// Interleaved numbers processes in the order they are created by the
	// dissemination schedule (equation 2), which spreads every subtree
	// across the ring (Definition 1, Lemma 1).
	Interleaved Order = iota
	// InOrder numbers processes in depth-first preorder, children visited in
	// the order their parent sends to them, so every subtree occupies a
	// contiguous arc of the ring (figure 3, left).
	InOrder
)

// String returns "interleaved" or "inorder".
func (o Order) String() string {
	switch o {
	case Interleaved:
		return "interleaved"
	case InOrder:
		return "inorder"
	}
	return "order(" + strconv.Itoa(int(o)) + ")"
}

// ParseOrder reads "interleaved" or "inorder".
func ParseOrder(s string) (Order, error) {
	switch s {
	case "interleaved", "":
		return Interleaved, nil
	case "inorder", "in-order":
		return InOrder, nil
	}
	return 0, fmt.Errorf("broadcast: %w: order %q (want interleaved or inorder)", gossip.ErrInvalidConfig, s)
}

// LogP holds the integer LogP costs of the model: L is the network latency
// and O the send and receive overhead, both in units of local time. The gap
// g is taken to be at most O and so never binds (corrected trees, 2.2).
type LogP struct {
	L, O int
}

// Validate returns an error wrapping gossip.ErrInvalidConfig unless o ≥ 1
// and L ≥ 0, neither above 2^20.
func (m LogP) Validate() error {
	if m.O < 1 || m.L < 0 {
		return fmt.Errorf("broadcast: %w: LogP needs o ≥ 1 and L ≥ 0, got L=%d o=%d", gossip.ErrInvalidConfig, m.L, m.O)
	}
	if m.O > 1<<20 || m.L > 1<<20 {
		return fmt.Errorf("broadcast: %w: LogP costs L=%d o=%d too large", gossip.ErrInvalidConfig, m.L, m.O)
	}
	return nil
}

// Hop returns the time from the start of a send to the end of its
// receive: o to send, L on the wire, o to receive.
func (m LogP) Hop() int64 { return int64(2*m.O + m.L) }

// TreeSpec selects a tree: its kind, the parameter K of KAry (the arity)
// and Lame (the order), and the numbering.
type TreeSpec struct {
	Kind  TreeKind
	K     int
	Order Order
}

// String returns the command-line text of the tree, such as "kary:4",
// "lame:2", "binomial" or "optimal" (the numbering is not included).
func (s TreeSpec) String() string {
	switch s.Kind {
	case KAry, Lame:
		return s.Kind.String() + ":" + strconv.Itoa(s.K)
	}
	return s.Kind.String()
}

func (s TreeSpec) validate() error {
	switch s.Kind {
	case KAry, Lame:
		if s.K < 1 || s.K > 1<<16 {
			return fmt.Errorf("broadcast: %w: %s tree needs 1 ≤ K ≤ 65536, got %d", gossip.ErrInvalidConfig, s.Kind, s.K)
		}
	case Binomial, Optimal:
	default:
		return fmt.Errorf("broadcast: %w: unknown tree kind %d", gossip.ErrInvalidConfig, s.Kind)
	}
	if s.Order != Interleaved && s.Order != InOrder {
		return fmt.Errorf("broadcast: %w: unknown order %d", gossip.ErrInvalidConfig, s.Order)
	}
	return nil
}

// MaxNodes is the largest number of processes a broadcast may have.
const MaxNodes = 1 << 26

// Tree is a dissemination tree over processes 0 … N-1 rooted at 0, with the
// children of every process in the order it sends to them. A Tree is
// immutable and safe for concurrent use.
type Tree struct {
	spec   TreeSpec
	n      int
	start  []int32 // children of v are child[start[v]:start[v+1]]
	child  []int32
	parent []int32 // parent[0] = -1
}

// NewTree builds the tree spec over n processes. The LogP costs matter only
// for the Optimal tree, whose shape depends on them.
func NewTree(spec TreeSpec, n int, model LogP) (*Tree, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	if n < 1 || n > MaxNodes {
		return nil, fmt.Errorf("broadcast: %w: %d processes (want 1 … %d)", gossip.ErrInvalidConfig, n, MaxNodes)
	}
	var edges []int32 // parent of process i+1, in creation order
	switch spec.Kind {
	case KAry:
		edges = karyParents(n, spec.K)
	case Binomial:
		edges = scheduleParents(n, 1, 1)
	case Lame:
		edges = scheduleParents(n, 1, int64(spec.K))
	case Optimal:
		if err := model.Validate(); err != nil {
			return nil, err
		}
		edges = scheduleParents(n, int64(model.O), model.Hop())
	}
	t := fromParents(spec, n, edges)
	if spec.Order == InOrder {
		t = t.preorder()
	}
	return t, nil
}

// karyParents returns the parent of every process 1 … n-1 of the
// interleaved k-ary tree: level ℓ holds k^ℓ processes, and process r on
// level ℓ has children r + i·k^ℓ, i = 1 … k.
func karyParents(n, k int) []int32 {
	parents := make([]int32, n-1)
	first, width := 0, 1 // level ℓ is [first, first+width), width = k^ℓ
	for first < n {
		for r := first; r < first+width && r < n; r++ {
			for i := 1; i <= k; i++ {
				c := int64(r) + int64(i)*int64(width)
				if c >= int64(n) {
					break
				}
				parents[c-1] = int32(r)
			}
		}
		first += width
		if width > n {
			break
		}
		width *= k
	}
	return parents
}

// scheduleParents builds the tree of a greedy dissemination schedule: the
// root is ready at time 0, a ready process sends every period time units,
// and each send creates the next process, which becomes ready delay time
// units after the send started. Sends at the same time create processes in
// the order of the senders' numbers. With period 1 this is equation 2 of
// corrected trees (delay K gives Lamé(K), delay 1 the binomial tree); with
// period o and delay 2o+L it is the optimal LogP broadcast of Karp et al.
func scheduleParents(n int, period, delay int64) []int32 {
	parents := make([]int32, n-1)
	h := &slotHeap{}
	heap.Push(h, slot{0, 0})
	for next := int32(1); int(next) < n; next++ {
		s := heap.Pop(h).(slot)
		parents[next-1] = s.rank
		heap.Push(h, slot{s.at + period, s.rank})
		heap.Push(h, slot{s.at + delay, next})
	}
	return parents
}

type slot struct {
	at   int64
	rank int32
}

type slotHeap []slot

func (h slotHeap) Len() int { return len(h) }
func (h slotHeap) Less(i, j int) bool {
	return h[i].at < h[j].at || (h[i].at == h[j].at && h[i].rank < h[j].rank)
}
func (h slotHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *slotHeap) Push(x any)   { *h = append(*h, x.(slot)) }
func (h *slotHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// fromParents builds the CSR child lists from the parents of processes
// 1 … n-1 listed in creation order, which is the order each parent sends.
func fromParents(spec TreeSpec, n int, parents []int32) *Tree {
	t := &Tree{
		spec:   spec,
		n:      n,
		start:  make([]int32, n+1),
		child:  make([]int32, n-1),
		parent: make([]int32, n),
	}
	t.parent[0] = -1
	for i, p := range parents {
		t.parent[i+1] = p
		t.start[p+1]++
	}
	for v := 0; v < n; v++ {
		t.start[v+1] += t.start[v]
	}
	// In every interleaved tree built here a parent sends to its children
	// in increasing number (k-ary: r + k^ℓ first; schedule trees: in
	// creation order), so filling in increasing number gives send order.
	fill := make([]int32, n)
	copy(fill, t.start[:n])
	for c := int32(1); int(c) < n; c++ {
		p := t.parent[c]
		t.child[fill[p]] = c
		fill[p]++
	}
	return t
}

// preorder renumbers t in depth-first preorder, children visited in send
// order, keeping the shape and the send order.
func (t *Tree) preorder() *Tree {
	newID := make([]int32, t.n)
	stack := []int32{0}
	next := int32(0)
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		newID[v] = next
		next++
		kids := t.child[t.start[v]:t.start[v+1]]
		for i := len(kids) - 1; i >= 0; i-- {
			stack = append(stack, kids[i])
		}
	}
	spec := t.spec
	spec.Order = InOrder
	u := &Tree{
		spec:   spec,
		n:      t.n,
		start:  make([]int32, t.n+1),
		child:  make([]int32, len(t.child)),
		parent: make([]int32, t.n),
	}
	for v := 0; v < t.n; v++ {
		nv := newID[v]
		u.start[nv+1] = t.start[v+1] - t.start[v]
		if p := t.parent[v]; p >= 0 {
			u.parent[nv] = newID[p]
		} else {
			u.parent[nv] = -1
		}
	}
	for v := 0; v < t.n; v++ {
		u.start[v+1] += u.start[v]
	}
	for v := 0; v < t.n; v++ {
		nv := newID[v]
		at := u.start[nv]
		for _, c := range t.child[t.start[v]:t.start[v+1]] {
			u.child[at] = newID[c]
			at++
		}
	}
	return u
}

// Spec returns the tree's kind, parameter and numbering.
func (t *Tree) Spec() TreeSpec { return t.spec }

// Len returns the number of processes.
func (t *Tree) Len() int { return t.n }

// Children appends the children of v, in the order v sends to them, to dst
// and returns it.
func (t *Tree) Children(dst []gossip.NodeID, v gossip.NodeID) []gossip.NodeID {
	if int64(v) >= int64(t.n) {
		return dst
	}
	for _, c := range t.child[t.start[v]:t.start[v+1]] {
		dst = append(dst, gossip.NodeID(c))
	}
	return dst
}

// Parent returns the parent of v; ok is false for the root and for a v out
// of range.
func (t *Tree) Parent(v gossip.NodeID) (p gossip.NodeID, ok bool) {
	if int64(v) >= int64(t.n) || t.parent[v] < 0 {
		return 0, false
	}
	return gossip.NodeID(t.parent[v]), true
}

// Child returns the i-th child (from 0) of v in the order v sends to them;
// ok is false past the last child and for a v out of range. Unlike
// Children it copies nothing, for simulators that walk a process's sends
// one at a time.
func (t *Tree) Child(v gossip.NodeID, i int) (c gossip.NodeID, ok bool) {
	if int64(v) >= int64(t.n) {
		return 0, false
	}
	kids := t.kids(int32(v))
	if i < 0 || i >= len(kids) {
		return 0, false
	}
	return gossip.NodeID(kids[i]), true
}

// kids returns the internal child slice of v (read only).
func (t *Tree) kids(v int32) []int32 { return t.child[t.start[v]:t.start[v+1]] }

// ColorTimes returns, for every process, when it finishes receiving the
// tree message in a fault-free run under model (the root at 0): the j-th
// child (from 0) of a process colored at c is colored at c + j·o + 2o + L.
func (t *Tree) ColorTimes(model LogP) []int64 {
	at := make([]int64, t.n)
	o, hop := int64(model.O), model.Hop()
	// Parents always have smaller preorder and creation numbers than
	// their children in both numberings, so one increasing pass suffices.
	for v := int32(0); int(v) < t.n; v++ {
		for j, c := range t.kids(v) {
			at[c] = at[v] + int64(j)*o + hop
		}
	}
	return at
}

// Deadline returns the fault-free dissemination latency under model: the
// time the last process finishes receiving its tree message. Synchronized
// correction starts then.
func (t *Tree) Deadline(model LogP) int64 {
	var d int64
	for _, c := range t.ColorTimes(model) {
		d = max(d, c)
	}
	return d
}

// AckLatency returns the fault-free latency of the acknowledged broadcast
// over t (SchemeAck) under model: the time its root receives the last
// acknowledgment, with receives queued in arrival order (ties by sender)
// and sends serialised. Spec.AckTimeout defaults to twice this.
func (t *Tree) AckLatency(model LogP) int64 {
	o, hop := int64(model.O), model.Hop()
	color := t.ColorTimes(model)
	n := t.Len()
	// sendFree[v] is when v's send port is free after its tree sends;
	// ready[v] the time v may send its acknowledgment.
	ready := make([]int64, n)
	arrivals := make([][]int64, n)
	for v := n - 1; v >= 0; v-- {
		kids := t.kids(int32(v))
		free := color[v] + int64(len(kids))*o
		r := free
		if len(kids) > 0 {
			a := arrivals[v]
			slices.Sort(a)
			recvFree := int64(0)
			for _, at := range a {
				recvFree = max(at, recvFree) + o
			}
			r = max(r, recvFree)
		}
		ready[v] = r
		if p := t.parent[v]; p >= 0 {
			arrivals[p] = append(arrivals[p], r+hop-o)
		}
	}
	return ready[0]
}

// Height returns the number of edges on the longest root-to-leaf path.
func (t *Tree) Height() int {
	depth := make([]int32, t.n)
	h := int32(0)
	for v := int32(0); int(v) < t.n; v++ {
		for _, c := range t.kids(v) {
			depth[c] = depth[v] + 1
			h = max(h, depth[c])
		}
	}
	return int(h)
}

// CheckInterleaved reports whether t is interleaved in the sense of
// Definition 1 of corrected trees: for every subtree T_s and every pair of
// distinct processes adjacent on the ring of T_s's processes (in increasing
// number, the last adjacent to the first), either one descends from the
// other or their lowest common ancestor is root(T_s). It returns nil or an
// error naming the first violating subtree and pair.
func (t *Tree) CheckInterleaved() error {
	n := t.n
	depth := make([]int32, n)
	tin := make([]int32, n)  // preorder position
	size := make([]int32, n) // subtree size
	pre := make([]int32, 0, n)
	stack := []int32{0}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		tin[v] = int32(len(pre))
		pre = append(pre, v)
		kids := t.kids(v)
		for i := len(kids) - 1; i >= 0; i-- {
			depth[kids[i]] = depth[v] + 1
			stack = append(stack, kids[i])
		}
	}
	for i := n - 1; i >= 0; i-- {
		v := pre[i]
		size[v]++
		if p := t.parent[v]; p >= 0 {
			size[p] += size[v]
		}
	}
	ancestor := func(a, b int32) bool { // a is an ancestor of b (or b itself)
		return tin[a] <= tin[b] && tin[b] < tin[a]+size[a]
	}
	lca := func(a, b int32) int32 {
		for depth[a] > depth[b] {
			a = t.parent[a]
		}
		for depth[b] > depth[a] {
			b = t.parent[b]
		}
		for a != b {
			a, b = t.parent[a], t.parent[b]
		}
		return a
	}
	ring := make([]int32, 0, n)
	for v := int32(0); int(v) < n; v++ {
		if size[v] < 2 {
			continue
		}
		ring = append(ring[:0], pre[tin[v]:tin[v]+size[v]]...)
		slices.Sort(ring)
		for i, a := range ring {
			b := ring[(i+1)%len(ring)]
			if a == b || ancestor(a, b) || ancestor(b, a) {
				continue
			}
			if lca(a, b) != v {
				return fmt.Errorf("broadcast: tree %s/%s, %d processes, not interleaved: in the subtree of %d, neighbours %d and %d meet at %d",
					t.spec, t.spec.Order, n, v, a, b, lca(a, b))
			}
		}
	}
	return nil
}
