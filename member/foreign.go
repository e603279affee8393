package member

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// Members that run another configuration of the group.
//
// The transport never lets a message cross between configurations (they
// are hashed into every message), so a member configured differently from
// the rest of its group would otherwise hear nothing, and be heard by
// nobody, until its deadline: the others would wait Suspect for it and
// exclude it. The transport reports instead every peer that sent a message
// under another configuration hash, or answered one with a notice of its
// own configuration, and the driver hands each to Foreign. Which side is
// misconfigured is decided by counting: a member that at least half of
// its group (by its own size N) say run another configuration, more than
// it has heard from under its own, is the odd one out, and fails its
// operations with ErrGroupMismatch, naming the difference. Half the group
// and not fewer: a member that has just started has heard nobody yet, and
// three misconfigured members that came first must not make the members
// of a correctly configured majority take themselves for the odd ones (a
// member's join announcement reaches every other member, so a
// misconfigured one hears from all of them at once);
// any other member stops waiting for the members it was told about, as if
// they had left (they cannot take part), until it hears from them under
// its own configuration.

// Foreign records that member j runs another configuration of the group
// (a message of j's was dropped for it, or j answered one of this
// member's with its configuration); why says how the configurations
// differ, for the error (empty when unknown). See the comment above for
// what follows. Calls for ids outside the group, or this member's own, are
// ignored.
func (m *Machine) Foreign(now time.Duration, j gossip.NodeID, why string) {
	m.now = now
	if int64(j) >= int64(m.r.n) || j == m.r.ID {
		return
	}
	if m.foreign == nil {
		m.foreign = newBitset(m.r.n)
		m.why = map[gossip.NodeID]string{}
	}
	first := !m.foreign.has(int(j))
	m.foreign.set(int(j))
	if i, found := slices.BinarySearch(m.agreed, j); found {
		m.agreed = slices.Delete(m.agreed, i, i+1)
	}
	if why != "" || first {
		m.why[j] = why
	}
	if first {
		m.stats.Foreign++
		m.log.Debug("member runs another configuration", "peer", j, "why", why)
	}
	if err := m.misconfigured(); err != nil {
		if m.Active() {
			m.finish(now, m.best(), err)
		}
		return
	}
	if !first {
		return
	}
	// j cannot take part: do not wait for it.
	m.setAbsent(int(j))
	if !m.Active() {
		return
	}
	switch o := m.cur; {
	case o.cert != nil:
		if o.cert.markDead(int(j)) {
			m.excluded(j)
		}
	case o.x != nil:
		m.fallback(now, o, "member "+strconv.Itoa(int(j))+" runs another configuration")
	}
}

// misconfigured returns the error that ends this member's operations when
// it is the one that runs another configuration than its group (see
// Foreign), or nil.
func (m *Machine) misconfigured() error {
	if m.foreign == nil {
		return nil
	}
	k := m.foreign.count()
	if k == 0 || 2*k < m.r.n || k <= len(m.agreed) {
		return nil
	}
	// The difference most of them reported (ties: the first in order).
	votes := map[string]int{}
	for _, j := range m.foreign.members(m.r.n) {
		if w := m.why[j]; w != "" {
			votes[w]++
		}
	}
	whys := make([]string, 0, len(votes))
	for w := range votes {
		whys = append(whys, w)
	}
	slices.SortFunc(whys, func(a, b string) int { return cmp.Or(votes[b]-votes[a], strings.Compare(a, b)) })
	what := "another configuration"
	if len(whys) > 0 {
		what = whys[0]
	}
	ids := m.foreign.members(m.r.n)
	list := make([]string, 0, min(len(ids), 8))
	for _, j := range ids[:min(len(ids), 8)] {
		list = append(list, strconv.Itoa(int(j)))
	}
	if len(ids) > 8 {
		list = append(list, "…")
	}
	return fmt.Errorf("%w: this member's configuration is not the group's: %d members (%s) run %s, %d were heard under this member's",
		ErrGroupMismatch, k, strings.Join(list, ", "), what, len(m.agreed))
}
