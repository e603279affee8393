package transport

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// Bounds of the session layer (see the package documentation, "Sessions").
const (
	// ReplayWindow is the width, in sequence numbers, of the anti-replay
	// window an endpoint keeps for each peer: it accepts each sequence
	// number once, and only if it is less than ReplayWindow below the
	// highest one accepted from that peer's incarnation.
	ReplayWindow = 128

	// SessionQueue is how many application messages an endpoint keeps for
	// one peer whose incarnation it has not learned yet. When the queue is
	// full, the oldest message is dropped and counted in Stats.Unsent.
	SessionQueue = 64
)

const (
	// defaultProbeEvery is the shortest interval between two probes to the
	// same peer: Send to a peer still unknown probes again only after it.
	defaultProbeEvery = 20 * time.Millisecond

	// defaultAnswerEvery is the shortest interval between two probe answers
	// to the same peer, so that a flood of (replayed) probes or stale
	// messages cannot make an endpoint send a flood. Answers to the
	// incarnation learned for the peer and answers to any other are limited
	// separately, so that replays of a peer's old probes cannot use up the
	// answers its current incarnation needs.
	defaultAnswerEvery = 10 * time.Millisecond

	// maxRetired is how many earlier incarnations of a peer an endpoint
	// remembers, to drop their messages once the peer has restarted.
	maxRetired = 16

	// maxPeers bounds the peers an endpoint keeps state for because of
	// messages that arrived (sending to a node always creates its state).
	// With a group key only members can make an endpoint learn a peer;
	// without one, this keeps a forger inventing node ids from growing the
	// table without bound.
	maxPeers = 1 << 16
)

// Bounds of the claims (see the package documentation, "Claims").
const (
	// claimWaitMin and claimWaitMax bound how long NATS Open waits for an
	// answer to its claim after the flush that follows it: twice the
	// flush's round trip, but at least claimWaitMin and at most
	// claimWaitMax.
	claimWaitMin = 5 * time.Millisecond
	claimWaitMax = 100 * time.Millisecond

	// claimBurst is how many claims an endpoint answers per answer
	// interval (defaultAnswerEvery), so that a flood of (replayed) claims
	// cannot make it send a flood.
	claimBurst = 4
)

// sessionTiming overrides the session intervals; only tests set it
// (Options.timing, see export_test.go).
type sessionTiming struct {
	probeEvery, answerEvery time.Duration
	claimWait               time.Duration // 0: the default
}

// newIncarnation draws a random non-zero incarnation from crypto/rand.
func newIncarnation() uint64 {
	var b [8]byte
	for {
		_, _ = rand.Read(b[:]) // never fails: it crashes the program first
		if v := binary.LittleEndian.Uint64(b[:]); v != 0 {
			return v
		}
	}
}

// window is the anti-replay window of one sender incarnation (RFC 4303,
// section 3.4.3; RFC 9147, section 4.5.1): the highest sequence number
// accepted, and which of the ReplayWindow numbers up to it were accepted.
// Its zero value has accepted nothing.
type window struct {
	top  uint64
	seen [ReplayWindow / 64]uint64 // bit d (word d/64, bit d%64): top-d was accepted
}

// accept reports whether seq is fresh (never accepted, not below the
// window, not 0) and records it if so.
func (w *window) accept(seq uint64) bool {
	if seq == 0 {
		return false
	}
	if seq > w.top {
		w.shift(seq - w.top)
		w.top = seq
		w.seen[0] |= 1
		return true
	}
	d := w.top - seq
	if d >= ReplayWindow {
		return false
	}
	word, bit := d/64, uint64(1)<<(d%64)
	if w.seen[word]&bit != 0 {
		return false
	}
	w.seen[word] |= bit
	return true
}

// shift moves the window up by d > 0 sequence numbers.
func (w *window) shift(d uint64) {
	if d >= ReplayWindow {
		w.seen = [len(w.seen)]uint64{}
		return
	}
	words, bits := int(d/64), d%64
	for i := len(w.seen) - 1; i >= 0; i-- {
		var v uint64
		if j := i - words; j >= 0 {
			v = w.seen[j] << bits
			if bits > 0 && j > 0 {
				v |= w.seen[j-1] >> (64 - bits)
			}
		}
		w.seen[i] = v
	}
}

