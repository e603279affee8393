// Package sim simulates gossip all-reduce: a discrete-event simulator of
// asynchronous nodes (thesis appendix A.3) that drives any gossip.Machine,
// and a synchronous-round simulator for Push-Sum at very large N (appendix
// A.1).
//
// # The discrete-event simulator
//
// [Run] builds one machine per node and delivers their messages in order of
// arrival time. Each node ticks once at time 0 (and periodically, every
// Config.TickEvery, if set) and handles every message it receives; the
// machines decide what to send. Timing follows LogP: a message arrives L
// after it leaves (times a per-pair factor such as the hop count of the
// distance-dependent 3-D torus model of thesis 5.4, and a random jitter if
// asked), and a node spends o on every receive and o on every send, during
// which it cannot start anything else. A run is deterministic for its seed:
// inputs, each node's random choices, loss, jitter and injections all come
// from streams derived from Config.Seed.
//
// Stop rules: every live node ε-accurate (equation 4.1, the default), the
// first node ε-accurate, the message cap (a node has sent Config.MaxMsgs
// messages; the thesis used 500 and 1000), or nothing left to happen.
//
// Faults:
//   - Message loss with probability p (thesis 4.2): the receiver still wakes
//     up, as if its timeout had fired, and takes a step, but the payload is
//     gone. This is the thesis's model; it keeps the number of messages in
//     circulation constant, so the overhead has the lower bound 1/(1-p).
//   - Nodes dead from the start or crashing at a time. A message to a dead
//     node vanishes; its sender's retransmission timer fires after
//     Config.RTO and the sender ticks, so the exchange does not die out.
//     Config.DetectAfter later, every node that sends to the dead node calls
//     Exclude on it (a perfect failure detector with a delay), and the
//     estimates are then measured against the aggregate of the survivors.
//   - Silent data corruption through a gossip.Injector (package sdc), which
//     sees every message sent and every machine after each step.
//
// Metrics: messages sent per node (max and mean) when the run stopped, the
// final maximum relative error, the simulated time, and optionally the
// maximum relative error over time.
package sim
