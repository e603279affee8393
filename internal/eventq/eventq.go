// Package eventq is the priority queue of the discrete-event simulators: a
// 4-ary min-heap of events ordered by time, ties broken by insertion order so
// that a run is deterministic. Events are stored by value; the queue never
// allocates once it has grown to its working size.
package eventq

// Queue is a min-heap of events of type E ordered by (time, insertion
// sequence). The zero value is an empty queue ready to use.
type Queue[E any] struct {
	items []item[E]
	seq   uint64
}

type item[E any] struct {
	at  float64
	seq uint64
	ev  E
}

func (a *item[E]) less(b *item[E]) bool {
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

// Len returns the number of queued events.
func (q *Queue[E]) Len() int { return len(q.items) }

// Push queues ev at time at. Events at equal times come out in the order
// they were pushed.
func (q *Queue[E]) Push(at float64, ev E) {
	q.items = append(q.items, item[E]{at: at, seq: q.seq, ev: ev})
	q.seq++
	q.up(len(q.items) - 1)
}

// Peek returns the earliest event without removing it. ok is false when the
// queue is empty.
func (q *Queue[E]) Peek() (at float64, ev E, ok bool) {
	if len(q.items) == 0 {
		return 0, ev, false
	}
	return q.items[0].at, q.items[0].ev, true
}

// Pop removes and returns the earliest event. ok is false when the queue is
// empty.
func (q *Queue[E]) Pop() (at float64, ev E, ok bool) {
	n := len(q.items)
	if n == 0 {
		return 0, ev, false
	}
	top := q.items[0]
	last := n - 1
	q.items[0] = q.items[last]
	var zero item[E]
	q.items[last] = zero // let the GC have what E points to
	q.items = q.items[:last]
	if last > 0 {
		q.down(0)
	}
	return top.at, top.ev, true
}

// Reset empties the queue, keeping its storage.
func (q *Queue[E]) Reset() {
	clear(q.items)
	q.items = q.items[:0]
	q.seq = 0
}

const arity = 4

func (q *Queue[E]) up(i int) {
	it := q.items[i]
	for i > 0 {
		p := (i - 1) / arity
		if !it.less(&q.items[p]) {
			break
		}
		q.items[i] = q.items[p]
		i = p
	}
	q.items[i] = it
}

func (q *Queue[E]) down(i int) {
	n := len(q.items)
	it := q.items[i]
	for {
		first := arity*i + 1
		if first >= n {
			break
		}
		best := first
		end := min(first+arity, n)
		for c := first + 1; c < end; c++ {
			if q.items[c].less(&q.items[best]) {
				best = c
			}
		}
		if !q.items[best].less(&it) {
			break
		}
		q.items[i] = q.items[best]
		i = best
	}
	q.items[i] = it
}
