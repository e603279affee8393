// Package gossip is the shared vocabulary of gossipreduce: the per-node
// protocol state machine ([Machine]), the [Message] nodes exchange, the
// [Config] every algorithm is built from, node identities and the errors
// all packages wrap.
//
// # Pure state machines
//
// An algorithm is a [Machine]: one node's protocol state, driven from the
// outside (the model is etcd-io/raft). A Machine never reads a clock, starts a
// goroutine, performs I/O or touches the global random source. Time enters as
// calls to [Machine.Tick]; messages enter through [Machine.Step]; randomness
// comes from the [math/rand/v2.Source] in the [Config]. Given the same seed and
// the same sequence of calls, a Machine produces the same messages, so the
// discrete-event simulator and the live NATS runtime drive exactly the same
// code, and a simulated run can be replayed bit for bit.
//
// # Values and weights
//
// Every node holds a vector of k float64 components x_i and a scalar weight
// w_i. The aggregate every node estimates is, component by component,
//
//	y = Σ_i x_i / Σ_i w_i
//
// With [Average] every w_i = 1 and y is the average; with [Sum] the weights
// add up to 1 (w_i = 1/N) and y is the sum (thesis, section 2.2.1).
//
// # Silent data corruption
//
// Algorithms expose the float64 words of their state through
// [Machine.Words], each with a name ("flow[3].weight", "value[0]", ...), so
// that a bit-flip injector can corrupt exactly the word an experiment names,
// in the simulator and in the live runtime alike.
package gossip
