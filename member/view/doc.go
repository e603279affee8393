// Package view agrees on the membership of an elastic group: members known
// by name, no fixed size, and a sequence of numbered views that every
// member of a view agrees on.
//
// It is the protocol half of issue 12 (elastic groups), a pure state machine
// in the manner of member.Machine: time enters as a now argument, messages
// leave through Outbox, nothing here reads a clock or starts a goroutine. A
// driver broadcasts every message to every member of the group (one NATS
// subject the group's members all subscribe to) and hands every message
// it receives to Step. Package aggregate drives it over a transport.Channel
// (which drops replays per sender session) and runs each operation over a
// view as a fixed group: member i of view v is the i-th name in sorted
// order, the overlay derived from the view's size.
//
// # Views
//
// A view is a number, the group it belongs to (its Genesis), the sorted
// list of its members (name and incarnation: a process that restarts
// under the same name is a new incarnation), and From, the first operation
// epoch it serves. Operation e runs over the installed view with the
// largest From ≤ e (see "Epochs" below for what a member that installs a
// view late does).
//
// # Changing the view: Paxos over the previous view
//
// View v+1 is chosen by single-decree Paxos whose acceptors are the members
// of view v: a proposer needs promises from a majority of v, then
// acceptances from a majority of v, so two different views v+1 can never
// both be chosen, and a minority of v (one side of a partition) never
// changes the view. Every message is a broadcast, so every member of v
// learns a choice by counting acceptances; the proposer then sends the view
// (Install) to the joiners it takes in, and again to any member whose
// heartbeat shows it behind.
//
// The proposer is the member of v with the lowest name among those this
// member has heard from within Suspect (itself included); when it dies the
// next one takes over with a higher ballot, and Paxos keeps what a majority
// may have accepted. It proposes when a member of v has left (an explicit
// Leave, or silence for Suspect: heartbeats go out every Heartbeat) or a
// joiner asks to be let in (its heartbeats name this group's genesis), after
// the change has stood for Settle, so that joiners arriving together enter
// together. Only joiners heard within two heartbeats are taken in: a view
// whose majority is not there can never change again.
//
// # Epochs
//
// Promises and heartbeats carry the last epoch each member began,
// and a proposal's From is one past the largest the proposer knows, so a
// view normally serves only epochs no member has begun yet. A member that
// began an epoch before it installed a view whose From covers it (the view
// was chosen while its operation started) runs that epoch over its older
// view. An operation is therefore an epoch and a view: members of
// different views never exchange a message (the view is part of the fixed
// group's configuration), each operation is decided by a majority of its
// own view or not at all, and its result names its view. (Fencing epochs during a view
// change, so that no epoch is ever run over two views, was tried on paper
// and left out: an accepted view whose From some members had already passed
// could block the group for good.)
//
// # Founding, merging and names
//
// A joiner that has heard no member of any view for Settle since it
// started, has heard at least MinMembers joiners (itself included) and has
// the lowest name among them founds a group: view 1 holds only itself, and
// the others join at once through view 2. View 1 holds only its founder
// because a view whose members never took it up could never change again.
// A group is named by its founder's incarnation and the number of groups
// that incarnation founded before (Genesis): a member whose group died
// around it founds a new one, never a second view 1 of the old.
//
// Two groups can form when joiners cannot hear each other for Settle (a
// partition at start, or the minority side of one once the majority has
// taken it out). Each is safe on its own; when they hear each other for
// Settle the members of the smaller one (ties: the later genesis) leave it
// and join the other. A MinMembers above half the fleet rules out the
// first case.
//
// A name is one member: a joiner that hears its own name from another
// incarnation that is in a view, or finds a view giving its name to
// another incarnation it hears from, fails with ErrDuplicateName. Of two
// joiners under one name, the one with the higher incarnation gives way as
// soon as it hears the other (before any view exists, both would otherwise
// count as one name and could wait for good for MinMembers). A process restarted under its name
// replaces its dead incarnation at the next view change.
//
// # Leaving, and groups that cannot change
//
// A member that leaves (Machine.Leave) announces it and goes on voting
// until the view without it is installed, or 4 Suspect have passed
// (LeaveVotes): a group of two whose members leave one after the other is
// not left stuck, and a fleet scaled down by half, some of its members
// killed, keeps its majority while the killed ones fall silent for
// Suspect (the leavers' votes carry the change that removes them all). A
// view of which a majority crashed can never change again (a minority
// never decides), and its surviving members stay in it; this is the price
// of never deciding on the minority side of a partition. Scaling down by
// more than half at once with kill -9 is that case.
//
// # Driving a machine
//
// Call Tick every few milliseconds (at least every Heartbeat/4), Step for
// every message of the group (the member's own are ignored), broadcast
// what Outbox returns, and ask Begin for the view of each operation.
package view
