package gossip

import "math/rand/v2"

// InjectPoint tells a fault injector where and when a driver is: which node
// acts, at what time, and how far the run has progressed. Drivers fill what
// they know; a live node does not know MaxSent and leaves it at its own Sent.
type InjectPoint struct {
	Node    NodeID
	Time    float64 // simulated time, or seconds since the operation began
	Sent    int     // messages this node has sent so far
	MaxSent int     // the most messages any node has sent so far
	// Rand is the injector's own random stream for this run, owned by the
	// driver so that injection is deterministic per seed.
	Rand *rand.Rand
}

// Injector corrupts state or messages on purpose, for silent-data-corruption
// and fault-injection experiments. Drivers (the simulator and the live
// runtime) call it; package sdc implements it. Methods are called from the
// driver's goroutine for the node concerned.
type Injector interface {
	// InjectMessage sees every message a node sends, before it is put in
	// flight, and may modify its payload in place.
	InjectMessage(p InjectPoint, m *Message)
	// InjectState is called once per node before its first Tick (Sent = 0,
	// so an injector can corrupt the initial data) and after every Tick and
	// Step; it may corrupt the machine through its Words.
	InjectState(p InjectPoint, m Machine)
}
