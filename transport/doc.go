// Package transport moves gossip messages between the nodes of a live run:
// over NATS (an external server or cluster, or a server embedded in the
// process) or in memory for tests.
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
// [NATS] (from [Connect], [Server.Connect] or [NewNATS]) and [Memory] (from
// [NewMemory]), which adds per-link delays, crashed nodes and raw injection
// for tests. Both inject message loss at Send with a seeded source
// ([Options.Loss], [Options.Seed]), and both count what they send, deliver
// and drop ([Stats]).
//
// # Subjects and the wire
//
// Node i of group g receives on the NATS subject "<prefix>.<g>.<i>", the
// prefix defaulting to "gossipreduce", so "nats sub 'gossipreduce.>'" shows
// a run's traffic ([Group.Subject]). Each message is one NATS message in the
// compact binary format of [Encode] and [Decode]: a version, the group's
// configuration hash, then the message (kind, from, to, epoch, tag, payload
// as raw IEEE 754 bits). An endpoint drops and counts anything that does not
// decode (Stats.Malformed) or carries another wire version, configuration
// hash or addressee (Stats.Foreign); it never delivers such a message.
// Filtering by epoch is the runtime's job: the machine rejects other epochs.
//
// # The embedded server
//
// [StartEmbedded] runs a NATS server inside the process, on 127.0.0.1 only
// (a free port by default) or with no listener at all (InProcess), without
// signal handlers or logs, optionally requiring a token; Shutdown waits
// until it has stopped. The command "gossipreduce server" runs one on its
// own so that a multi-process run needs nothing else installed.
//
// # Authentication and TLS
//
// [NATSOptions] carries a token or user and password; its Extra field takes
// any nats.go option (TLS with CA and client certificates, nkeys, creds
// files). A server refusing the credentials yields an error wrapping
// [ErrAuth].
package transport
