package broadcast

import (
	"math"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// ackState is the acknowledgment side of an acknowledged tree (corrected
// trees 4.1): a process acknowledges to its parent once it has sent its
// tree messages and every child it sent to has acknowledged. A child that
// has not acknowledged AckTimeout after the send started is presumed dead
// and its children are adopted: sent the value and awaited in its place.
// A process that receives the value again from an adopting process takes
// it as its new parent and acknowledges to it (again, if it already had).
type ackState struct {
	parent  int32 // process id; -1 for the root
	waiting []ackWait
	adopt   []int32 // ranks to send the value to, adopted from silent children
	acked   bool    // acknowledgment sent to the current parent
}

type ackWait struct {
	rank     int32
	deadline int64 // broadcast time
}

func newAckState() *ackState { return &ackState{parent: -1} }

func (a *ackState) done() bool {
	return len(a.waiting) == 0 && len(a.adopt) == 0 && (a.acked || a.parent < 0)
}

func (a *ackState) sent(rank int32, deadline int64) {
	a.waiting = append(a.waiting, ackWait{rank, deadline})
}

func (a *ackState) adopted(from int32) {
	a.parent = from
	a.acked = false
}

// acked removes the child whose acknowledgment arrived; acknowledgments
// from processes not awaited (late ones from a child already given up
// on) are ignored.
func (a *ackState) ackedBy(m *Machine, from int32) {
	for i, w := range a.waiting {
		if m.fromRank(w.rank) == from {
			a.waiting = append(a.waiting[:i], a.waiting[i+1:]...)
			return
		}
	}
}

func (a *ackState) wake(local func(int64) int64) int64 {
	if len(a.adopt) > 0 {
		return math.MinInt64
	}
	w := int64(Never)
	for _, x := range a.waiting {
		w = min(w, local(x.deadline))
	}
	return w
}

// pollAck sends what the acknowledgment protocol needs now: the value to
// an adopted process, or the acknowledgment to the parent.
func (m *Machine) pollAck(t int64) (gossip.Message, bool) {
	a, p := m.ack, m.plan
	kept := a.waiting[:0]
	for _, w := range a.waiting {
		if t >= w.deadline {
			a.adopt = append(a.adopt, p.tree.kids(w.rank)...)
			continue
		}
		kept = append(kept, w)
	}
	a.waiting = kept
	if len(a.adopt) > 0 {
		r := a.adopt[0]
		a.adopt = a.adopt[1:]
		a.sent(r, t+p.ack)
		return m.message(m.fromRank(r), MsgTree, t), true
	}
	if m.fanNext >= len(m.fan) && len(a.waiting) == 0 && !a.acked && a.parent >= 0 {
		a.acked = true
		msg := m.message(a.parent, MsgAck, t)
		msg.Payload = nil
		return msg, true
	}
	return gossip.Message{}, false
}
