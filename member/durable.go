package member

import (
	"fmt"
	"slices"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// HardState is what a member must remember across a restart to stay safe:
// its votes in the Paxos that decides its latest operation (see commit.go)
// and, for an algorithm that would count its input twice if it began an
// operation again (algo.Spec.Reinjects: Push-Sum), that it began one.
// Paxos counts on acceptors that remember what they promised and accepted;
// a process killed and started again under the same id within an
// operation is a new Machine that has forgotten them, and with it two
// members can return different results (docs/design.md, "Known limits").
// A driver that may restart members under the same id writes the
// HardState to storage whenever it changes, before it sends the messages
// it takes from the outbox after the same call (as etcd-io/raft's users
// write its HardState before sending a Ready's messages), and gives it to
// the new Machine with Restore.
type HardState struct {
	// Epoch is the operation the votes are of or, for an algorithm that
	// reinjects, the last operation begun; 0: none.
	Epoch uint64
	// Promised is the highest ballot promised or accepted, Seen the
	// highest ballot seen (a bid of this member goes above it).
	Promised, Seen uint64
	// Accepted is the proposal accepted (the root, then the result
	// payload) at ballot AcceptedBallot; nil: none. An exchange's result
	// the member vouched for is a proposal accepted at ballot 0.
	Accepted       []float64
	AcceptedBallot uint64
}

// HardState returns the member's votes in its latest operation, and
// whether they changed since the last call (see the type).
func (m *Machine) HardState() (HardState, bool) {
	o := m.cur
	if o == nil || o.epoch < m.hard.Epoch {
		return m.hard, false
	}
	px := &o.px
	if !px.hasAcc && px.promised == 0 && px.seen == 0 {
		if o.m != nil && o.epoch > m.hard.Epoch && m.r.Algorithm.Reinjects {
			// Begun: recorded before the first message leaves.
			m.hard = HardState{Epoch: o.epoch}
			return m.hard, true
		}
		return m.hard, false
	}
	h := m.hard
	if h.Epoch == o.epoch && h.Promised == px.promised && h.Seen == px.seen &&
		(h.Accepted != nil) == px.hasAcc && h.AcceptedBallot == px.accB {
		return h, false
	}
	h = HardState{Epoch: o.epoch, Promised: px.promised, Seen: px.seen, AcceptedBallot: px.accB}
	if px.hasAcc {
		h.Accepted = slices.Clone(px.accepted)
	}
	m.hard = h
	return h, true
}

// Restore gives a new Machine the HardState its earlier incarnation wrote
// (see the type). Call it before the first Begin. The machine then takes
// no part in an operation before hs.Epoch (Begin ends it at once with an
// error wrapping ErrRestarted), and begins operation hs.Epoch with those
// votes; an exchange falls back to its gossip algorithm at once, for the
// earlier incarnation may have vouched for a result the new one would not
// compute again. An algorithm that reinjects (algo.Spec.Reinjects) sits
// out the first operation the machine begins, whichever it is: its earlier
// incarnation's input may be in the group already, and what the others
// sent it while it was down is lost, so they must go on as if it had
// crashed (Push-Sum then fails with ErrInputLost); it takes part again
// from the next.
func (m *Machine) Restore(hs HardState) error {
	if m.ops > 0 {
		return fmt.Errorf("member: %w: Restore after operation %d began", gossip.ErrInvalidConfig, m.epoch)
	}
	if hs.Epoch == 0 {
		return nil
	}
	if hs.Accepted != nil && len(hs.Accepted) < 1 {
		return fmt.Errorf("member: %w: restored proposal of no words", gossip.ErrInvalidConfig)
	}
	hs.Accepted = slices.Clone(hs.Accepted)
	m.restored, m.hard = hs, hs
	return nil
}

// restore puts the restored votes into operation o, or ends an operation
// before them; it reports whether o goes on.
func (m *Machine) restore(o *op) bool {
	r := &m.restored
	switch {
	case r.Epoch == 0:
		return true
	case o.epoch < r.Epoch:
		m.finish(o.start, Result{Epoch: o.epoch}, fmt.Errorf("%w: it voted in operation %d before it restarted, and operation %d is earlier", ErrRestarted, r.Epoch, o.epoch))
		return false
	case m.r.Algorithm.Reinjects && m.ops == 1:
		m.finish(o.start, Result{Epoch: o.epoch}, fmt.Errorf("%w: it took part in operation %d before, and %s sits out the first operation after a restart (what was sent to it while it was down is lost, and its input may be in the group already)", ErrRestarted, r.Epoch, m.r.Algorithm.Name))
		return false
	case o.epoch > r.Epoch:
		return true
	}
	px := &o.px
	px.promised, px.seen = r.Promised, max(r.Seen, r.Promised, r.AcceptedBallot)
	if r.Accepted != nil {
		px.accepted, px.accB, px.hasAcc = slices.Clone(r.Accepted), r.AcceptedBallot, true
	}
	return true
}
