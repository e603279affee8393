package view

import (
	"slices"
	"time"
)

// peer is what a member knows of another incarnation.
type peer struct {
	at      time.Duration // last heard
	genesis Genesis       // the group it is in or joins
	num     uint64        // its view (0: a joiner)
	size    int
	epoch   uint64
	left    bool
	install time.Duration // when it was last sent an Install
}

// Machine is one member's side of the membership protocol. It is not safe
// for concurrent use; a driver calls it from one goroutine.
type Machine struct {
	cfg     Config
	self    Entry
	started bool
	start   time.Duration
	now     time.Duration

	views   []*View // the installed views of this member's group, ascending; nil for a joiner
	epoch   uint64  // the last epoch begun
	founded uint64  // groups this member founded

	peers map[Entry]*peer

	// Acceptor state for the view after the current one.
	promised  Ballot
	accBallot Ballot
	accValue  *View
	accSince  time.Duration

	// Proposer state.
	round    uint64 // the highest round seen
	phase    int    // 0 idle, 1 preparing, 2 accepting
	ballot   Ballot
	phaseAt  time.Duration
	promises map[string]Msg
	value    *View

	// Learner state: acceptances of the view after the current one.
	acks map[Ballot]map[string]bool

	changeSince time.Duration
	changing    bool
	mergeSince  time.Duration
	merging     bool

	lastBeat time.Duration
	beaten   bool
	out      []Msg
	err      error
	stopped  bool
	leaving  bool
	leaveAt  time.Duration
}

// New returns a member that has not joined yet: it founds or joins a group
// as its ticks and messages come.
func New(cfg Config) (*Machine, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	return &Machine{cfg: cfg, self: Entry{cfg.Name, cfg.Inc}, peers: map[Entry]*peer{}}, nil
}

// Self returns this member.
func (m *Machine) Self() Entry { return m.self }

// Err returns the error that stopped the member (ErrDuplicateName), or nil.
func (m *Machine) Err() error { return m.err }

// Current returns the member's latest view, if it is in one.
func (m *Machine) Current() (View, bool) {
	if c := m.cur(); c != nil {
		return *c.clone(), true
	}
	return View{}, false
}

// Begin returns the view that epoch runs over (the installed view with the
// largest From ≤ epoch) and records that the member begins it. It reports
// false when the member is in no view, or when the epoch comes before the
// member's first view.
func (m *Machine) Begin(now time.Duration, epoch uint64) (View, bool) {
	m.clock(now)
	c := m.cur()
	if c == nil || m.stopped || m.leaving {
		return View{}, false
	}
	for i := len(m.views) - 1; i >= 0; i-- {
		if v := m.views[i]; v.From <= epoch {
			m.epoch = max(m.epoch, epoch)
			return *v.clone(), true
		}
	}
	return View{}, false
}

// Outbox returns the messages to broadcast and empties it.
func (m *Machine) Outbox() []Msg {
	out := m.out
	m.out = nil
	return out
}

// Leave says goodbye to the group. A member of a view goes on answering
// the view change that takes it out (its vote may be needed for the
// majority: a group of two whose members leave one after the other would
// otherwise be stuck) until that view is installed, LeaveVotes Suspect
// have passed, or every other member of its view has said it leaves too;
// Stopped then reports true. A joiner stops at once.
func (m *Machine) Leave(now time.Duration) {
	m.clock(now)
	if m.stopped || m.leaving {
		return
	}
	m.send(Msg{Kind: Leave, Genesis: m.genesis()})
	m.leaving, m.leaveAt = true, now
	if m.cur() == nil {
		m.stopped = true
	}
}

// LeaveVotes is how many Suspect periods a member that leaves goes on
// voting for the view that takes it out: long enough for the members
// killed at the same time to be found silent (Suspect) and the change to
// be decided (Settle and a Paxos round).
const LeaveVotes = 4

// Stopped reports whether the member has stopped: it left (see Leave), or
// failed (see Err).
func (m *Machine) Stopped() bool { return m.stopped }

func (m *Machine) cur() *View {
	if len(m.views) == 0 {
		return nil
	}
	return m.views[len(m.views)-1]
}

func (m *Machine) clock(now time.Duration) {
	if !m.started {
		m.started, m.start = true, now
	}
	m.now = max(m.now, now)
}

