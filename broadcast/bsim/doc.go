// Package bsim simulates the broadcasts of package broadcast, runs
// campaigns of them with random failures, and holds corrected gossip's
// analytic model: the tools that reproduce the papers (corrected trees,
// corrected gossip, BMG flooding). A live runtime needs none of it; it uses
// package broadcast alone.
//
// # Pieces
//
//   - [SimulateMachines]: the reference engine. It drives one
//     broadcast.Machine per process through a plain discrete-event loop,
//     so it runs every scheme and correction, with failures before the
//     start ([Failures], [DrawFailures]) and during the run.
//   - [Simulator]: the fast engine, for trees and gossip with no,
//     opportunistic, optimized or checked correction and failures before
//     the start only ([FastSupported]). It applies the machines' rules
//     (broadcast.CorrectionState, the plan's tree, deadline and gossip
//     time) to flat arrays and a bucket queue, and its results equal the
//     reference's, process by process, at a small fraction of the cost.
//   - [RoundSimulator]: gossip alone in rounds instead of LogP time,
//     unsynchronized (corrected gossip's model for its 95.1 % example) or
//     synchronous; campaigns select it with [EngineRounds] or
//     [EngineSyncRounds].
//   - [Campaign]: many runs of one plan in parallel, run i with seed
//     Seed+i so that any run can be replayed alone, summarised in
//     nearest-rank percentiles ([Summary], [Dist], [Percentile]).
//   - [OptimalGossipTime], [ExpectedColored], [MaxGapQuantile] and
//     [ChainQuantile]: corrected gossip's approximations (Lemma 1,
//     equations 2-5), the ones broadcast.NewPlan uses to choose a gossip
//     plan's T.
//
// # Timing model
//
// Both engines implement exactly this (the tests check the fast one against
// the machine-driven one), the papers' model as package broadcast describes
// it:
//
//   - Time is an integer. A process has a send port and a receive port that
//     work in parallel (send and receive overheads overlap, as in corrected
//     trees 2.2 and the reference simulator's parallelism 2). The gap g is
//     at most o and never binds.
//   - A send started at s occupies the send port for [s, s+o), and the
//     message arrives at s+o+L. What to send is decided at s, from the
//     state at s.
//   - Messages that arrive at a live process are received one at a time in
//     arrival order, ties broken by the sender's number; a receive starting
//     at r ends at r+o, and the message takes effect then.
//   - At equal times, receives end before sends are decided.
//   - Processes that failed before the start never send; messages to them
//     are dropped on arrival. A process failing during the run at time f
//     (fail-proof experiments) starts no send and ends no receive at or
//     after f; messages arriving then are dropped.
//   - Coloring latency is the time the last live process finished
//     receiving its first copy of the value (the root is colored at 0);
//     quiescence latency is the time the last send or receive ends or the
//     last message is dropped at a failed process.
//
// The tests check the papers' lemmas and claims on both engines and that
// the engines agree; the long experiments (build tag experiments) reproduce
// the papers' tables and figures, as docs/broadcast.md describes.
package bsim
