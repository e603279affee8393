package member

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// Falling back from a finite algorithm to gossip.
//
// Dimension exchange (package exchange) is recursive doubling made to
// survive lost and corrupted messages, and members that die after their
// input has left them; it cannot survive an input that never left its
// member. Its spec names a fallback (algo.Spec.Fallback, PFCC), and an
// operation whose exchange cannot finish is handed to it: the member
// builds the fallback's machine from its input, starts the convergence
// certificate, and the operation ends as a gossip operation does, by the
// root's Paxos proposal and the result broadcast (commit.go).
//
// Two results for one operation must never both be returned: members that
// finished the exchange return its result R, and the fallback must then
// decide R too. So the exchange is made the lowest ballot of the Paxos
// round the fallback ends with:
//
//   - A member that finishes the exchange's first pass (or takes R from a
//     member that did) accepts R at ballot 0, unless it has promised a
//     ballot already: before its first promise (or acceptance above
//     ballot 0) a member refuses its exchange (exchange.Machine.Refuse;
//     see pledge), so an acceptance at ballot 0 never follows a promise.
//     A member that falls back runs the gossip and its exchange side by
//     side until then.
//   - In the second pass the hypercube's members (2^⌊log2 N⌋ of them, a
//     majority of the group) vouch, over the same schedule, for the hash of
//     R and for how many of them accepted it. A member whose count reaches
//     a majority knows that R is chosen, and returns it with no certificate
//     and no broadcast: that is the fault-free path, 2·⌊log2 N⌋ messages.
//   - A member falls back when the exchange makes no step for Suspect, or
//     longer once its steps have been slow (see stepLimit: an input was
//     lost, or too few are left to vouch), when the exchange
//     finds that members hold different results, or when a fallback
//     message or a Paxos message of the operation arrives. Its promises
//     report R at ballot 0 if it accepted R, and since member 0 has no fast
//     ballot in a fallback, every proposer prepares first: if R was chosen,
//     its majority of promises meets the hypercube's vouching majority and
//     it proposes R.
//
//   - A member votes only for a proposal its own estimate confirms (see
//     plausiblePayload), and one that fell back before its first pass
//     ended cannot confirm R when R covers the input of a member that died
//     after contributing. Such a member asks for R as it waits, and votes
//     for R when a member that accepted R sent it (offeredR).
//
//   - The lowest live member of the hypercube (see exchangeProposer),
//     when its second pass ended short of a majority of vouches (they
//     came too late and were skipped) and it accepted R, proposes R at
//     once rather than wait for the gossip's certificate: on a network
//     whose round trips are seconds every member may hold R and none can
//     count the vouches (see checkDone).
//
// So a fallback ends with R whenever any member may have returned R, and
// with the fallback's own estimate (the aggregate of the members its
// certificate counts live) only when none can have. A member that falls
// back still answers the exchange messages of members that have not, from
// what it stored, and returns R if its own second pass ends after all.

// twoPass is implemented by finite machines that can hand an operation to
// a fallback (see exchange.Machine).
type twoPass interface {
	gossip.Machine
	gossip.Finisher
	// Accepted reports whether the first pass ended here with the result.
	Accepted() bool
	// Refuse stops the machine from ever accepting a result.
	Refuse()
	// Mismatch reports whether members were found to hold different
	// results.
	Mismatch() bool
	// Short reports whether the second pass ended here with too few
	// vouches to know the result chosen.
	Short() bool
	// Vouches reports whether member j takes part in the second pass
	// (and so can accept the result).
	Vouches(j gossip.NodeID) bool
	// Progress changes whenever the machine makes a step.
	Progress() int
	// Choose says that the result the first pass ended with is chosen:
	// the fallback decided it, or a member that returned it said so as it
	// left (see chosenElsewhere).
	Choose()
	// ResultHash returns the hash of the result the first pass ended
	// with (ok false if it did not end here).
	ResultHash() (uint64, bool)
	// Offered returns the values and extremes of a result that a member
	// which accepted it sent to this one after Refuse (ok false if none).
	Offered(est, ext []float64) ([]float64, []float64, bool)
	// Awaiting returns the member whose message of the step under way the
	// machine waits for (ok false if it waits for no step).
	Awaiting() (gossip.NodeID, bool)
}

// extremesOf returns the maxima a finite machine reduced (nil if it takes
// no extremes): they are part of its result.
func extremesOf(fm gossip.Machine) []float64 {
	if e, ok := fm.(interface{ Extremes([]float64) []float64 }); ok {
		return e.Extremes(nil)
	}
	return nil
}

// finite returns operation o's finite machine, whose Done ends the
// operation without the commit: the exchange, even after a fallback (its
// result is chosen then, see above), or a finite algorithm's machine; nil
// for a gossip algorithm.
func (o *op) finite() gossip.Machine {
	switch {
	case o.x != nil:
		return o.x
	case o.cert == nil && o.m != nil:
		return o.m
	}
	return nil
}