// peer is what an endpoint knows of one other node of its group. The
// endpoint's smu guards it.
type peer struct {
	inc           uint64             // the peer's incarnation; 0 until learned
	retired       [maxRetired]uint64 // incarnations the peer had before inc (a ring)
	next          int                // where retired is written next
	win           window             // sequence numbers accepted from incarnation inc
	seq           uint64             // last sequence number sent to the peer
	queue         []gossip.Message   // application messages waiting for inc
	flushing      bool               // a goroutine is sending the queue
	probed        time.Time          // when the last probe was sent
	answered      time.Time          // when the last answer to incarnation inc was sent
	answeredOther time.Time          // when the last answer to another incarnation was sent
	retryAt       time.Time          // when the endpoint's retry timer probes again, while messages wait for inc; zero: not armed
	retries       int                // probes sent by retry since the last Send
}

func (p *peer) nextSeq() uint64 {
	p.seq++
	return p.seq
}

// isRetired reports whether inc, which is not 0 (the ring's empty slots),
// is an earlier incarnation of the peer.
func (p *peer) isRetired(inc uint64) bool {
	return slices.Contains(p.retired[:], inc)
}

// learn makes inc the peer's incarnation, retiring the one it replaces,
// with a fresh window.
func (p *peer) learn(inc uint64) {
	if p.inc != 0 {
		p.retired[p.next] = p.inc
		p.next = (p.next + 1) % maxRetired
	}
	p.inc = inc
	p.win = window{}
}

// peerLocked returns the state of node id, creating it. State created for
// an arriving message is bounded by maxPeers; at the bound, peerLocked
// returns nil for a node without state unless forSend is set. The caller
// holds smu.
func (e *endpoint) peerLocked(id gossip.NodeID, forSend bool) *peer {
	if p := e.peers[id]; p != nil {
		return p
	}
	if !forSend && len(e.peers) >= maxPeers {
		return nil
	}
	p := &peer{}
	e.peers[id] = p
	return p
}

// sessionSend applies the send rules to m, which passed Send's checks and
// was (lost) or was not dropped by injected loss: to a peer whose
// incarnation is known, m is published at once; to one still unknown, it
// is queued and the peer probed (at most once per probe interval). A lost
// message is never queued, but still probes. Errors are wrapped for Send.
func (e *endpoint) sessionSend(m gossip.Message, lost bool) error {
	var direct, probe bool
	var inc, seq, probeSeq uint64
	e.smu.Lock()
	if e.sclosed {
		e.smu.Unlock()
		return fmt.Errorf("transport: send from %s: %w", e.subject, ErrClosed)
	}
	if err := e.self.err; err != nil {
		e.smu.Unlock()
		return err
	}
	p := e.peerLocked(m.To, true)
	switch {
	case p.inc != 0 && !p.flushing:
		if !lost {
			direct, inc, seq = true, p.inc, p.nextSeq()
		}
	case p.inc != 0:
		// The queue is being sent: queue behind it, to keep the order.
		if !lost {
			e.enqueueLocked(p, m)
		}
	default:
		if !lost {
			e.enqueueLocked(p, m)
		}
		if now := time.Now(); now.Sub(p.probed) >= e.hub.probeEvery {
			p.probed = now
			probe, probeSeq = true, p.nextSeq()
		}
		p.retries = 0
		e.armRetryLocked(m.To, p)
	}
	e.smu.Unlock()

	if lost {
		e.count(cLost)
	}
	if probe {
		if err := e.handshake(m.To, 0, probeSeq, cProbes); err != nil {
			return fmt.Errorf("transport: probe %s%d: %w", e.base, m.To, err)
		}
	}
	if direct {
		if err := e.publishApp(m, inc, seq); err != nil {
			return fmt.Errorf("transport: send to %s%d: %w", e.base, m.To, err)
		}
	}
	return nil
}