func (m *Machine) send(msg Msg) {
	msg.From = m.self
	m.out = append(m.out, msg)
}

// GroupSize returns how many members this member counts as its group: its
// view's size; for a joiner, the size of the group it wants to join (as
// that group's heartbeats say) or the joiners it hears, itself included,
// whichever is more.
func (m *Machine) GroupSize() int {
	if c := m.cur(); c != nil {
		return len(c.Members)
	}
	g, size, joiners := m.genesis(), 0, 1
	for _, p := range m.peers {
		switch {
		case p.num > 0 && p.genesis == g && m.alive(p):
			size = max(size, p.size)
		case p.num == 0 && m.fresh(p):
			joiners++
		}
	}
	return max(size, joiners)
}

// genesis is the group this member is in or wants to join.
func (m *Machine) genesis() Genesis {
	if c := m.cur(); c != nil {
		return c.Genesis
	}
	var best *peer
	for _, p := range m.peers {
		if p.num > 0 && m.alive(p) && (best == nil || prefer(p.genesis, p.size, best.genesis, best.size)) {
			best = p
		}
	}
	if best == nil {
		return Genesis{}
	}
	return best.genesis
}

// prefer reports whether group a (of size na) is preferred to group b:
// the larger, then the one with the lower founder.
func prefer(a Genesis, na int, b Genesis, nb int) bool {
	if na != nb {
		return na > nb
	}
	return compareGenesis(a, b) < 0
}

// counted reports whether member e of the current view is still one: heard
// within Suspect, still in this group (not gone to another by a merge), not
// left, and not replaced by a newer incarnation.
func (m *Machine) counted(e Entry) bool {
	p := m.peers[e]
	return p != nil && p.genesis == m.cur().Genesis && m.alive(p)
}

func (m *Machine) alive(p *peer) bool { return !p.left && m.now-p.at <= m.cfg.Suspect }

// votesNeeded reports whether a member that leaves view c may still have
// someone to vote for: another member of c that has not announced that it
// leaves too. A fleet stopped as a whole then goes at once instead of
// voting for LeaveVotes Suspect. (Members merely silent still count: the
// silence may be a partition that heals, and their majority may need this
// vote then.)
func (m *Machine) votesNeeded(c *View) bool {
	for _, e := range c.Members {
		if p := m.peers[e]; e != m.self && (p == nil || !p.left) {
			return true
		}
	}
	return false
}

// fresh reports whether p was heard within two heartbeats: joiners are
// taken in only then.
func (m *Machine) fresh(p *peer) bool { return !p.left && m.now-p.at <= 2*m.cfg.Heartbeat }

// Tick advances the member's clock: heartbeats, founding, merging and
// proposing views happen here.
func (m *Machine) Tick(now time.Duration) {
	m.clock(now)
	if m.stopped {
		return
	}
	if m.leaving {
		if c := m.cur(); c == nil || !m.votesNeeded(c) || now-m.leaveAt > LeaveVotes*m.cfg.Suspect {
			m.stopped = true
			return
		}
		m.lead()
		return
	}
	if !m.beaten || now-m.lastBeat >= m.cfg.Heartbeat {
		m.beaten, m.lastBeat = true, now
		m.beat()
	}
	m.prune()
	if m.cur() == nil {
		m.found()
		return
	}
	m.merge()
	if m.stopped || m.cur() == nil {
		return
	}
	m.lead()
}

// prune forgets incarnations not heard from for 4 Suspect that are not in
// the current view, so that restarts and departed joiners do not
// accumulate.
func (m *Machine) prune() {
	c := m.cur()
	for e, p := range m.peers {
		if m.now-p.at > 4*m.cfg.Suspect && (c == nil || c.Index(e) < 0) {
			delete(m.peers, e)
		}
	}
}

func (m *Machine) beat() {
	b := Msg{Kind: Beat, Genesis: m.genesis(), Epoch: m.epoch}
	if c := m.cur(); c != nil {
		b.Num, b.Size = c.Num, len(c.Members)
	}
	m.send(b)
}

