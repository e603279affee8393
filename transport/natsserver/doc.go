// Package natsserver runs NATS servers inside the process, for the
// transport package's NATS client: the zero-setup embedded server, and a
// routed cluster of them for failover tests.
//
// A program that connects to a NATS server somebody else runs needs only
// package transport ([transport.Connect]) and does not import this one,
// which compiles all of nats-server into the program; the split is what
// keeps a client-only program, and packages such as aggregate, free of it.
//
// # The embedded server
//
// [StartEmbedded] runs a NATS server on 127.0.0.1 only (a free port by
// default) or with no listener at all ([EmbeddedOptions].InProcess),
// without signal handlers or logs, optionally requiring a token, a user
// and password, nkeys, or TLS with client certificates; Shutdown waits
// until it has stopped. [Server.Connect] returns a transport connected to
// it with its own credentials. The command "gossipreduce server" runs one
// on its own so that a multi-process run needs nothing else installed.
//
// # Clusters
//
// [StartCluster] runs several servers, routed to one another on loopback:
// a client given every URL ([Cluster.URLs]) moves to another server when
// its own goes away, restores its subscriptions there, and the group's
// traffic resumes; [Cluster.Restart] brings a server back on the same
// ports.
//
// # The seam with transport
//
// This package uses only what transport exports to every program, so the
// dependency runs one way: natsserver imports transport, never the
// reverse. Nothing of transport's is exported for this package alone: the
// two entries it needs besides Connect, [transport.ConnectInProcess] and
// [transport.NATSOptions].SkipNoKeyWarning, serve as well a program that
// configures nats-server itself, or that warns about a missing key in its
// own words. The options that describe a connection or a certificate stay in
// transport, where the client needs them ([transport.TLSFiles] configures
// a server's TLS here as a client's there). [Server.Connect] is
// [transport.Connect] to the server's URL, without the missing-key
// warning ([transport.NATSOptions].SkipNoKeyWarning), or
// [transport.ConnectInProcess] for an in-process server. Credentials an
// in-process server would refuse are refused here, before the pipe (over
// it the server's own refusal would reach the client as a closed pipe,
// after the server's write deadline), with the error nats.go gives for
// refused credentials, which the client reports as any refusal, wrapping
// [transport.ErrAuth]. Errors that arise here start with "natsserver: ";
// errors of connecting are the client's and start with "transport: ".
package natsserver
