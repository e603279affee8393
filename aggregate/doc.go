// Package aggregate is gossipreduce's live runtime: members of a group, in
// one process or many, each call Average or Sum with their own vector, and
// every live member gets back the bitwise same result, even when messages
// are lost, members crash or bits flip.
//
//	tr, _ := transport.NewNATS(conn, transport.Options{})
//	node, _ := aggregate.Join(ctx, tr, aggregate.Config{Group: "fleet", ID: id, Nodes: 16})
//	res, err := node.Average(ctx, []float64{latency, queueLength})
//
// Each member runs one goroutine that moves messages and time between a
// transport and the member's protocol, member.Machine: a pure state
// machine (no goroutine, no clock read) that drives a gossip.Machine
// (dimension exchange by default; any algorithm of package algo) and holds
// every protocol decision, so the simulator (package member/simnet) runs
// the same code as a live member. Operations are
// numbered (epochs): every member's n-th operation is the group's n-th, and
// messages of different operations never mix. Members must Join before the
// group's first operation starts, so that nothing sent to them is lost;
// messages for an operation a member has not started yet wait for it.
//
// # Deciding that the group has converged
//
// The default algorithm, dimension exchange (package exchange), needs no
// convergence test: it is exact after its schedule, every member ends with
// the same bits, and a second pass over the schedule tells each member that
// a majority holds them. When it cannot finish (an input lost with its
// member, a member away since the last operation, members holding
// different results) it hands the operation to PFCC, and the operation ends
// as a gossip operation does, as follows; member/fallback.go says why no
// two results can come out of one operation.
//
// A gossip estimate converges but never says so; the thesis (6.1) names a
// fault-tolerant global convergence test as the first open problem. This
// package answers it with a certificate piggybacked on every gossip message
// (so it costs no extra message):
//
//   - Every message carries the sender's current estimate. A member compares
//     it with its own after taking the message in; once θ-agreement has held
//     for several consecutive messages (up to 8, from up to 8 neighbours) the
//     member certifies itself stable. θ = ε/(2(D+1)), with D the overlay's
//     diameter: neighbours that agree within θ are at most D·θ apart across
//     the group.
//   - The stable members of a generation form a set, merged (union) on every
//     message. A certified member that later sees a disagreement (after a
//     fault, an exclusion, a repaired bit flip) withdraws every certificate
//     by starting a new generation; the newest generation wins every merge.
//   - Members declared dead (below) form a second set, merged the same way;
//     it only grows.
//   - A member counts an agreeing observation only while it is settled
//     (gossip.Settler): every push it has sent and not seen acknowledged
//     (in flight, or lost) must carry mass at a ratio within θ of its
//     current estimate. The flow machines resend a push left
//     unacknowledged for 4·degree+8 steps (gossip.Config.Resend), so a lost
//     message cannot hold a member unsettled for long.
//   - When every member is stable in the current generation or dead, the
//     root, the lowest member not known dead, proposes its estimate. The
//     exact aggregate is a convex combination of the estimates and of the
//     ratios of the mass still in transit (mass conservation); settled
//     members make both agree, so the root's estimate is within ε/2 of the
//     truth. Without the settledness condition a push lost late in the
//     exchange shifted the agreed value by up to 3e-7 against ε = 1e-9 in
//     a soak at 2 % loss.
//
// # One result per epoch
//
// The value is chosen by single-decree Paxos among the members (package
// member, commit.go), with the root as proposer: a majority of the group
// must accept the proposal before anyone returns it, and a member that
// takes over from a root that died first asks a majority for any value
// they accepted and proposes that one. So a root that returns its value
// and dies before anyone else has it cannot leave a successor to decide
// another: every member that returns a result for an epoch returns the
// same one. The chosen value goes out by a corrected-tree broadcast
// (package broadcast: binomial tree, interleaved numbering, checked
// correction overlapped with dissemination), which reaches every live
// member despite failed ones; a member that has the result answers any
// later message of that operation with it. Sum is the average times the
// number of live members, taken from the root's dead set, so after a
// member is excluded it is the survivors' sum.
//
// The safety invariant, which member.Check verifies and the chaos harness
// (package member/simnet, the chaos verb) checks on every operation: every
// member that returns a nil error for an epoch holds the bitwise same
// Result; it covers that member (a member left out gets ErrExcluded) and
// a strict majority of the group; and its Value is within ε of the exact
// average of the inputs it covers. A side of a partition without a
// majority never decides (its members run out their context with
// ErrNotConverged), so a partition cannot split the group into two
// answers. Without a group key anyone who can publish can forge
// messages. A member takes a result it did not itself accept in the
// commit only if its own estimate confirms it within ε, its own
// certificate knows of every member it leaves out, and two different
// members sent it bit for bit, so no single forged message decides what a
// member returns; a forger who sends the same value under two identities,
// or many messages, can still make a member return a value within ε of
// the truth that differs from the group's, or keep a group from deciding.
// Use a key (--key-file, transport.Options.Key) wherever others can
// publish.
//
// Two processes with one member identity would count one input for both:
// Join fails with an error wrapping transport.ErrDuplicateID when another
// endpoint holds the identity, and the member it collided with ends its
// operations with that error from then on (see package transport,
// "Claims", for how the collision is found and its limits).
//
// # Requests, epochs and membership
//
// Reduce takes a Request: Values are averaged (Average and Sum wrap it) and
// Extremes are maximised (negate for a minimum). With a gossip algorithm
// they ride in the certificate, merged by maximum, and members agree only
// when their extremes are equal, so a complete certificate means everyone
// holds the global maximum; exchange carries them in its partials, under
// its hashes. An operation's epoch is the next one, or one the caller
// names (Monitor uses the clock). Each result carries the group's dead set;
// members start the next operation without the absent ones. Close tells
// the others a member leaves; Join tells them it is (back) here.
//
// Monitor runs continuous aggregation of named metrics for services: every
// Interval (epochs on multiples of the interval since the Unix epoch, so
// members agree without talking) or on demand (idle members join an
// aggregation another started), it reports per metric the count of live
// members, sum, mean, min, max and variance, with the epoch and time so a
// stale snapshot shows.
//
// # Elastic groups
//
// A member joined by name (Config.Name, no ID or Nodes) belongs to an
// elastic group: members come and go, and the group agrees on a sequence
// of numbered views, each the sorted list of the names then in the group
// (package member/view: heartbeats and Paxos over the previous view on the
// group's broadcast channel, transport.Channel, so that a view change needs
// a majority of the previous view and a minority never makes one). Join
// returns once the member is in a view of at least Config.MinMembers. Each
// operation runs over the view that serves its epoch, as member i of a
// fixed group of the view's size (i its place among the sorted names), and
// its Result names that view (View) and its members (Names; Absent holds
// ids into Names). A joiner enters at the next view, about Suspect/2 after
// it is first heard; a member that closes leaves at the next view, and one
// that dies once it has been silent for Suspect. A second process under a
// name the group holds fails to join with ErrDuplicateName. Node.View
// reports the member's current view. Elastic groups are for fleets of tens
// to hundreds of members: every member hears every heartbeat.
//
// Not yet elastic: Monitor (its members are still fixed), and a member that
// runs an epoch before it installs a view that should serve it runs that
// epoch over its older view (see member/view, "Epochs").
//
// # Failures
//
// A member that has sent a neighbour nothing for Config.Suspect/5 sends it
// a heartbeat (an unasked-for pong), so a neighbour goes silent only when
// messages are lost or it is not running. A neighbour silent for
// Config.Suspect/4 is probed (ping, pong); one silent for Config.Suspect
// despite the probes is declared dead: this member
// excludes it (flow algorithms then compute the aggregate of the survivors;
// Push-Sum has lost whatever it sent there, and fails with ErrInputLost)
// and the dead set spreads. A
// member that hears from a member it declared dead tells it so, and that one
// stops taking part and waits Suspect for the result: it returns the
// result if the result covers it (the root decided before the
// declaration), ErrExcluded otherwise. If the root dies, the next lowest member takes over
// as soon as its certificate is complete; Paxos makes it propose any result
// the old root may already have had chosen.
//
// Silence is not death when the member itself could not have heard: a
// member that was not running (starved of CPU, stopped) forgives its
// neighbours the silence of that stretch, and so does one whose endpoint is
// offline (transport.Endpoint.Online: its NATS server went away and it is
// reconnecting). A server restart therefore only delays an operation, as
// long as the members' contexts outlast it. Nor is the silence of every
// neighbour at once: a member that hears nobody for Suspect/2 takes itself
// to be the one cut off (a server frozen with its connections open) and
// declares nobody dead until it hears someone again, and then forgives
// the others the same stretch (member.Stats.Isolations). Nor is a silence
// that live members have already shown: a member that hears a neighbour
// again after a silence of s waits at least 2s before it declares any
// neighbour dead, up to member.MaxSilence times Suspect (a loaded broker
// holds messages back; member.Stats.Slowest).
//
// Failures are crash-stop or slowness; a member that was only slow (paused
// longer than Suspect) and finds itself declared dead returns ErrExcluded,
// never a result that does not cover it. A member that finds itself the
// only one alive never decides alone, and no result is taken that covers
// less than a majority of the group. A process killed and started again
// under the same ID while an operation is under way is crash-recovery,
// not crash-stop: it keeps that promise only with Config.StateFile, where
// the member keeps its Paxos votes (member.HardState); without one, it has
// forgotten them and two members may return different results. With
// Push-Sum or Push-Cancel-Flow, which would count a restarted member's
// input twice, the file also records that the member began an operation,
// and the member sits out the first operation after its restart
// (ErrRestarted).
//
// # Errors
//
// Bad input (NaN or Inf, an empty vector) is refused before anything is
// sent. Members that disagree on the vector length end the operation with
// ErrGroupMismatch and tell the others. Members configured differently
// never exchange a message (the configuration hash differs), but their
// transports tell each other how they are configured (configuration
// notices, transport.Endpoint.Foreign): a member that at least half of
// its group (N/2 of its own N) say run another configuration, more than
// it has heard from under its own, is the odd one out and fails every
// operation at once with ErrGroupMismatch, naming the setting ("… run a
// configuration with nodes=8 where this member has nodes=9"); the others
// stop waiting for it, as for a member that left, and their results name
// it absent. In a group split evenly every member fails. A member
// configured with a much larger N than the group it meets hears from too
// few to judge, and fails only at its deadline. When the
// context ends first, the operation returns ErrNotConverged with this
// member's own estimate, which the others do not share. Foreign and
// malformed messages are dropped and counted (Stats, and transport.Stats).
package aggregate
