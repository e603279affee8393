// Package transport moves gossip messages between the nodes of a live run:
// over NATS (an external server or cluster, or a server embedded in the
// process) or in memory for tests. It is the client side only: running a
// NATS server in the process is package natsserver's, and a program that
// connects to a server somebody else runs need not import that package
// (nor compile nats-server).
//
// # The seam
//
// A [Transport] opens one [Endpoint] per node (Open(ctx, group, id)); one
// transport may host every node of a group (the run command) or a single one
// (the node command). The goroutine driving a node's gossip.Machine sends
// with [Endpoint.Send] and receives from the [Endpoint.Messages] channel,
// selecting on it together with its clock and context. Delivery is best
// effort: gossip tolerates loss, so nothing ever blocks on a slow receiver.
// Its buffer full, an endpoint drops arriving messages and counts them.
//
// Two implementations share the endpoint code and so the semantics:
// [NATS] (from [Connect], [ConnectInProcess], [NewNATS], or natsserver's
// Server.Connect) and [Memory] (from
// [NewMemory]), which adds per-link delays, crashed nodes, a wiretap and
// raw injection for tests. Both inject message loss at Send with a seeded source
// ([Options.Loss], [Options.Seed]), and both count what they send, deliver
// and drop ([Stats]).
//
// # Subjects and the wire
//
// Node i of group g receives on the NATS subject "<prefix>.<g>.<i>", the
// prefix defaulting to "gossipreduce", so "nats sub 'gossipreduce.>'" shows
// a run's traffic ([Group.Subject]). Each message is one NATS message in the
// compact binary format of [Encode] and [Decode]: a version, the group's
// configuration hash, the session fields (below), then the message (kind,
// from, to, epoch, tag, payload as raw IEEE 754 bits, an optional
// attachment and an optional MAC). An endpoint drops and counts anything
// that does not decode (Stats.Malformed) or carries another wire version,
// configuration hash or addressee (Stats.Foreign); it never delivers such
// a message. An endpoint whose Group has a Describe answers a message of
// another configuration hash with a configuration notice, so that the
// layer above can tell a misconfigured member why it hears nobody
// ([Endpoint.Foreign]). Filtering by epoch is the runtime's job: the machine rejects
// other epochs.
//
// # Fragments
//
// A message may carry up to [MaxPayload] words and [MaxAttach] bytes (a
// vector of a million components with the runtime's estimate of it, and
// the runtime's certificate), far more than a NATS server's max_payload
// (1 MiB by default). An encoded message
// longer than the frame limit (for NATS the limit the server announced to
// the connection, read at every send; for Memory [MemoryOptions.MaxFrame])
// travels as several NATS messages, its fragments, each with a CRC-32C;
// the receiving endpoint reassembles them before any other check, so the
// MAC, the session fields and every count above apply to the message as
// a whole. A fragment lost or corrupted in flight (the checksum catches
// it: Stats.Malformed) means the message never completes: the layers
// above see a lost message, which gossip repairs as any other loss.
// Reassembly memory is bounded per endpoint by [Options.Reassembly]
// (default [DefaultReassembly]) and two incomplete messages per sender;
// what is given up to stay within them is counted in Stats.Incomplete.
// Stats.Fragments counts the fragments sent. The format is in fragment.go.
//
// # Message authentication
//
// With a group key ([Options.Key]) every message carries an HMAC-SHA256
// tag over all its bytes, so that a publisher without the key cannot inject
// flows into the group: a message without a valid tag is dropped and
// counted in Stats.Forged, and an endpoint without a key drops a tagged
// message as foreign (a group configured half with and half without a key
// fails visibly). The tag authenticates, and covers the session fields
// below, so that a recorded message cannot be replayed into a later run or
// twice into the same one (the wire format, documented with
// [WireVersion], says exactly what is and is not protected); it does not
// encrypt. NATS permissions on the subject prefix ([Group.Prefix]) and
// TLS do the rest: a group under the prefix "acme.metrics" needs publish
// and subscribe rights on "acme.metrics.<group>.>" only.
//
// # Sessions
//
// Every endpoint draws a random 64-bit incarnation when it is opened: a
// node closed and opened again, in the same process or another, is a new
// incarnation. Every message names its sender's incarnation, the
// incarnation the sender believes its receiver has, and a sequence number
// that increases over the messages one endpoint sends to one node. An
// endpoint delivers only messages bound to its own incarnation, each
// sequence number of a sender once, within a window of [ReplayWindow]:
// anything else (a message of an earlier run, sent to a previous
// incarnation of the node, or a duplicate) is dropped and counted in
// Stats.Replayed. This runs with and without a group key; without one it
// keeps runs and restarted nodes from mixing their messages by accident,
// but anyone who can publish can forge any message.
//
// Endpoints learn each other's incarnations by themselves. The first Send
// to a node whose incarnation is unknown publishes a probe ("I am X; tell
// me yours") and queues the message, at most [SessionQueue] per peer (the
// oldest is dropped first, counted in Stats.Unsent); later Sends probe
// again, at most every 20 ms, while no answer has come. An endpoint
// answers a probe with a probe answer ("I am Y", bound to the prober's
// incarnation), at most once per 10 ms per peer (and once more for an
// incarnation other than the one it knows for the peer, so that replayed
// probes cannot starve the current one), and learns nothing from the
// probe, which may be a replay. The answer, or any message of the
// peer bound to this endpoint's incarnation, teaches the endpoint the
// peer's incarnation and sends the queue in order. A node that restarts
// is relearned the same way: a message bound to its previous incarnation
// is dropped, and its new incarnation answers the sender, which then sends
// to the new one (the message that found the restarted node is lost, as
// gossip tolerates). Probes and answers are never delivered, never dropped
// by injected loss ([Options.Loss]), and counted apart from the
// application's messages (Stats.Probes, Stats.Answers, Stats.Sessions).
// A queued message waits as long as the peer stays silent: until a later
// Send probes a node that has opened since, or the node itself sends.
//
// # Claims
//
// Two endpoints of the same node of a group (two processes started with the
// same id) would both receive the node's messages and both send as it: its
// peers would flip between the two incarnations, and one input would go
// missing from results, silently. Endpoints refuse this instead, on both
// sides. On one transport, Open refuses a node another endpoint of the
// transport holds (the error wraps [ErrDuplicateID] and
// gossip.ErrInvalidConfig), and the holder is marked as below: the [Memory]
// transport sees every endpoint of its network, so this is all it does.
// Across NATS connections, endpoints find each other with claims, handshake
// messages a node sends to itself on its own subject (from = to, sequence
// number 0, counted in Stats.Claims):
//
//   - A NATS Open, once subscribed, publishes a claim: "I am incarnation C
//     of node i" (bound to incarnation 0), and waits a moment for an
//     answer: twice the round trip of the flush that confirms the claim
//     reached the server, at least 5 ms, at most 100 ms, or until its
//     context ends.
//   - An open endpoint H of node i that receives a claim of another
//     incarnation answers it with a claim message bound to C. The claim
//     may be a replay of an old one, so H believes nothing yet.
//   - C, receiving a claim message bound to its own incarnation from
//     another one, knows that H holds the node now (C's incarnation did not
//     exist before C opened): it marks itself and confirms with a claim
//     message bound to H, which marks H. During Open this makes Open close
//     the endpoint and fail with an error wrapping ErrDuplicateID; an answer
//     that comes later marks the open endpoint just the same.
//
// A marked endpoint counts the other incarnation in Stats.Duplicates and
// logs it at error level ([Options.Logger]); from then on [Endpoint.Err]
// and every Send report ErrDuplicateID, its queued messages are discarded
// and it no longer answers probes (it still answers claims, so that later
// duplicates are refused too, and still delivers what arrives). The
// error is permanent: the node is misconfigured, and should be closed.
// An endpoint replies at most once to each other incarnation (it
// remembers the last 16), so the exchange ends, and answers at most 4
// claims per 10 ms.
//
// A closed endpoint answers nothing: a node closed and opened again, in
// the same process or another, or opened after its process died, is not
// refused. One whose previous endpoint was still open (a process still
// shutting down) may be, as the two did overlap: open it again.
//
// Replays cannot refuse anybody: a replayed claim is answered, but its
// incarnation is gone and never confirms; a claim message bound to an
// endpoint's incarnation is made only by an endpoint that was open at the
// same time. With a group key, only members can make claim messages;
// without one, anyone who can publish can forge them, as any message, and
// so refuse a node. The detection is best effort, like everything in the
// package: a lost claim or answer, an answer rate-limited by a flood of
// claims, or (in a NATS cluster) a claimer whose subscription has not
// reached the holder's server yet, lets a duplicate through undetected,
// as before.
//
// # The embedded server and clusters
//
// Package natsserver runs a NATS server inside the process, on loopback or
// with no listener at all (the command "gossipreduce server" runs one so
// that a multi-process run needs nothing else installed), and routed
// clusters of them for failover tests; its Server.Connect returns a
// transport of this package. [ConnectInProcess] connects to any
// nats-server running in the process through its in-process pipe.
//
// # Authentication and TLS
//
// [NATSOptions] passes credentials through to the server: a token, a user
// and password, an nkey seed file or a credentials file, and TLS from PEM
// files ([TLSFiles]: the CA, a client certificate and key, a server name)
// or a tls.Config. Connecting fails with an error that says what went
// wrong: one wrapping [ErrAuth] when the server refuses the credentials
// (`NATS authentication failed: the server refused user "alice" with a
// password`), one wrapping [ErrTLS] when TLS cannot be set up (the
// server's certificate does not verify, or the server rejects the client's
// certificate or its absence).
package transport
