package view

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Errors.
var (
	// ErrDuplicateName reports that another process holds this member's
	// name (see the package documentation, "Founding, merging and names").
	ErrDuplicateName = errors.New("view: another member holds this name")
	// ErrInvalidConfig reports a configuration that cannot work.
	ErrInvalidConfig = errors.New("view: invalid configuration")
)

// MaxName is the longest name a member may have, in bytes.
const MaxName = 253

// Entry is one member: its name and the incarnation of the process that
// holds it (a process restarted under the same name is a new member).
type Entry struct {
	Name string
	Inc  uint64
}

func (e Entry) String() string { return fmt.Sprintf("%s#%x", e.Name, e.Inc) }

func (e Entry) zero() bool { return e.Name == "" && e.Inc == 0 }

func compareEntry(a, b Entry) int {
	return cmp.Or(strings.Compare(a.Name, b.Name), cmp.Compare(a.Inc, b.Inc))
}

// Genesis names a group: the member that founded it and the number of
// groups that incarnation had founded before (a member whose group died
// around it founds another, which must not be taken for the first).
type Genesis struct {
	Founder Entry
	Seq     uint64
}

func (g Genesis) String() string { return fmt.Sprintf("%v/%d", g.Founder, g.Seq) }

func (g Genesis) zero() bool { return g.Founder.zero() }

func compareGenesis(a, b Genesis) int {
	return cmp.Or(compareEntry(a.Founder, b.Founder), cmp.Compare(a.Seq, b.Seq))
}

// View is one agreed membership of the group.
type View struct {
	// Num numbers the views of a group from 1 (the founding view).
	Num uint64
	// Genesis is the group: who founded it, and when.
	Genesis Genesis
	// Members are sorted by name; a name appears once.
	Members []Entry
	// From is the first operation epoch the view serves.
	From uint64
}

// Index returns the position of e in the view (its member id in the view's
// fixed group), or -1.
func (v *View) Index(e Entry) int {
	i, ok := slices.BinarySearchFunc(v.Members, e.Name, func(m Entry, name string) int { return strings.Compare(m.Name, name) })
	if !ok || v.Members[i].Inc != e.Inc {
		return -1
	}
	return i
}

// byName returns the member of the view named name.
func (v *View) byName(name string) (Entry, bool) {
	i, ok := slices.BinarySearchFunc(v.Members, name, func(m Entry, name string) int { return strings.Compare(m.Name, name) })
	if !ok {
		return Entry{}, false
	}
	return v.Members[i], true
}

// Names returns the members' names in order.
func (v *View) Names() []string {
	out := make([]string, len(v.Members))
	for i, m := range v.Members {
		out[i] = m.Name
	}
	return out
}

// Equal reports whether two views are the same.
func (v *View) Equal(w *View) bool {
	return v.Num == w.Num && v.Genesis == w.Genesis && v.From == w.From && slices.Equal(v.Members, w.Members)
}

// wellFormed checks what a view received from another member must hold.
func (v *View) wellFormed() bool {
	if v.Num == 0 || v.Genesis.zero() || len(v.Members) == 0 {
		return false
	}
	for i, m := range v.Members {
		if m.Name == "" || len(m.Name) > MaxName || (i > 0 && v.Members[i-1].Name >= m.Name) {
			return false
		}
	}
	return true
}

func (v *View) clone() *View {
	w := *v
	w.Members = slices.Clone(v.Members)
	return &w
}

// Quorum is a majority of n members.
func Quorum(n int) int { return n/2 + 1 }

// Ballot orders proposals for one view number: by round, then by the
// proposer's name.
type Ballot struct {
	Round uint64
	Name  string
}

func compareBallot(a, b Ballot) int {
	return cmp.Or(cmp.Compare(a.Round, b.Round), strings.Compare(a.Name, b.Name))
}

// Kind is what a message is.
type Kind uint8

// Message kinds.
const (
	// Beat is a heartbeat: the sender, its group, its view and its last
	// epoch. A joiner's names the group it wants to join (or none).
	Beat Kind = iota + 1
	// Leave says the sender leaves its group.
	Leave
	// Prepare, Promise, Accept and Accepted are Paxos' messages for the
	// view after view Num.
	Prepare
	Promise
	Accept
	Accepted
	// Install carries a chosen view to members that missed it.
	Install
)

var kindNames = [...]string{"", "beat", "leave", "prepare", "promise", "accept", "accepted", "install"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && k != 0 {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Msg is one membership message; every message goes to every member of
// the group.
type Msg struct {
	Kind Kind
	From Entry
	// Genesis is the group the sender is in, or wants to join (zero: none
	// yet).
	Genesis Genesis
	// Num is the sender's view (Beat; 0 for a joiner), or the view being
	// changed (Paxos messages).
	Num uint64
	// Size is the number of members of the sender's view (Beat).
	Size int
	// Epoch is the last operation epoch the sender began (Beat, Promise).
	Epoch uint64
	// Ballot is the proposal's (Paxos messages); Prev the ballot of the
	// value a Promise carries.
	Ballot, Prev Ballot
	// Value is the proposed (Accept, Accepted), previously accepted
	// (Promise) or chosen (Install) view.
	Value *View
}

// Config configures a member.
type Config struct {
	// Name is the member's name: not empty, at most MaxName bytes.
	Name string
	// Inc is the incarnation, not zero: a random number drawn when the
	// process starts.
	Inc uint64
	// Suspect is how long a member may stay silent before it is taken out
	// of the next view (default 1 s). Heartbeat (default Suspect/4) is how
	// often a member sends its heartbeat, Settle (default 2 Heartbeat) how
	// long a change must stand before a view is proposed for it, and how
	// long a new member listens before it founds a group.
	Suspect, Heartbeat, Settle time.Duration
	// MinMembers is how many joiners (itself included) a member must hear
	// before it founds a group (default 1).
	MinMembers int
}

func (c *Config) fill() error {
	if c.Name == "" || len(c.Name) > MaxName {
		return fmt.Errorf("%w: name %q: want 1 to %d bytes", ErrInvalidConfig, c.Name, MaxName)
	}
	if c.Inc == 0 {
		return fmt.Errorf("%w: incarnation 0", ErrInvalidConfig)
	}
	if c.Suspect < 0 || c.Heartbeat < 0 || c.Settle < 0 || c.MinMembers < 0 {
		return fmt.Errorf("%w: negative timing or MinMembers", ErrInvalidConfig)
	}
	if c.Suspect == 0 {
		c.Suspect = time.Second
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = c.Suspect / 4
	}
	if c.Settle == 0 {
		c.Settle = 2 * c.Heartbeat
	}
	if c.MinMembers == 0 {
		c.MinMembers = 1
	}
	if c.Heartbeat >= c.Suspect {
		return fmt.Errorf("%w: heartbeat %v not below suspect %v", ErrInvalidConfig, c.Heartbeat, c.Suspect)
	}
	return nil
}
