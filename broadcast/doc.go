// Package broadcast is reliable broadcast for gossipreduce: corrected trees
// (Küttler et al., PPoPP 2019), corrected gossip (Hoefler et al., IPDPS
// 2017), flooding of the binomial graph (Bouteiller et al., EuroMPI 2015)
// and an acknowledged tree as the traditional baseline. The live runtime
// uses it to hand a converged all-reduce result from a root to every live
// process.
//
// This package is the protocol: what every process of a group needs to
// take part in a broadcast. Package broadcast/bsim simulates it (a
// reference engine that drives one Machine per process, a fast engine for
// trees and gossip, campaigns of random failures summarised in
// percentiles), holds corrected gossip's approximations and reproduces the
// papers' experiments.
//
// # Pieces
//
//   - [Tree]: k-ary, binomial, Lamé(k) and optimal(L, o) dissemination
//     trees, numbered interleaved (equation 2, Definition 1) or in order.
//   - [Spec] and [Plan]: a whole broadcast (scheme, correction, LogP costs,
//     gossip time), validated once and shared by every process.
//   - [Machine]: one process's part of one broadcast, a pure state machine
//     driven from outside (Start, Step, Poll, Wake), speaking
//     gossip.Message with Kind gossip.KindBroadcast.
//   - [Node]: one process's side of every broadcast, one Machine per (root,
//     epoch), delivering each at most once (Claim 1 of corrected gossip).
//   - For simulators that apply the rules without machines, as bsim's fast
//     engine does: [CorrectionState] (the ring-correction rules the
//     machines use), [Tree.Child], [Plan.Deadline], [Plan.GossipTime] and
//     [LogP.Hop].
//
// A gossip plan without a given T chooses it by corrected gossip's
// approximations (equations 1-5, in an internal package that bsim
// publishes).
//
// # Corrections
//
// After dissemination the processes form a ring by number. Opportunistic
// correction sends D messages each way; checked correction sends until it
// has sent to the nearest process it heard from on each side; fail-proof
// correction tolerates F failures during the correction and falls back to
// an SOS flood. Synchronized correction starts at one moment everywhere
// (the tree's fault-free latency, or T+L+o after gossip); overlapped
// correction (trees only) starts when a process has sent its tree messages.
// Processes colored by correction (c-nodes) send no correction messages,
// except under overlapped opportunistic correction after a tree, where a
// process colored early still sends its tree messages and then corrects
// (corrected trees 3.3). Two deliberate departures from the papers:
// optimized opportunistic correction uses received messages from the right
// only (the paper's symmetric rule can leave a process uncovered, see
// [CorrectionOptimized]); and the optimal tree for o > 1 is the greedy LogP
// schedule, which is not always interleaved (the paper's equation gives no
// tree there).
//
// # Timing model
//
// Integer LogP time with g ≤ o. Each process has a send port and a receive
// port that work in parallel. A send started at s occupies [s, s+o) and
// arrives at s+o+L; what to send is decided at s. Arrivals at a live
// process are received one at a time, in arrival order with ties broken by
// the sender's number, each for o; a message takes effect when its receive
// ends. At equal times receives end before sends are decided. Failed
// processes drop what reaches them. This is the papers' model; with it the
// fault-free synchronized checked correction takes 4o + L + ⌈L/o⌉·o and
// 3 + ⌈L/o⌉ messages per process, which is Lemma 2 and Corollary 1 (stated
// with ⌊L/o⌋) whenever o divides L, as in all the papers' experiments.
//
// # Messages
//
// Every message is a gossip.Message with Kind gossip.KindBroadcast. Epoch is
// the broadcast's epoch: the root's counter of Claim 1, or, for the
// all-reduce, the all-reduce epoch itself (a group-wide counter is in
// particular increasing for every root, so Claim 1's rule holds as is).
// Tag packs the message type, the root, the sender's broadcast time at the
// start of the send and, for fail-proof correction, how many process ids
// follow the value in the payload (see [EncodeTag]). Payload is the value
// being broadcast, shared read-only between the messages of a machine.
//
// # Use in a live runtime
//
// Build one Plan per group (every process must use the same Spec: N,
// scheme, correction, L and o in ticks), then one [Node] per process with
// ClockFromMessages and, when other processes may take over a dead root's
// broadcast of the same epoch, OncePerEpoch. The root calls
// Node.Broadcast(now, epoch, value); every process calls Node.Step for each
// received message whose Kind is gossip.KindBroadcast (errors mean drop and
// count), Node.Poll whenever it may send one message (once per tick, or as
// often as the transport allows; Node.Wake says when the next poll is
// needed if nothing arrives), and Node.Deliveries to collect values. Time is
// ticks of the runtime's own clock; L and o in the Spec should be the
// typical delay and per-message cost in ticks. Synchronized correction
// starts at the tree's fault-free latency on each process's broadcast
// clock, set from the stamp of the tree message; where delays vary a lot,
// overlapped checked correction needs no clock agreement at all.
package broadcast