// found makes this member the founder of a group when the package
// documentation's conditions hold.
func (m *Machine) found() {
	if m.now-m.start < m.cfg.Settle || !m.genesis().zero() {
		return
	}
	joiners := map[string]bool{m.self.Name: true}
	for e, p := range m.peers {
		if p.num == 0 && m.fresh(p) {
			if e.Name < m.self.Name {
				return
			}
			joiners[e.Name] = true
		}
	}
	if len(joiners) < m.cfg.MinMembers {
		return
	}
	m.install(&View{Num: 1, Genesis: Genesis{m.self, m.founded}, Members: []Entry{m.self}})
	m.founded++
	m.beat()
}

// merge leaves this member's group for a preferred one it has heard for
// Settle.
func (m *Machine) merge() {
	c := m.cur()
	other := false
	for _, p := range m.peers {
		if p.num > 0 && p.genesis != c.Genesis && m.alive(p) && prefer(p.genesis, p.size, c.Genesis, len(c.Members)) {
			other = true
			break
		}
	}
	switch {
	case !other:
		m.merging = false
	case !m.merging:
		m.merging, m.mergeSince = true, m.now
	case m.now-m.mergeSince >= m.cfg.Settle:
		m.send(Msg{Kind: Leave, Genesis: c.Genesis})
		m.becomeJoiner()
	}
}

func (m *Machine) becomeJoiner() {
	m.views = nil
	if m.leaving {
		m.stopped = true
	}
	m.merging = false
	m.resetRound()
}

// leader reports whether this member proposes the next view (and helps
// members that are behind): the lowest name of the current view among the
// members it has heard from that have installed the view too. One that has
// not (a joiner whose Install was lost) cannot lead, and is helped.
func (m *Machine) leader() bool {
	c := m.cur()
	for _, e := range c.Members {
		if e == m.self {
			return true
		}
		if m.counted(e) && m.peers[e].num >= c.Num {
			return false
		}
	}
	return false
}

// next is the view this member would propose now, or nil when nothing
// changed.
func (m *Machine) next() *View {
	c := m.cur()
	changed := false
	members := make([]Entry, 0, len(c.Members)+1)
	for _, e := range c.Members {
		if (e == m.self && !m.leaving) || m.counted(e) {
			members = append(members, e)
		} else {
			changed = true
		}
	}
	// Joiners: of several incarnations of one name, the lowest; none while
	// the name's member in the view is still counted (the others are
	// duplicates, and give way when they hear it).
	joiners := map[string]Entry{}
	for e, p := range m.peers {
		if p.num != 0 || p.genesis != c.Genesis || !m.fresh(p) {
			continue
		}
		if in, ok := c.byName(e.Name); ok && (in == e || in == m.self || m.counted(in)) {
			continue
		}
		if j, ok := joiners[e.Name]; !ok || e.Inc < j.Inc {
			joiners[e.Name] = e
		}
	}
	for _, e := range joiners {
		members = append(members, e)
		changed = true
	}
	if !changed || len(members) == 0 {
		return nil
	}
	slices.SortFunc(members, compareEntry)
	return &View{Num: c.Num + 1, Genesis: c.Genesis, Members: members}
}

// lead runs the proposer: it starts a round when a change has stood for
// Settle, or when a value accepted by this member waits to be installed,
// and restarts a round that has not ended within Suspect/2.
func (m *Machine) lead() {
	if !m.leader() {
		m.phase = 0
		m.changing = false
		return
	}
	if m.phase != 0 {
		if m.now-m.phaseAt > m.cfg.Suspect/2 {
			m.prepare()
		}
		return
	}
	switch {
	case m.accValue != nil && m.now-m.accSince > m.cfg.Suspect/2:
		m.prepare()
		return
	case m.next() == nil:
		m.changing = false
		return
	case !m.changing:
		m.changing, m.changeSince = true, m.now
	}
	waited := m.now - m.changeSince
	if waited >= m.cfg.Settle && (!m.suspects() || waited >= m.cfg.Suspect) {
		m.prepare()
	}
}

// suspects reports whether a member of the current view has been silent
// for more than two heartbeats without being out yet (Suspect). The
// proposer then holds its change back (at most Suspect) so that the
// member, if it died, goes out in the same view change as the others:
// members that leave vote only until they are out, and a fleet halved in
// one go, some killed, some leaving, would otherwise first lose its
// leavers' votes to a view that still holds the killed ones, a view whose
// majority may be gone.
func (m *Machine) suspects() bool {
	for _, e := range m.cur().Members {
		if e == m.self {
			continue
		}
		p := m.peers[e]
		if p != nil && !p.left && m.now-p.at > 2*m.cfg.Heartbeat && m.now-p.at <= m.cfg.Suspect {
			return true
		}
	}
	return false
}

