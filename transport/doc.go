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
// as raw IEEE 754 bits, an optional attachment and an optional MAC). An
// endpoint drops and counts anything that does not decode
// (Stats.Malformed) or carries another wire version, configuration hash or
// addressee (Stats.Foreign); it never delivers such a message. Filtering by
// epoch is the runtime's job: the machine rejects other epochs.
//
// # Message authentication
//
// With a group key ([Options.Key]) every message carries an HMAC-SHA256
// tag over all its bytes, so that a publisher without the key cannot inject
// flows into the group: a message without a valid tag is dropped and
// counted in Stats.Forged, and an endpoint without a key drops a tagged
// message as foreign (a group configured half with and half without a key
// fails visibly). The tag authenticates; it neither encrypts nor stops the
// replay of a recorded message of the same group and epoch (the wire
// format, documented with [WireVersion], says what a replay does to each
// algorithm). NATS permissions on the subject prefix ([Group.Prefix])
// and TLS do the rest: a group under the prefix "acme.metrics" needs
// publish and subscribe rights on "acme.metrics.<group>.>" only.
//
// # The embedded server and clusters
//
// [StartEmbedded] runs a NATS server inside the process, on 127.0.0.1 only
// (a free port by default) or with no listener at all (InProcess), without
// signal handlers or logs, optionally requiring a token, a user and
// password, nkeys, or TLS with client certificates; Shutdown waits until it
// has stopped. The command "gossipreduce server" runs one on its own so
// that a multi-process run needs nothing else installed. [StartCluster]
// runs several, routed to one another on loopback, for failover tests: a
// client given every URL ([Cluster.URLs]) moves to another server when its
// own goes away, restores its subscriptions there, and the group's traffic
// resumes; [Cluster.Restart] brings a server back on the same ports.
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
