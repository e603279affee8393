package natsserver_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/gossipreduce/gossipreduce/transport/natsserver"
)

// Start an embedded NATS server, connect a transport to it, let two nodes
// of a group exchange a message, and close both. This server has no
// listener at all: the connection is an in-process pipe. Without
// InProcess it listens on a free loopback port (ClientURL), for other
// processes too.
func ExampleStartEmbedded() {
	ctx := context.Background()
	srv, err := natsserver.StartEmbedded(ctx, natsserver.EmbeddedOptions{InProcess: true})
	if err != nil {
		log.Fatal(err)
	}
	tr, err := srv.Connect(ctx, transport.NATSOptions{})
	if err != nil {
		log.Fatal(err)
	}

	g := transport.Group{Name: "demo", ConfigHash: 0xC0FFEE}
	a, err := tr.Open(ctx, g, 0)
	if err != nil {
		log.Fatal(err)
	}
	b, err := tr.Open(ctx, g, 1)
	if err != nil {
		log.Fatal(err)
	}
	err = a.Send(ctx, gossip.Message{From: 0, To: 1, Kind: gossip.KindPush, Epoch: 1, Payload: []float64{21, 0.5}})
	if err != nil {
		log.Fatal(err)
	}
	m := <-b.Messages()
	fmt.Println(g.Subject(1), m)
	fmt.Printf("%+v\n", tr.Stats())

	// The transport first (it closes its nodes), then the server.
	if err := tr.Close(); err != nil {
		log.Fatal(err)
	}
	srv.Shutdown()
	// Output:
	// gossipreduce.demo.1 push 0->1 epoch=1 tag=0 [21 0.5]
	// {Sent:1 Received:1 Lost:0 Crashed:0 Malformed:0 Foreign:0 Forged:0 Replayed:0 Overflow:0 Unsent:0 Probes:1 Answers:1 Sessions:2 Claims:2 Duplicates:0 Fragments:0 Incomplete:0 Notices:0}
}

// A client given every URL of a cluster moves to another server when its
// own goes away, and its nodes' traffic resumes there.
func ExampleStartCluster() {
	ctx := context.Background()
	c, err := natsserver.StartCluster(ctx, 3, natsserver.ClusterOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Shutdown()
	tr, err := transport.Connect(ctx, c.URLs(), transport.NATSOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
	before := tr.Conn().ConnectedUrl()
	for i := range c.Size() {
		if c.URLs()[i] == before {
			c.Server(i).Shutdown() // kill the server the client is on
		}
	}
	for !tr.Conn().IsConnected() || tr.Conn().ConnectedUrl() == before {
		time.Sleep(time.Millisecond)
	}
	fmt.Println("moved to another server:", tr.Conn().ConnectedUrl() != before)
	// Output: moved to another server: true
}
