// Package member is the runtime protocol of one member of a group, as a
// pure state machine: failure detection, the convergence certificate,
// deciding one result per operation, exclusion and rejoin, and the hand-off
// to the result broadcast. Package aggregate drives a Machine over NATS (or
// any transport.Transport), and package simnet drives the same Machine in
// simulated time; neither re-implements any of it.
//
// A Machine starts no goroutine and reads no clock. Time enters as the now
// argument of Begin, Step and Tick; messages to send collect in an outbox
// the driver drains (Outbox); an operation's outcome is taken with
// TakeOutcome. A run is therefore determined by its inputs, which is what
// lets simnet replay a fault schedule from its seed and lets the traces in
// simnet/testdata check the protocol step by step.
//
// # Deciding a result
//
// A finite algorithm (the default, dimension exchange) ends on its own and
// every member holds the same bits. A gossip algorithm (PFCC, and the
// exchange's fallback) needs to know when to stop. Every gossip message
// carries its sender's convergence certificate: a generation, the members
// stable in it, and the members known dead. A member is stable once it has
// compared its estimate with its neighbours' on several messages in a row
// and found them within θ = ε/(2(D+1)) (D the overlay's diameter), while
// nothing it sent is still in transit at a ratio away from its estimate
// (gossip.Settler) and no live neighbour's latest message disagreed with
// it (a message older than one already taken in from its sender is not
// looked at).
//
// Any disagreement, exclusion or repair at a stable member starts a new
// generation, which withdraws every certificate of the old one. When every
// member not known dead is stable in one generation, the lowest such member
// (the root) proposes its estimate and a majority accepts it by Paxos; the
// proposer returns it and the corrected-tree broadcast carries it to the
// others. A result is bitwise the same at every member that returns one,
// covers a majority, and is within ε of the exact average of the inputs it
// covers (Check; docs/design.md, "Deciding a result").
//
// # Failure detection
//
// Silence is not death: a member declares a neighbour dead only after a
// silence longer than a limit that grows with the silences it has seen
// live members keep, doubles when several neighbours fall silent at once,
// and forgives the stretches in which the member itself was not running
// (Config.Suspect; docs/design.md, "Failure detection: slow is not dead").
// A member declared dead while alive still takes a result that covers its
// input; otherwise it ends the operation with ErrExcluded and counts again
// from the next.
package member