// maxRetries bounds the probes the retry timer sends for one peer after
// the last Send to it, and maxRetryDelay the wait between two: the timer
// waits the probe interval, then twice as long each time up to
// maxRetryDelay, so that with the default interval a queue waits about
// five seconds for a peer that does not answer before only a new Send
// probes again. Backing off matters when many members start at once: each
// announces itself to the whole group, and probing every peer that has not
// subscribed yet every 20 ms (250 times) kept 256 members joining in one
// process busy for over 30 s on a loaded machine.
const (
	maxRetries    = 10
	maxRetryDelay = time.Second
)

// armRetryLocked makes sure a probe goes out again after the probe
// interval (doubled by each retry since the last Send, see maxRetries)
// while messages wait for peer to's incarnation, so that a lost or
// rate-limited answer cannot hold a message back until the next Send (a
// member's last announcement has no next Send). The caller holds smu.
//
// One timer per endpoint serves every peer (see retries): a member that
// announces itself to a group of 10,000 whose members are still opening
// must not start a goroutine per peer whenever the probes fall due.
func (e *endpoint) armRetryLocked(to gossip.NodeID, p *peer) {
	if !p.retryAt.IsZero() || len(p.queue) == 0 {
		return
	}
	d := max(e.hub.probeEvery, defaultProbeEvery) << min(p.retries, 10)
	p.retryAt = time.Now().Add(min(d, maxRetryDelay))
	e.retries.push(p.retryAt, to)
	e.scheduleRetriesLocked()
}

// scheduleRetriesLocked sets the endpoint's retry timer for the earliest
// probe due. The caller holds smu.
func (e *endpoint) scheduleRetriesLocked() {
	at, ok := e.retries.first()
	if !ok || e.sclosed {
		return
	}
	if e.retryTimer == nil {
		e.retryTimer = time.AfterFunc(time.Until(at), e.retryDue)
		e.retryArmed = at
		return
	}
	if e.retryArmed.IsZero() || at.Before(e.retryArmed) {
		// A timer that has just fired runs retryDue once more: harmless,
		// it finds nothing due, or what is due.
		e.retryTimer.Reset(time.Until(at))
		e.retryArmed = at
	}
}

// retryDue probes every peer whose retry has fallen due, from the
// endpoint's one timer, and sets it for the next.
func (e *endpoint) retryDue() {
	type probe struct {
		to  gossip.NodeID
		seq uint64
	}
	var probes []probe
	e.smu.Lock()
	e.retryArmed = time.Time{}
	now := time.Now()
	for {
		at, ok := e.retries.first()
		if !ok || at.After(now) {
			break
		}
		to := e.retries.pop()
		p := e.peers[to]
		if p == nil || !p.retryAt.Equal(at) {
			continue // superseded: the peer was re-armed or dropped
		}
		p.retryAt = time.Time{}
		if e.sclosed || p.inc != 0 || len(p.queue) == 0 || p.retries >= maxRetries {
			continue
		}
		p.retries++
		p.probed = now
		probes = append(probes, probe{to, p.nextSeq()})
		if p.retries < maxRetries {
			e.armRetryLocked(to, p)
		}
	}
	e.scheduleRetriesLocked()
	e.smu.Unlock()
	for _, pr := range probes {
		if err := e.handshake(pr.to, 0, pr.seq, cProbes); err != nil {
			e.hub.opts.Logger.Debug("transport: probe not sent", "subject", e.subject, "to", pr.to, "err", err)
		}
	}
}

// retryQueue orders the peers' pending retries by when they fall due (a
// min-heap; entries a peer has since replaced stay until they surface,
// and are skipped then).
type retryQueue []retryEntry

type retryEntry struct {
	at time.Time
	to gossip.NodeID
}

func (q *retryQueue) first() (time.Time, bool) {
	if len(*q) == 0 {
		return time.Time{}, false
	}
	return (*q)[0].at, true
}

func (q *retryQueue) push(at time.Time, to gossip.NodeID) {
	*q = append(*q, retryEntry{at, to})
	h := *q
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h[i].at.Before(h[parent].at) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func (q *retryQueue) pop() gossip.NodeID {
	h := *q
	to := h[0].to
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, r, least := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].at.Before(h[least].at) {
			least = l
		}
		if r < len(h) && h[r].at.Before(h[least].at) {
			least = r
		}
		if least == i {
			break
		}
		h[i], h[least] = h[least], h[i]
		i = least
	}
	*q = h
	return to
}