// gossipConfig is the configuration of this member's algorithm machine for
// operation req with epoch.
func (m *Machine) gossipConfig(req Op, epoch uint64) gossip.Config {
	r := m.r
	return gossip.Config{
		ID: r.ID, Overlay: r.Graph, Value: req.Values, Extremes: req.Extremes, Mode: gossip.Average, Epoch: epoch,
		Rand: rand.NewPCG(r.Seed^epoch*0x9e3779b97f4a7c15, uint64(r.ID)), Tau: r.Tau,
		// A push unacknowledged for about four rounds of the neighbour's
		// sends is most likely lost: send the flow again, so that its mass,
		// which holds up settled, arrives.
		Resend: 4*r.Graph.Degree(r.ID) + 8,
		// A push lost is pushed on for by its receiver once a later
		// message shows it lost, so that loss does not empty the group
		// of the pushes that carry its gossip (see gossip.Config).
		Revive: true,
	}
}

// certify starts operation o's convergence certificate and failure
// detection: every neighbour is heard from now on, and members known to be
// away are not waited for.
func (m *Machine) certify(now time.Duration, o *op) {
	r := m.r
	o.cert = newCertificate(r.n, int(r.ID), r.need, r.theta)
	for k := range o.nbr {
		o.nbr[k].heard, o.nbr[k].watch = now, true
	}
	o.lastHeard = now
	for _, j := range m.absent.members(r.n) {
		if j != r.ID {
			o.cert.markDead(int(j))
			m.excluded(j)
		}
	}
	o.startDead = o.cert.nDead
}

// stepExchange hands an exchange message to operation o's exchange
// machine, whether or not the member has fallen back.
func (m *Machine) stepExchange(now time.Duration, o *op, msg gossip.Message) {
	out, err := o.x.Step(msg, m.scratch[:0])
	if err != nil {
		if errors.Is(err, gossip.ErrLength) {
			m.mismatch(now, fmt.Errorf("%w: %s sent a message that does not fit this member's %d components: %w", ErrGroupMismatch, m.sender(msg.From), len(o.req.Values), err))
			return
		}
		m.reject("machine", msg, err)
	}
	if o.inj != nil && o.cert == nil {
		o.inj.InjectState(m.point(now, o), o.x)
	}
	m.emitFor(now, o, out, false)
	m.noteExchange(now, o)
	m.checkDone(now)
}

// noteExchange takes what the exchange machine did: progress, an
// acceptance at ballot 0, a disagreement (which makes the member fall
// back).
func (m *Machine) noteExchange(now time.Duration, o *op) {
	if p := o.x.Progress(); p != o.progress {
		gap := now - o.progressAt
		m.slowStep = max(m.slowStep, gap) // see stepLimit
		if o.progress > 0 {
			o.notePace(gap)
		}
		o.progress, o.progressAt = p, now
	}
	m.noteAccepted(o)
	if o.x.Mismatch() && o.cert == nil && !o.done {
		m.fallback(now, o, "members hold different results")
	}
}

// notePace adds the wait for a step of operation o's exchange to its
// pace: the lower quartile of those waits (see opIdle).
func (o *op) notePace(gap time.Duration) {
	i, _ := slices.BinarySearch(o.xGaps, gap)
	o.xGaps = slices.Insert(o.xGaps, i, gap)
	o.xPace = o.xGaps[(len(o.xGaps)-1)/4]
}

// pledge is called before operation o's member promises a ballot or
// accepts a proposal above ballot 0: its exchange, if it has one, must
// never accept at ballot 0 after that, so it is refused here, and an
// acceptance it made before is recorded, so that the promise reports it.
//
// A member refuses its exchange here, and not when it falls back. A
// member that falls back runs the fallback's gossip and its exchange side
// by side, and may still end the exchange's first pass and accept R at
// ballot 0 until a proposer prepares, which it does only once the gossip's
// certificate is complete. On a network slow rather than broken the
// exchange ends first: 16 simulated members, messages 300 ms on their way
// with up to 3 or 4 s more at random, all fell back 4 to 7 s in, and PFCC,
// which needs about a hundred of those delays to converge, ended none of
// them in 30 s (trace slow_network.txt); the loaded rounds of ten groups
// of 16 processes collapsed so (docs/live.md). Refused at its fallback,
// the exchange of a member whose first pass had not ended stopped there.
func (m *Machine) pledge(o *op) {
	if o.x == nil {
		return
	}
	m.noteAccepted(o)
	o.x.Refuse()
}

// noteAccepted records, as its acceptance at ballot 0, the result the
// exchange's first pass ended with here, if it did.
func (m *Machine) noteAccepted(o *op) {
	if o.x.Accepted() && !o.px.hasAcc && o.px.promised == 0 {
		m.est = o.x.Estimate(m.est[:0])
		o.xResult = resultPayload(m.est, extremesOf(o.x), m.r.n, newBitset(m.r.n))
		o.px.accepted = append([]float64{0}, o.xResult...)
		o.px.accB, o.px.hasAcc = 0, true
	}
}

