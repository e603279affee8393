package transport_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/gossipreduce/gossipreduce/transport/natsserver"
)

// A node started with "gossipreduce node" connects to a server, or a
// cluster, by URL. Here the server is an embedded one (package natsserver)
// on a free loopback port.
func ExampleConnect() {
	ctx := context.Background()
	srv, err := natsserver.StartEmbedded(ctx, natsserver.EmbeddedOptions{Token: "s3cret"})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Shutdown()

	tr, err := transport.Connect(ctx, []string{srv.ClientURL()}, transport.NATSOptions{Token: "s3cret"})
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
	fmt.Println(tr.Conn().IsConnected())
	// Output: true
}

// A program that configures nats-server itself connects to it through
// its in-process pipe: here a server without any listener.
func ExampleConnectInProcess() {
	ctx := context.Background()
	ns, err := server.NewServer(&server.Options{DontListen: true, NoSigs: true, NoLog: true})
	if err != nil {
		log.Fatal(err)
	}
	ns.Start()
	defer ns.WaitForShutdown()
	defer ns.Shutdown()
	if !ns.ReadyForConnections(10 * time.Second) {
		log.Fatal("the server did not start")
	}

	tr, err := transport.ConnectInProcess(ctx, ns, transport.NATSOptions{Name: "in-process"})
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
	fmt.Println(tr.Conn().IsConnected(), ns.NumClients())
	// Output: true 1
}

// The in-memory transport injects loss and crashes for tests and
// experiments; its losses are replayed exactly by the same seed.
func ExampleNewMemory() {
	ctx := context.Background()
	tr, err := transport.NewMemory(transport.MemoryOptions{Options: transport.Options{Loss: 0.25, Seed: 42}})
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()

	g := transport.Group{Name: "lossy"}
	a, err := tr.Open(ctx, g, 0)
	if err != nil {
		log.Fatal(err)
	}
	b, err := tr.Open(ctx, g, 1)
	if err != nil {
		log.Fatal(err)
	}
	for i := range 100 {
		if err := a.Send(ctx, gossip.Message{From: 0, To: 1, Kind: gossip.KindPush, Tag: uint64(i)}); err != nil {
			log.Fatal(err)
		}
	}
	tr.Crash(g, 1)
	if err := a.Send(ctx, gossip.Message{From: 0, To: 1, Kind: gossip.KindPush}); err != nil {
		log.Fatal(err)
	}
	st := b.Stats()
	// About a quarter is lost; seed 42 fixes exactly which messages.
	fmt.Println("lost:", a.Stats().Lost, "received:", st.Received, "crashed:", st.Crashed)
	// Output: lost: 23 received: 77 crashed: 1
}

// Every message of a group carries its configuration hash, and the
// session of its sender and receiver: a node drops (and counts) messages of
// another configuration, and messages bound to another of its incarnations.
func ExampleDecode() {
	m := gossip.Message{From: 3, To: 4, Kind: gossip.KindFlow, Epoch: 9, Payload: []float64{1.5, 1}}
	b, err := transport.Encode(nil, transport.Header{ConfigHash: 7, Incarnation: 0xA1, PeerIncarnation: 0xB2, Seq: 1}, m)
	if err != nil {
		log.Fatal(err)
	}
	h, got, err := transport.Decode(b)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d bytes: hash %d, incarnation %x to %x, seq %d: %v\n", len(b), h.ConfigHash, h.Incarnation, h.PeerIncarnation, h.Seq, got)
	_, _, err = transport.Decode(b[:len(b)-1])
	fmt.Println(err)
	// Output:
	// 50 bytes: hash 7, incarnation a1 to b2, seq 1: flow 3->4 epoch=9 tag=0 [1.5 1]
	// transport: malformed message: payload length 2 needs 16 bytes, have 15
}

// A group key makes every message carry a MAC: a message injected without
// one (or with a wrong one, or altered in transit) is dropped and counted
// as forged, and the group's own traffic flows as before.
func ExampleOptions_key() {
	ctx := context.Background()
	key := []byte("0123456789abcdef0123456789abcdef") // in practice: transport.ReadKeyFile
	tr, err := transport.NewMemory(transport.MemoryOptions{Options: transport.Options{Key: key}})
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
	g := transport.Group{Name: "metrics", ConfigHash: 7}
	a, err := tr.Open(ctx, g, 0)
	if err != nil {
		log.Fatal(err)
	}
	b, err := tr.Open(ctx, g, 1)
	if err != nil {
		log.Fatal(err)
	}

	// A foreign publisher without the key crafts a flow for node 1.
	forged, err := transport.Encode(nil, transport.Header{ConfigHash: 7}, gossip.Message{From: 0, To: 1, Kind: gossip.KindFlow, Payload: []float64{1e9, 1}})
	if err != nil {
		log.Fatal(err)
	}
	tr.Inject(g.Subject(1), forged)

	if err := a.Send(ctx, gossip.Message{From: 0, To: 1, Kind: gossip.KindFlow, Payload: []float64{2, 1}}); err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-b.Messages())
	fmt.Printf("received %d, forged %d\n", b.Stats().Received, b.Stats().Forged)
	// Output:
	// flow 0->1 epoch=0 tag=0 [2 1]
	// received 1, forged 1
}