// enqueueLocked queues a copy of m for p, dropping the oldest message when
// the queue is full. The caller holds smu.
func (e *endpoint) enqueueLocked(p *peer, m gossip.Message) {
	if len(p.queue) == SessionQueue {
		p.queue[0] = gossip.Message{}
		p.queue = p.queue[1:]
		e.count(cUnsent)
	}
	p.queue = append(p.queue, m.Clone())
}

// publishApp publishes application message m bound to receiver
// incarnation inc with sequence number seq, and counts it in Sent.
func (e *endpoint) publishApp(m gossip.Message, inc, seq uint64) error {
	h := Header{ConfigHash: e.group.ConfigHash, Incarnation: e.inc, PeerIncarnation: inc, Seq: seq}
	return e.publishCounted(h, m, cSent)
}

// handshake publishes a probe (inc 0) or a probe answer (inc, the
// prober's incarnation) to node to, and counts it in counter c.
func (e *endpoint) handshake(to gossip.NodeID, inc, seq uint64, c int) error {
	h := Header{ConfigHash: e.group.ConfigHash, Incarnation: e.inc, PeerIncarnation: inc, Seq: seq, Handshake: true}
	return e.publishCounted(h, gossip.Message{From: e.id, To: to}, c)
}

// publishCounted publishes h and m and counts them in counter c. It counts
// first, so that whoever sees the message arrive also sees it counted
// (the receiver may run on another goroutine), and takes the count back if
// the network refuses the message.
func (e *endpoint) publishCounted(h Header, m gossip.Message, c int) error {
	e.count(c)
	if err := e.publish(h, m); err != nil {
		e.countN(c, ^uint64(0)) // -1
		return err
	}
	return nil
}

// receive applies the receive rules to a decoded message of the group
// addressed to this node, and reports whether to deliver it: only fresh
// application messages are delivered. Everything else was handled here
// (answered, learned from, or dropped and counted).
func (e *endpoint) receive(h Header, from gossip.NodeID) bool {
	switch {
	case h.Incarnation == 0:
		e.drop(cForeign, "sender incarnation 0: not written by an endpoint")
		return false
	case from == e.id && (h.Seq == 0 || h.Incarnation != e.inc):
		// A claim, a reply to one, or anything else from another
		// incarnation of this node. (Sequence numbers from 1 and this
		// incarnation: the session of a node sending to itself.)
		e.receiveClaim(h)
		return false
	case h.Handshake && h.PeerIncarnation == 0:
		// A probe may be a replay: answer it, learn nothing from it.
		e.answer(from, h.Incarnation)
		return false
	case h.PeerIncarnation != e.inc:
		e.drop(cReplayed, "bound to incarnation "+strconv.FormatUint(h.PeerIncarnation, 16)+" of this node, not "+strconv.FormatUint(e.inc, 16))
		// A genuine sender that still holds an earlier incarnation of this
		// endpoint resynchronises from the answer.
		e.answer(from, h.Incarnation)
		return false
	}

	e.smu.Lock()
	if e.sclosed {
		e.smu.Unlock()
		return false
	}
	p := e.peerLocked(from, false)
	if p == nil {
		e.smu.Unlock()
		e.drop(cForeign, "too many peers: no state for node "+from.String())
		return false
	}
	learned := false
	if h.Incarnation != p.inc {
		if h.Seq == 0 || p.isRetired(h.Incarnation) {
			e.smu.Unlock()
			e.drop(cReplayed, "from an earlier incarnation of node "+from.String())
			return false
		}
		p.learn(h.Incarnation) // the first contact, or the peer restarted
		learned = true
	}
	if !p.win.accept(h.Seq) {
		e.smu.Unlock()
		e.drop(cReplayed, "sequence number "+strconv.FormatUint(h.Seq, 10)+" from node "+from.String()+" already seen or below the window")
		return false
	}
	flush := len(p.queue) > 0 && !p.flushing
	if flush {
		p.flushing = true
	}
	e.smu.Unlock()

	if learned {
		// Counted before the queue is sent: whoever receives a message that
		// waited for the session also sees the session counted.
		e.count(cSessions)
	}
	if flush {
		e.flush(from)
	}
	return !h.Handshake
}

