package member

import (
	"math"
	"slices"
	"time"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// Deciding one result per epoch.
//
// The certificate tells the root when its estimate is good enough; it does
// not make the result unique. A root that returned its value and died
// before anyone received it (the root's last breath) left a successor to
// compute another value for the same epoch: two members returned two
// different results. So the value is chosen by single-decree Paxos among
// the members, the root acting as proposer:
//
//   - A proposal carries a ballot: round<<32 | proposer. Member 0's first
//     ballot, 0, is the lowest there is, so it needs no prepare phase (no
//     lower ballot can have been accepted); every other ballot first
//     collects promises from a majority of the group (tagPrepare,
//     tagPromise) and adopts the value of the highest ballot any of them
//     accepted, its own estimate only when none did.
//   - The proposer sends the value to every member not known dead
//     (tagPropose); a member accepts it unless it promised a higher ballot
//     (and, for a value it did not accept before, unless its own estimate
//     contradicts it: see plausible), and answers tagAccepted.
//   - With a majority of acceptances (itself included) the value is
//     chosen: the proposer returns it and sends it by the corrected-tree
//     broadcast; every member returns it on receipt. Members that finished
//     answer later messages of the epoch with it.
//
// A chosen value is accepted by a majority, every later prepare hears from
// a majority, and the two intersect: whoever proposes after the choice
// proposes the chosen value. Messages cost: N−1 proposals and N−1
// acceptances at the root, one acceptance per member, plus N−1 prepares and
// promises after a take-over.
const (
	tagPrepare  = ^uint64(0) - 6 // payload: ballot
	tagPromise  = ^uint64(0) - 7 // payload: ballot, accepted ballot + 1 (0: none), accepted proposal
	tagPropose  = ^uint64(0) - 8 // payload: ballot, proposal (root, result payload)
	tagAccepted = ^uint64(0) - 9 // payload: ballot
	tagNack     = ^uint64(0) - 10
)

// paxos is one member's Paxos state for one operation.
type paxos struct {
	promised uint64    // highest ballot promised (or accepted)
	accepted []float64 // the proposal accepted: root, then the result payload
	accB     uint64    // its ballot
	hasAcc   bool
	seen     uint64 // highest ballot seen anywhere, for choosing the next round

	// As proposer.
	ballot   uint64
	phase    int // 0 idle, 1 preparing, 2 proposing, 3 chosen
	votes    bitset
	nvotes   int // members in votes: counting the set was n/64 words a vote
	bestB    uint64
	best     []float64 // highest accepted proposal among the promises
	proposal []float64
	// phaseAt is when the phase began or last counted a new vote, and
	// resentAt when its messages last went out or it last counted one: a
	// proposer still taking in replies is making progress, and neither
	// asks again nor bids anew. At 65,536 simulated members the root's
	// N replies (5 µs each) took longer than Suspect/2, and a root timed
	// from the start of the phase bid again while its first replies were
	// still queued, and again, each bid adding N replies to its queue.
	phaseAt  time.Duration
	resentAt time.Duration
}

func f2u(f float64) uint64 { return math.Float64bits(f) }
func u2f(u uint64) float64 { return math.Float64frombits(u) }

// propose starts (or restarts) this member's bid to decide the operation
// with its own estimate, unless a proposal it learns of wins.
func (m *Machine) propose(now time.Duration, own []float64) {
	o := m.cur
	px := &o.px
	round := px.seen>>32 + 1
	if m.r.ID == 0 && px.phase == 0 && px.seen == 0 && !px.hasAcc && o.x == nil {
		round = 0 // the lowest ballot: no prepare needed
	}
	px.ballot = round<<32 | uint64(m.r.ID)
	px.seen = max(px.seen, px.ballot)
	px.votes, px.nvotes = newBitset(m.r.n), 0
	px.best, px.bestB = nil, 0
	px.proposal = append([]float64{float64(m.r.ID)}, own...)
	px.phaseAt, px.resentAt = now, now
	if px.ballot == 0 {
		px.phase = 2
		m.acceptLocal(now)
		m.sendAll(o, tagPropose, append([]float64{u2f(px.ballot)}, px.proposal...))
		return
	}
	px.phase = 1
	m.promiseLocal()
	m.sendAll(o, tagPrepare, []float64{u2f(px.ballot)})
}

// sendAll sends a control message to every member not known dead. The
// messages share one payload, which nobody writes to once it is sent (see
// Outbox): a proposal carries the result's dead set, n/64 words, and a
// copy for each of n members was n²/8 bytes at every round and resend
// (537 MB at 65,536 members).
func (m *Machine) sendAll(o *op, tag uint64, payload []float64) {
	for j := range m.r.n {
		if j == int(m.r.ID) || (o.cert != nil && o.cert.isDead(j)) || (o.px.votes != nil && o.px.votes.has(j)) {
			continue
		}
		m.control(o, gossip.NodeID(j), tag, payload)
	}
}

// promiseLocal is the proposer's own promise.
func (m *Machine) promiseLocal() {
	px := &m.cur.px
	if px.ballot >= px.promised {
		m.pledge(m.cur)
		px.promised = px.ballot
		px.add(m.r.ID)
		if px.hasAcc {
			px.best, px.bestB = px.accepted, px.accB+1
		}
	}
}

// acceptLocal is the proposer's own acceptance.
func (m *Machine) acceptLocal(now time.Duration) {
	px := &m.cur.px
	if px.ballot >= px.promised {
		if px.ballot > 0 {
			m.pledge(m.cur)
		}
		px.promised, px.accB, px.hasAcc = px.ballot, px.ballot, true
		px.accepted = px.proposal
		px.add(m.r.ID)
	}
	m.checkChosen(now)
}

// paxosStep handles the Paxos messages of operation o, under way.
func (m *Machine) paxosStep(now time.Duration, o *op, msg gossip.Message) {
	px := &o.px
	p := msg.Payload
	if len(p) < 1 {
		m.reject("paxos", msg, gossip.ErrLength)
		return
	}
	b := f2u(p[0])
	px.seen = max(px.seen, b)
	switch msg.Tag {
	case tagPrepare:
		if b < px.promised {
			m.control(o, msg.From, tagNack, []float64{u2f(px.promised)})
			return
		}
		m.pledge(o)
		px.promised = b
		reply := []float64{p[0], 0}
		if px.hasAcc {
			reply[1] = u2f(px.accB + 1)
			reply = append(reply, px.accepted...)
		}
		m.control(o, msg.From, tagPromise, reply)
	case tagPropose:
		if b < px.promised {
			m.control(o, msg.From, tagNack, []float64{u2f(px.promised)})
			return
		}
		prop := p[1:]
		if !m.wellFormed(o, prop) {
			m.reject("proposal", msg, gossip.ErrLength)
			return
		}
		if b == 0 && px.hasAcc && !gossip.SameBits(px.accepted, prop) {
			// Ballot 0 has one value: the exchange's result, if this member
			// accepted one (fallback.go), and nobody proposes at ballot 0
			// after a fallback. Another value is forged or misrouted.
			m.reject("proposal", msg, gossip.ErrForeignMessage)
			return
		}
		if !(px.hasAcc && gossip.SameBits(px.accepted, prop)) && !m.plausiblePayload(o, prop[1:]) && !m.offeredR(o, prop) {
			m.stats.Rejected++
			m.log.Debug("proposal this member's estimate does not confirm ignored", "from", msg.From)
			return
		}
		if b > 0 {
			m.pledge(o)
		}
		px.promised, px.accB, px.hasAcc = b, b, true
		px.accepted = slices.Clone(prop)
		m.control(o, msg.From, tagAccepted, []float64{p[0]})
	case tagPromise:
		if px.phase != 1 || b != px.ballot || len(p) < 2 {
			return
		}
		if acc := f2u(p[1]); acc != 0 {
			prop := p[2:]
			if !m.wellFormed(o, prop) {
				m.reject("promise", msg, gossip.ErrLength)
				return
			}
			if acc > px.bestB {
				px.best, px.bestB = slices.Clone(prop), acc
			}
		}
		px.vote(now, msg.From)
		if px.nvotes >= Quorum(m.r.n) {
			if px.best != nil {
				px.proposal = px.best // adopt what may have been chosen
			}
			px.phase = 2
			px.votes, px.nvotes = newBitset(m.r.n), 0
			px.phaseAt, px.resentAt = now, now
			m.acceptLocal(now)
			if px.phase == 2 {
				m.sendAll(o, tagPropose, append([]float64{u2f(px.ballot)}, px.proposal...))
			}
		}
	case tagAccepted:
		if px.phase != 2 || b != px.ballot {
			return
		}
		px.vote(now, msg.From)
		m.checkChosen(now)
	case tagNack:
		// A higher ballot is about: seen is raised above; the retry in
		// paxosTick bids again above it, after a pause.
	}
}

// vote counts a promise or an acceptance of the phase under way; a new
// voter is progress (see phaseAt).
func (px *paxos) vote(now time.Duration, from gossip.NodeID) {
	if px.add(from) {
		px.phaseAt, px.resentAt = now, now
	}
}

// add counts member j's vote, reporting whether it is new.
func (px *paxos) add(j gossip.NodeID) bool {
	if px.votes.has(int(j)) {
		return false
	}
	px.votes.set(int(j))
	px.nvotes++
	return true
}

// checkChosen commits the proposal once a majority accepted it.
func (m *Machine) checkChosen(now time.Duration) {
	o := m.cur
	px := &o.px
	if px.phase != 2 || px.nvotes < Quorum(m.r.n) {
		return
	}
	px.phase = 3
	value := px.proposal[1:]
	m.bsent = true
	if err := m.bnode.Broadcast(m.bnow(now), o.epoch, value); err != nil {
		m.log.Debug("result broadcast failed to start", "err", err)
	}
	m.deliver(now, slices.Clone(value), m.r.ID, fromSelf)
	m.collect(now)
}

// paxosTick resends a phase that has not completed after Suspect/8
// without a new vote and, after Suspect/2 without one, bids again with a
// higher ballot if it has seen one (a nack, or another proposer's
// messages). Without a higher ballot about, a bid again only orphans the
// replies still on their way: at round trips over Suspect/2 (16 simulated
// members, messages up to 6.3 s on their way) the root bid every Suspect/2
// and never counted a promise for the ballot it held, until the deadline.
// The resends ask again for what was lost.
func (m *Machine) paxosTick(now time.Duration) {
	o := m.cur
	px := &o.px
	if px.phase != 1 && px.phase != 2 {
		return
	}
	if now-px.phaseAt > m.r.Suspect/2 && px.seen > px.ballot {
		own := px.proposal[1:]
		m.propose(now, own)
		return
	}
	if now-px.resentAt > m.r.Suspect/8 {
		px.resentAt = now
		if px.phase == 1 {
			m.sendAll(o, tagPrepare, []float64{u2f(px.ballot)})
		} else {
			m.sendAll(o, tagPropose, append([]float64{u2f(px.ballot)}, px.proposal...))
		}
	}
}

// wellFormed reports whether a proposal (root, then a result payload) has
// this operation's shape.
func (m *Machine) wellFormed(o *op, prop []float64) bool {
	if len(prop) < 1 {
		return false
	}
	r := prop[0]
	if !(r >= 0 && r < float64(m.r.n)) || r != math.Trunc(r) {
		return false
	}
	_, _, live, _, ok := parseResult(prop[1:], len(o.req.Values), len(o.ext), m.r.n)
	return ok && live >= Quorum(m.r.n)
}

// plausiblePayload checks a result payload against this member's state.
func (m *Machine) plausiblePayload(o *op, payload []float64) bool {
	values, ext, _, dead, ok := parseResult(payload, len(o.req.Values), len(o.ext), m.r.n)
	if !ok || dead.has(int(m.r.ID)) {
		// A value that leaves this member out is no reason to accept; it
		// learns of its exclusion from the result itself.
		return ok
	}
	return m.confirmsAbsent(o, dead) && m.plausible(o, values, ext)
}
