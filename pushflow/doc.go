// Package pushflow implements the flow-based gossip algorithms of the thesis
// (chapters 2.2.2 to 3): Push-Flow (Algorithm 3), Push-Cancel-Flow
// (Algorithm 4, as published and fixed) and the engine behind Push-Flow with
// local correction (Algorithm 5, package pflc) and with cooperative
// correction (Algorithm 6, package pfcc). All are pure gossip machines in the
// asynchronous style of the simulator: a Step applies the received flow and
// sends once to a random neighbour, a Tick sends once.
//
// # Flows
//
// Node i keeps its input (x_i, w_i) unchanged and, for every neighbour j, a
// flow f_ij: the mass it has pushed to j minus the mass j has pushed to it,
// with the sign of an outflow. Its estimate is e_i = (x_i, w_i) + Σ_j f_ij
// and y_i = e_i(x)/e_i(w). To gossip, i picks a neighbour j, subtracts e_i/2
// from f_ij and sends f_ij; j answers by setting f_ji = -f_ij. Flow
// conservation (f_ij = -f_ji on every edge) implies mass conservation, and
// every successful message restores it on its edge, which is why flows
// recover from lost messages and from corrupted flow variables.
//
// # Concurrent messages (thesis 2.2.2)
//
// When i and j send to each other at the same time, each overwrites the
// other's latest push: f_ij + f_ji = (e_i + e_j)/2 until a later message on
// the edge repairs it, and meanwhile every estimate drifts towards a wrong
// aggregate. The thesis measured the cost (table 2.1) but left the fix open.
// [New] (and pflc, pfcc) fix it with acknowledged flows: every flow message
// carries in its Tag a sequence number (28 bits of its high half, beside
// two flags and a count of pushes, see below) and the sequence number of
// the last message received from the peer (the low 32 bits). A
// node remembers the pushes to j that j has not acknowledged yet, and when a
// flow from j arrives that was sent before j saw them, it sets
//
//	f_ij = -f_ji - Σ(pushes to j with sequence number > the acknowledgement)
//
// instead of -f_ji. Then neither push is lost, and conservation holds after
// every delivery, in any order: a message older than one already received
// from the same peer is recognised by its sequence number and dropped (flows
// are cumulative, so the newer one already says everything). No send is held
// back, so message counts are not inflated. [NewPublished] is Push-Flow
// exactly as Algorithm 3 (Tag 0, always overwrite), kept for comparison, and
// [NewCheckedPublished] puts PFLC and PFCC on the same flows, as the thesis
// did (algorithm names pflc-published and pfcc-published).
//
// # Message loss: the two engines' trade-off (thesis 4.2)
//
// A node cannot tell a lost push from one still on its way. The published
// flows treat every push the peer's latest message does not reflect as lost:
// the next message on the edge in either direction repairs a loss, and a
// push that was merely crossing is counted twice until the message after.
// Acknowledged flows treat it as on its way: crossing pushes cost nothing,
// but a lost one stays in transit until this node's next push to the same
// neighbour. On a 32-node hypercube the published flows stay near the
// thesis's bound 1/(1-p) up to 20 % loss, measured from their own loss-free
// count, which concurrent messages inflate by half; acknowledged flows pay
// 4 to 8 times the bound from Push-Sum's count, yet need fewer messages in
// absolute terms up to 10 % loss at 32 nodes (5 % at 512). docs/sdc.md has
// the tables and the variants tried between the two. The live runtime uses the
// acknowledged engine: its convergence certificate counts an observation
// only while Settled, which sees every push in transit, whereas a push the
// published flows count twice is visible to no one.
//
// # Pushes in circulation under loss (gossip.Config.Revive)
//
// Every push received is answered with one push, so the pushes in
// circulation stay as many as the nodes started, and a runtime that takes
// no step of its own while its pushes are unacknowledged (see Idle) adds
// none. A lost push ends one for good: under 1 % loss a runtime's group of
// 4,096 simulated members had lost nearly all of them a few milliseconds
// in, and converged from then on at the pace of its idle steps (14,276 L
// against 560 L without loss). With Config.Revive every message also
// carries its sender's count of pushes on the edge, modulo 4, and the
// receiver of a later message pushes on once for each push that never
// came, no more than the sequence numbers skip (the same group: 1,081 L).
// A push overtaken by the message that counted it is not pushed on again
// when it arrives, nor is a duplicate (a window of the last 64 sequence
// numbers taken in tells the two apart), unless it acknowledges nothing:
// a sender restarted within the operation numbers from 1 again before it
// hears from this node, and its first pushes are not copies. Pushed on, a
// duplicate added a push in circulation for good, and with lost pushes
// pushed on for, a network that duplicates 10 % and loses 5 %
// multiplied them. Four pushes lost in a row
// on one edge read as none; four overtaken at once, read as none too, are
// pushed on when they arrive (a node keeps a credit of the pushes it
// pushed on for, and takes an overtaken push for one of them only while
// it has some). A push overtaken by 64 messages or more is pushed on
// twice, and a node restarted within an operation may push on for up to
// three pushes of a neighbour's that were never lost. Pushes made on an
// idle step while the circulation was short stay in it once the pushes
// lost are pushed on for: after a spell of heavy loss the group can
// have more pushes in circulation than members until it hushes. The
// thesis's algorithms, which the simulator ticks, leave it off.
//
// The list of unacknowledged pushes is state the injectors of package sdc do
// not see through Words: a flip there acts, once merged, like a flip in the
// flow it is merged into.
//
// # Checksums (PFLC, PFCC)
//
// The checked variants carry a third component, the checksum c = Σ_k x_k + w
// (one per input, flow and message, whatever the number k of value
// components). A triple v is consistent when
//
//	|Σ_k v_x[k] + v_w - v_c| ≤ τ · (‖v‖₁ + R)
//
// where R = ‖e_i‖₁ is the magnitude of the node's last verified estimate:
// the threshold is relative, so it does not depend on the range of the data,
// and the reference R keeps a flow that is near zero after cancellation from
// failing on rounding errors inherited from larger values. The test is
// written so that NaN and infinities always fail. The input's checksum is
// recomputed in the order it was formed, so the input test is exact: any
// flip that changes the rounded sum is caught. See packages pflc and pfcc for
// the default τ.
//
// # Push-Cancel-Flow
//
// [NewPCFPublished] is Algorithm 4 as published: consecutive messages from
// one node to another can leave the two ends with handshake states (c, r)
// that reject each other's messages for good (thesis figure 2.5), and mass
// leaks away. [NewPCF] applies the thesis's fix ("avoiding consecutive
// messages"): a node does not send to a neighbour again before it has heard
// from it; a send that would go to such a neighbour goes to another,
// uniformly among those it may send to, and when there is none the send is
// held back until a message arrives (counted in Counters.HeldBack).
package pushflow