// answer sends a probe answer to incarnation inc of node to, unless one
// went to that node less than the answer interval ago: to the same
// incarnation if inc is the one learned for the node, else to any other.
func (e *endpoint) answer(to gossip.NodeID, inc uint64) {
	now := time.Now()
	e.smu.Lock()
	p := e.peerLocked(to, false)
	if e.sclosed || e.self.err != nil || p == nil {
		e.smu.Unlock()
		return
	}
	last := &p.answeredOther
	if inc == p.inc {
		last = &p.answered
	}
	if now.Sub(*last) < e.hub.answerEvery {
		e.smu.Unlock()
		return
	}
	*last = now
	seq := p.nextSeq()
	e.smu.Unlock()
	if err := e.handshake(to, inc, seq, cAnswers); err != nil {
		e.hub.opts.Logger.Debug("transport: probe answer not sent", "subject", e.subject, "to", to, "err", err)
	}
}

// flush sends the messages queued for node to, in order, until the queue
// is empty; messages queued meanwhile are sent too. Only the goroutine that
// set the peer's flushing flag calls it.
func (e *endpoint) flush(to gossip.NodeID) {
	for {
		e.smu.Lock()
		p := e.peers[to]
		if e.sclosed || e.self.err != nil || len(p.queue) == 0 {
			p.flushing = false
			e.smu.Unlock()
			return
		}
		batch, inc := p.queue, p.inc
		p.queue = nil
		first := p.seq + 1
		p.seq += uint64(len(batch))
		e.smu.Unlock()
		for i, m := range batch {
			if err := e.publishApp(m, inc, first+uint64(i)); err != nil {
				e.count(cUnsent)
				e.hub.opts.Logger.Debug("transport: queued message not sent", "subject", e.subject, "to", to, "err", err)
			}
		}
	}
}

// closeSessions discards the queues, counting their messages in Unsent,
// and stops the session layer.
func (e *endpoint) closeSessions() {
	e.smu.Lock()
	defer e.smu.Unlock()
	e.sclosed = true
	e.discardQueuesLocked()
}

// discardQueuesLocked discards the messages queued for every peer,
// counting them in Unsent, and stops the retry timer. The caller holds
// smu.
func (e *endpoint) discardQueuesLocked() {
	for _, p := range e.peers {
		e.countN(cUnsent, uint64(len(p.queue)))
		p.queue = nil
		p.retryAt = time.Time{}
	}
	e.retries = nil
	if e.retryTimer != nil {
		e.retryTimer.Stop()
		e.retryArmed = time.Time{}
	}
}

// incSet remembers the last maxRetired incarnations added to it.
type incSet struct {
	ring [maxRetired]uint64
	next int
}

func (s *incSet) has(inc uint64) bool { return slices.Contains(s.ring[:], inc) }

func (s *incSet) add(inc uint64) {
	s.ring[s.next] = inc
	s.next = (s.next + 1) % len(s.ring)
}

// identity is what an endpoint knows of other endpoints of its own node
// (see the package documentation, "Claims"). The endpoint's smu guards it.
type identity struct {
	err     error     // set when another endpoint was found holding the node; then never cleared
	found   incSet    // the other incarnations found (counted in Stats.Duplicates)
	told    incSet    // other incarnations a reply bound to them was sent to: a claim's answer or a confirmation
	window  time.Time // when the current claim answer interval began
	answers int       // claims answered in it
}

// claimHeader is the header of a claim (bound to 0) or of a reply bound to
// incarnation inc of this endpoint's node: a handshake from the node to
// itself with sequence number 0.
func (e *endpoint) claimHeader(inc uint64) Header {
	return Header{ConfigHash: e.group.ConfigHash, Incarnation: e.inc, PeerIncarnation: inc, Handshake: true}
}

// claim publishes this endpoint's claim of its node: "I am incarnation X
// of this node; does anybody else hold it?"
func (e *endpoint) claim() error {
	return e.publishCounted(e.claimHeader(0), gossip.Message{From: e.id, To: e.id}, cClaims)
}