func (m *Machine) prepare() {
	c := m.cur()
	m.round++
	m.ballot = Ballot{Round: m.round, Name: m.self.Name}
	m.phase, m.phaseAt = 1, m.now
	m.promises = map[string]Msg{}
	m.value = nil
	msg := Msg{Kind: Prepare, Genesis: c.Genesis, Num: c.Num, Ballot: m.ballot}
	m.send(msg)
	msg.From = m.self
	m.acceptor(msg)
}

// Step takes in one message from the group (the member's own are
// ignored).
func (m *Machine) Step(now time.Duration, msg Msg) {
	m.clock(now)
	if m.stopped || msg.From == m.self || msg.From.Name == "" || len(msg.From.Name) > MaxName || msg.From.Inc == 0 {
		return
	}
	if msg.Value != nil && !msg.Value.wellFormed() {
		return
	}
	m.hear(msg)
	if m.cur() == nil {
		// A joiner gives way to another incarnation of its name that is in
		// a view, or that a view holds, or that is a joiner too with a
		// lower incarnation (before any view exists, two joiners under one
		// name would otherwise count as one, and a group that needs them
		// both to reach MinMembers would wait for good).
		same := msg.From.Name == m.self.Name && msg.Kind == Beat
		if (same && (msg.Num > 0 || msg.From.Inc < m.self.Inc)) || (msg.Value != nil && m.taken(msg.Value)) {
			m.err = ErrDuplicateName
			m.stopped = true
			return
		}
	}
	c := m.cur()
	switch msg.Kind {
	case Beat:
		// A member of the view that missed it, or a member of an earlier
		// view that is not in this one, learns it (joiners wait for theirs).
		if c != nil && msg.Genesis == c.Genesis && msg.Num < c.Num && (msg.Num > 0 || c.Index(msg.From) >= 0) {
			m.help(msg.From)
		}
	case Leave:
	case Prepare, Accept:
		if c != nil && msg.Genesis == c.Genesis && msg.Num == c.Num && c.Index(msg.From) >= 0 {
			m.round = max(m.round, msg.Ballot.Round)
			m.acceptor(msg)
		}
	case Promise:
		m.promise(msg)
	case Accepted:
		m.accepted(msg.From, msg)
	case Install:
		if msg.Value != nil {
			m.adopt(msg.Value)
		}
	}
}

// hear updates what is known of the sender.
func (m *Machine) hear(msg Msg) {
	p := m.peers[msg.From]
	if p == nil {
		p = &peer{}
		m.peers[msg.From] = p
	}
	p.at = m.now
	switch msg.Kind {
	case Beat:
		p.genesis, p.num, p.size, p.epoch, p.left = msg.Genesis, msg.Num, msg.Size, msg.Epoch, false
	case Leave:
		p.left = true
	}
}

// taken reports whether view v gives this joiner's name to another
// incarnation that is alive: then this one is the duplicate.
func (m *Machine) taken(v *View) bool {
	e, ok := v.byName(m.self.Name)
	if !ok || e == m.self {
		return false
	}
	p := m.peers[e]
	return p != nil && m.alive(p)
}

// help sends the current view to a member that is behind, at most once a
// heartbeat per member, when this member leads.
func (m *Machine) help(to Entry) {
	p := m.peers[to]
	if p == nil || !m.leader() || (p.install != 0 && m.now-p.install < m.cfg.Heartbeat) {
		return
	}
	p.install = m.now
	m.send(Msg{Kind: Install, Genesis: m.cur().Genesis, Value: m.cur().clone()})
}

// acceptor answers a Prepare or an Accept (this member's own included).
func (m *Machine) acceptor(msg Msg) {
	if compareBallot(msg.Ballot, m.promised) < 0 {
		return
	}
	c := m.cur()
	m.promised = msg.Ballot
	switch msg.Kind {
	case Prepare:
		reply := Msg{Kind: Promise, Genesis: c.Genesis, Num: c.Num, Ballot: msg.Ballot, Epoch: m.epoch, Prev: m.accBallot}
		if m.accValue != nil {
			reply.Value = m.accValue.clone()
		}
		if msg.From == m.self {
			reply.From = m.self
			m.promise(reply)
			return
		}
		m.send(reply)
	case Accept:
		v := msg.Value
		if v == nil || v.Num != c.Num+1 || v.Genesis != c.Genesis {
			return
		}
		if m.accValue == nil || !m.accValue.Equal(v) {
			m.accSince = m.now
		}
		m.accBallot, m.accValue = msg.Ballot, v.clone()
		reply := Msg{Kind: Accepted, Genesis: c.Genesis, Num: c.Num, Ballot: msg.Ballot, Value: v.clone()}
		m.send(reply)
		reply.From = m.self
		m.accepted(m.self, reply)
	}
}

