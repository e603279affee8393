package gossip

import "iter"

// Machine is one node's protocol: the state an algorithm keeps for a single
// participant and the rules that change it. A Machine is not safe for
// concurrent use; a driver (the simulator, the live runtime, a test) owns it
// and calls it from one goroutine at a time.
//
// Tick and Step append the messages the node sends to out and return the
// extended slice, in the style of strconv.AppendInt, so that a driver can
// reuse one buffer for every call. The Payload of each returned message is
// freshly allocated and owned by the caller.
type Machine interface {
	// ID returns the node this machine runs.
	ID() NodeID

	// Tick is the passage of local time: the node may take a gossip step
	// now (Push-Sum sends half its mass to a random neighbour, recursive
	// doubling starts or retransmits). Drivers call Tick once at the start
	// and then whenever their clock says so; algorithms that answer every
	// received message also need it to keep going after a message is lost.
	Tick(out []Message) []Message

	// Step delivers one message. It returns the messages sent in response
	// (possibly none). A message that does not belong here (another epoch,
	// kind or recipient, a payload of the wrong length, a sender that is not
	// a neighbour) leaves the state untouched and returns an error wrapping
	// ErrForeignMessage, ErrLength or ErrUnknownPeer.
	Step(m Message, out []Message) ([]Message, error)

	// Estimate appends the node's current estimate y_i of the aggregate
	// (one entry per value component) to dst[:0] and returns it.
	Estimate(dst []float64) []float64

	// Exclude declares peer dead. The machine stops sending to it and, where
	// the algorithm allows (the flow algorithms), removes the peer's
	// contribution so the computation continues over the survivors.
	// Excluding a peer that is not a neighbour, or twice, does nothing.
	Exclude(peer NodeID)

	// Words yields the float64 words of the machine's state by name, so
	// fault injectors can flip bits in them. The pointers stay valid until
	// the next call of Tick, Step or Exclude.
	Words() iter.Seq[Word]
}

// Finisher is implemented by machines that know when they are done, such as
// recursive doubling. Gossip machines never finish on their own: their
// drivers stop them once the estimates are accurate enough.
type Finisher interface {
	Done() bool
}

// Settler is implemented by machines that know what they have sent that
// may not have reached its receiver yet (in flight, or lost and not yet
// repaired): the flow algorithms keep every unacknowledged push. Each such
// message carries mass at the ratio of the sender's estimate when it was
// sent, and the exact aggregate is a convex combination of the nodes'
// estimates and these ratios. So a runtime may take agreement among the
// estimates as convergence only if every node is settled: Settled(tol)
// reports whether every unacknowledged push's ratio is within tol
// (relative, component by component) of the node's current estimate.
type Settler interface {
	Settled(tol float64) bool
}