// stepLimit is how long operation o's exchange may make no step before
// this member falls back: Suspect, or four times that before its first
// step in this member's first operation (the group may still be starting,
// as limit allows a neighbour never heard from); and at least twice the
// longest wait for a step that came (slowStep), up to MaxSilence times
// Suspect. An exchange that falls back because its partners are slow, not
// gone, hands the operation to gossip, which sends a hundred times the
// messages into the same slow broker: ten groups of 16 member processes
// beside six busy loops then sent about 2,800 messages a member in 30 s
// and did not converge, where the exchange alone sends 10 to 100.
//
// The starting allowance holds for any step whose partner this member has
// never heard from in its first operation, not only the first step: a
// group's members start at different moments (processes launched one
// after another on a busy machine), and half of a group that had finished
// its steps among itself waited for the other half, not yet running, and
// fell back after Suspect, every member of the group with it (ten groups
// of 16 processes beside six busy loops: a whole group fell back 1.7 to
// 2.0 s into the operation, the late half by contagion, when the first
// of them fell back). A member that waits for a partner it has heard,
// which waits for one not started, is covered by fallbackAt.
func (m *Machine) stepLimit(o *op) time.Duration {
	d := m.r.Suspect
	if m.ops == 1 && (o.progress == 0 || !m.heardPartner(o)) {
		d = 4 * m.r.Suspect
	}
	return max(d, min(2*m.slowStep, MaxSilence*m.r.Suspect))
}

// fallbackAt is when operation o's exchange falls back if it makes no
// step before: stepLimit after its last step, and in this member's first
// operation not before four times Suspect after it began, however many
// steps it has made. A member waiting for a partner it has heard from
// may be waiting on that partner's own partner, which has not started:
// with member 5 of 16 processes stopped for 2 s at its launch, the
// members two steps from it fell back after 1 s, and the group with
// them, although the direct partners of 5 still waited (trace
// late_start.txt). The price is paid in a first operation in which a
// member crashes early: the group falls back only four times Suspect in
// (fallback_votes.txt: 4 s instead of 2.5 s).
func (m *Machine) fallbackAt(o *op) time.Duration {
	at := o.progressAt + m.stepLimit(o)
	if m.ops == 1 {
		at = max(at, o.start+4*m.r.Suspect)
	}
	return at
}

// heardPartner reports whether this member has heard, in operation o, from
// the member its exchange waits for (true when it waits for none, or for a
// member that is not its neighbour: it has nothing to go by).
func (m *Machine) heardPartner(o *op) bool {
	j, ok := o.x.Awaiting()
	if !ok {
		return true
	}
	k, ok := m.nbrIndex(j)
	return !ok || k >= len(o.nbr) || o.nbr[k].ever
}

// offeredR reports whether proposal prop (root, result payload) is the
// exchange's result R as a member that accepted R sent it to this one,
// which had fallen back before its own first pass ended.
//
// Such a member must be able to vote for R. A proposer that hears of R in
// a promise proposes R, since R may have been chosen at ballot 0; a member
// whose own estimate leaves out an input that R covers (of a member that
// died after contributing) does not confirm R, and where those members
// were needed for a majority the proposal was refused round after round
// until the deadline: 13 simulated members, 3 crashed within the first
// 100 µs, 6 of 10 left with R accepted and 4 fallen back without it
// (TestFallbackVotesForTheExchangesResult, testdata/fallback_votes.txt). Taking R from the exchange
// trusts no more than the exchange itself does: a member takes a result
// marked chosen from any one member, and returns it.
func (m *Machine) offeredR(o *op, prop []float64) bool {
	if o.x == nil || len(prop) < 1 {
		return false
	}
	est, ext, ok := o.x.Offered(nil, nil)
	return ok && gossip.SameBits(resultPayload(est, ext, m.r.n, newBitset(m.r.n)), prop[1:])
}

// fallback hands operation o from its exchange to the fallback algorithm,
// started from this member's input, with the certificate.
func (m *Machine) fallback(now time.Duration, o *op, why string) {
	if o.cert != nil || o.done {
		return
	}
	// The exchange goes on: it is refused only before this member's first
	// promise (see pledge). (Not noteExchange: on a mismatch it falls
	// back, and this call recursed until the stack overflowed, seen when
	// a member restarted under its id with another input.)
	m.noteAccepted(o)
	gm, err := m.r.fallback.New(m.gossipConfig(o.req, o.epoch))
	if err != nil {
		m.finish(now, Result{}, fmt.Errorf("member: fallback to %s: %w", m.r.fallback.Name, err))
		return
	}
	m.stats.Fallbacks++
	m.log.Debug("falling back", "to", m.r.fallback.Name, "why", why, "at", now)
	o.m = gm
	o.lastSend = now
	m.certify(now, o)
	if o.inj != nil {
		o.inj.InjectState(m.point(now, o), gm)
	}
	m.emit(now, gm.Tick(m.scratch[:0]))
}