// promise collects promises for this member's ballot; with a majority of
// the current view it proposes.
func (m *Machine) promise(msg Msg) {
	c := m.cur()
	if c == nil || m.phase != 1 || msg.Ballot != m.ballot || msg.Num != c.Num || msg.Genesis != c.Genesis || c.Index(msg.From) < 0 {
		return
	}
	m.promises[msg.From.Name] = msg
	if len(m.promises) < Quorum(len(c.Members)) {
		return
	}
	var value *View
	var prev Ballot
	epoch := m.epoch
	for _, p := range m.peers {
		epoch = max(epoch, p.epoch)
	}
	for _, p := range m.promises {
		epoch = max(epoch, p.Epoch)
		if p.Value != nil && (value == nil || compareBallot(p.Prev, prev) > 0) {
			value, prev = p.Value, p.Prev
		}
	}
	if value == nil {
		value = m.next()
		if value == nil {
			m.phase = 0 // nothing to change any more
			return
		}
		value.From = epoch + 1
	}
	m.value = value.clone()
	m.phase, m.phaseAt = 2, m.now
	msg = Msg{Kind: Accept, Genesis: c.Genesis, Num: c.Num, Ballot: m.ballot, Value: value.clone()}
	m.send(msg)
	msg.From = m.self
	m.acceptor(msg)
}

// accepted counts an acceptance of the view after the current one; with a
// majority of the current view for one ballot, that view is chosen.
func (m *Machine) accepted(from Entry, msg Msg) {
	c := m.cur()
	if c == nil || msg.Num != c.Num || msg.Genesis != c.Genesis || c.Index(from) < 0 || msg.Value == nil || msg.Value.Num != c.Num+1 {
		return
	}
	m.round = max(m.round, msg.Ballot.Round)
	if m.acks == nil {
		m.acks = map[Ballot]map[string]bool{}
	}
	a := m.acks[msg.Ballot]
	if a == nil {
		a = map[string]bool{}
		m.acks[msg.Ballot] = a
	}
	a[from.Name] = true
	if len(a) >= Quorum(len(c.Members)) {
		v := msg.Value.clone()
		if m.phase == 2 && msg.Ballot == m.ballot {
			m.send(Msg{Kind: Install, Genesis: c.Genesis, Value: v.clone()})
		}
		m.adopt(v)
	}
}

// adopt installs a chosen view of this member's group, or of the group it
// joins.
func (m *Machine) adopt(v *View) {
	c := m.cur()
	switch {
	case c != nil:
		if v.Genesis != c.Genesis || v.Num <= c.Num {
			return
		}
	case v.Index(m.self) < 0:
		return // a view this joiner is not in
	case !m.genesis().zero() && m.genesis() != v.Genesis:
		return // a view of a group this joiner has left (a merge)
	}
	m.install(v.clone())
}

func (m *Machine) install(v *View) {
	if v.Index(m.self) < 0 {
		m.becomeJoiner()
		return
	}
	// Older views are kept while they may still serve an epoch this member
	// begins (a few suffice: views change far more slowly than epochs).
	m.views = append(m.views, v)
	if len(m.views) > 4 {
		m.views = slices.Delete(m.views, 0, len(m.views)-4)
	}
	for _, e := range v.Members {
		if p := m.peers[e]; e != m.self && p == nil {
			// A member not heard from yet gets a Suspect from now.
			m.peers[e] = &peer{at: m.now, genesis: v.Genesis}
		}
	}
	m.resetRound()
}

func (m *Machine) resetRound() {
	m.promised, m.accBallot, m.accValue = Ballot{}, Ballot{}, nil
	m.phase, m.promises, m.value = 0, nil, nil
	m.acks = nil
	m.changing = false
}