// replyClaim publishes a claim message bound to incarnation inc of this
// endpoint's node: the answer to its claim, or the confirmation of its
// answer.
func (e *endpoint) replyClaim(inc uint64) {
	if err := e.publishCounted(e.claimHeader(inc), gossip.Message{From: e.id, To: e.id}, cClaims); err != nil {
		e.hub.opts.Logger.Debug("transport: claim reply not sent", "subject", e.subject, "err", err)
	}
}

// receiveClaim handles a message from this endpoint's own node that is a
// claim message (sequence number 0) or comes from another incarnation.
func (e *endpoint) receiveClaim(h Header) {
	switch {
	case !h.Handshake:
		e.drop(cReplayed, "an application message to this node from itself with sequence number 0, or from another incarnation")
	case h.Incarnation == e.inc:
		// This endpoint's own claim or reply, back from the network.
	case h.PeerIncarnation == 0:
		// A claim, which may be a replay: answer it, and believe nothing
		// until the claimer confirms.
		if e.mayAnswerClaim(h.Incarnation) {
			e.replyClaim(h.Incarnation)
		}
	case h.PeerIncarnation == e.inc:
		// Bound to this incarnation, which did not exist before this
		// endpoint was opened: an answer to its claim or a confirmation of
		// its answer, from an endpoint that holds the node now.
		if e.markDuplicate(h.Incarnation) {
			e.replyClaim(h.Incarnation) // the confirmation: the other refuses too
		}
	default:
		e.drop(cReplayed, "a claim message between other incarnations of this node")
	}
}

// mayAnswerClaim reports whether to answer a claim of incarnation inc
// (and records the answer): not if this endpoint is closed, has already
// replied to inc, or has answered claimBurst claims in the current answer
// interval.
func (e *endpoint) mayAnswerClaim(inc uint64) bool {
	now := time.Now()
	e.smu.Lock()
	defer e.smu.Unlock()
	if e.sclosed || e.self.told.has(inc) {
		return false
	}
	if now.Sub(e.self.window) >= e.hub.answerEvery {
		e.self.window, e.self.answers = now, 0
	}
	if e.self.answers >= claimBurst {
		return false
	}
	e.self.answers++
	e.self.told.add(inc)
	return true
}

// markDuplicate records that incarnation other of this endpoint's node
// holds it too: the first time, Err and Send report ErrDuplicateID from
// then on and the queues are discarded; each other incarnation is counted
// in Duplicates and logged once. It reports whether to confirm to other
// (that is, no reply bound to it was sent yet). A closed endpoint takes no
// part: it marks nothing and confirms nothing.
func (e *endpoint) markDuplicate(other uint64) (confirm bool) {
	e.smu.Lock()
	if e.sclosed {
		e.smu.Unlock()
		return false
	}
	if e.self.err == nil {
		e.self.err = fmt.Errorf("transport: %s: %w (this endpoint is incarnation %016x, the other %016x)", e.subject, ErrDuplicateID, e.inc, other)
		close(e.dup)
		e.discardQueuesLocked()
	}
	found := !e.self.found.has(other)
	if found {
		e.self.found.add(other)
	}
	confirm = !e.self.told.has(other)
	if confirm {
		e.self.told.add(other)
	}
	e.smu.Unlock()
	if found {
		e.count(cDuplicates)
		e.hub.opts.Logger.Error("transport: another endpoint holds this node id; this endpoint no longer sends",
			"subject", e.subject, "incarnation", fmt.Sprintf("%016x", e.inc), "other", fmt.Sprintf("%016x", other))
	}
	return confirm
}

// awaitClaim waits, for at most d, for an answer to this endpoint's claim
// from another endpoint of its node, and returns the error that reports it
// (wrapping ErrDuplicateID), ctx's error if it ends first, or nil.
func (e *endpoint) awaitClaim(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-e.dup:
		return e.Err()
	case <-ctx.Done():
		return fmt.Errorf("transport: open %s: %w", e.subject, ctx.Err())
	case <-tm.C:
	}
	select {
	case <-e.dup:
		return e.Err()
	default:
		return nil
	}
}

// claimWaitFor returns how long NATS Open waits for an answer to its claim
// after a flush that took rtt.
func (h *hub) claimWaitFor(rtt time.Duration) time.Duration {
	if h.claimWait > 0 {
		return h.claimWait
	}
	return min(max(2*rtt, claimWaitMin), claimWaitMax)
}
