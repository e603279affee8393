// Package gossipreduce is a Go library for fault-tolerant all-reduce built on
// gossip: every participant contributes a vector of numbers and every
// participant gets back the same cluster-wide sum or average, even when
// messages are lost, nodes crash or bits flip in memory.
//
// The root package holds no code; the packages are:
//
//   - gossip: the vocabulary every algorithm speaks (Machine, Message, Config)
//   - pushsum, pushflow, pflc, pfcc, rdb, exchange, ring, rhd, central:
//     the algorithms, as pure state machines (Push-Sum, Push-Flow,
//     Push-Cancel-Flow, the checksum-protected PFLC and PFCC, recursive
//     doubling and dimension exchange, and the ring all-reduce, recursive
//     halving and doubling and central gather as baselines)
//   - algo: the algorithms by name
//   - topology: overlays and their spectral analysis
//   - sim: the discrete-event and synchronous simulators
//   - sdc: bit-flip and fault injectors for silent-data-corruption studies
//   - broadcast: corrected-tree, corrected-gossip and BMG broadcasts;
//     broadcast/bsim simulates them
//   - transport, aggregate: the live runtime over NATS
//
// The command gossipreduce (cmd/gossipreduce) drives all of them.
package gossipreduce
