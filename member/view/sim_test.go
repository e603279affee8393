package view

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// A simulated broadcast medium for the view machines: every message goes
// to every other node after a latency and a jitter, unless it is lost or a
// partition separates the two. Time moves in steps of 1 ms; every node is
// ticked every tickEvery. It checks agreement after every call into a
// machine: two members never install different views under one number of
// one group.

const tickEvery = 10 * time.Millisecond

type simNode struct {
	m       *Machine
	crashed bool
	left    bool
	side    int // partition side
}

type delivery struct {
	at  time.Duration
	seq int
	to  int
	msg Msg
}

type deliveries []delivery

func (d deliveries) Len() int { return len(d) }
func (d deliveries) Less(i, j int) bool {
	if d[i].at != d[j].at {
		return d[i].at < d[j].at
	}
	return d[i].seq < d[j].seq
}
func (d deliveries) Swap(i, j int) { d[i], d[j] = d[j], d[i] }
func (d *deliveries) Push(x any)   { *d = append(*d, x.(delivery)) }
func (d *deliveries) Pop() any {
	old := *d
	x := old[len(old)-1]
	*d = old[:len(old)-1]
	return x
}

type viewKey struct {
	genesis Genesis
	num     uint64
}

type sim struct {
	t         testing.TB
	seed      uint64
	rng       *rand.Rand
	now       time.Duration
	nodes     []*simNode
	q         deliveries
	seq       int
	loss      float64
	latency   time.Duration
	jitter    time.Duration
	installed map[viewKey]View
	cfg       Config // timings for new nodes
	msgs      int
}

func newSim(t testing.TB, seed uint64) *sim {
	t.Helper()
	t.Logf("seed %d (replay: VIEW_SEED=%d)", seed, seed)
	return &sim{
		t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 0x5eed)),
		latency: time.Millisecond, jitter: 2 * time.Millisecond,
		installed: map[viewKey]View{},
	}
}

// add starts a node named name and returns its index.
func (s *sim) add(name string) int {
	s.t.Helper()
	cfg := s.cfg
	cfg.Name, cfg.Inc = name, s.rng.Uint64()|1
	m, err := New(cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	s.nodes = append(s.nodes, &simNode{m: m})
	i := len(s.nodes) - 1
	s.call(i, func() { m.Tick(s.now) })
	return i
}

func (s *sim) crash(i int) { s.nodes[i].crashed = true }

// leave makes node i leave; it goes on until its machine stops.
func (s *sim) leave(i int) {
	s.nodes[i].left = true
	s.call(i, func() { s.nodes[i].m.Leave(s.now) })
}

// call runs f on node i, sends its outbox and checks agreement.
func (s *sim) call(i int, f func()) {
	nd := s.nodes[i]
	f()
	defer func() {
		if nd.m.Stopped() {
			nd.crashed = true
		}
	}()
	for _, msg := range nd.m.Outbox() {
		s.msgs++
		for j, other := range s.nodes {
			if j == i || other.crashed || other.side != nd.side || s.rng.Float64() < s.loss {
				continue
			}
			d := s.latency
			if s.jitter > 0 {
				d += time.Duration(s.rng.Int64N(int64(s.jitter)))
			}
			s.seq++
			heap.Push(&s.q, delivery{at: s.now + d, seq: s.seq, to: j, msg: msg})
		}
	}
	for _, v := range nd.m.views {
		k := viewKey{v.Genesis, v.Num}
		if w, ok := s.installed[k]; ok {
			if !w.Equal(v) {
				s.t.Fatalf("seed %d, %v: two views %d of group %v: %v and %v", s.seed, s.now, v.Num, v.Genesis, w, *v)
			}
		} else {
			s.installed[k] = *v.clone()
		}
	}
}

// run advances the simulation by d.
func (s *sim) run(d time.Duration) {
	end := s.now + d
	for s.now < end {
		s.now += time.Millisecond
		for len(s.q) > 0 && s.q[0].at <= s.now {
			dv := heap.Pop(&s.q).(delivery)
			if nd := s.nodes[dv.to]; !nd.crashed {
				s.call(dv.to, func() { nd.m.Step(s.now, dv.msg) })
			}
		}
		if s.now%tickEvery == 0 {
			for i, nd := range s.nodes {
				if !nd.crashed {
					s.call(i, func() { nd.m.Tick(s.now) })
				}
			}
		}
	}
}

// live returns the indices of the nodes that are up and have no error.
func (s *sim) live() []int {
	var out []int
	for i, nd := range s.nodes {
		if !nd.crashed && !nd.left && nd.m.Err() == nil {
			out = append(out, i)
		}
	}
	return out
}

// converged reports whether the nodes idx share one view that holds
// exactly them.
func (s *sim) converged(idx []int) error {
	var first View
	for k, i := range idx {
		v, ok := s.nodes[i].m.Current()
		if !ok {
			return fmt.Errorf("%s is in no view", s.nodes[i].m.Self().Name)
		}
		if k == 0 {
			first = v
			continue
		}
		if !v.Equal(&first) {
			return fmt.Errorf("%s has view %d of %v, %s has view %d of %v", s.nodes[idx[0]].m.Self().Name, first.Num, first.Names(), s.nodes[i].m.Self().Name, v.Num, v.Names())
		}
	}
	want := make([]Entry, 0, len(idx))
	for _, i := range idx {
		want = append(want, s.nodes[i].m.Self())
	}
	slices.SortFunc(want, compareEntry)
	if !slices.Equal(first.Members, want) {
		return fmt.Errorf("view %d holds %v, the live members are %v", first.Num, first.Members, want)
	}
	return nil
}

func (s *sim) mustConverge(idx []int, within time.Duration) {
	s.t.Helper()
	for waited := time.Duration(0); ; waited += 50 * time.Millisecond {
		err := s.converged(idx)
		if err == nil {
			return
		}
		if waited >= within {
			s.t.Fatalf("seed %d, %v: not converged after %v: %v", s.seed, s.now, within, err)
		}
		s.run(50 * time.Millisecond)
	}
}

func (s *sim) partition(sides map[int]int) {
	for i, nd := range s.nodes {
		nd.side = sides[i]
	}
}

func (s *sim) heal() {
	for _, nd := range s.nodes {
		nd.side = 0
	}
}
