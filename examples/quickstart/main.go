// Quickstart: 16 members in one process average their numbers over an
// embedded NATS server, and all get the same answer.
package main

import (
	"context"
	"fmt"
	"log"
	"sync"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/gossipreduce/gossipreduce/transport/natsserver"
)

func main() {
	ctx := context.Background()
	srv, err := natsserver.StartEmbedded(ctx, natsserver.EmbeddedOptions{})
	check(err)
	defer srv.Shutdown()
	tr, err := srv.Connect(ctx, transport.NATSOptions{})
	check(err)
	defer tr.Close()

	var wg sync.WaitGroup
	for id := range 16 {
		node, err := aggregate.Join(ctx, tr, aggregate.Config{Group: "quickstart", ID: gossip.NodeID(id), Nodes: 16})
		check(err)
		defer node.Close()
		wg.Go(func() {
			res, err := node.Average(ctx, []float64{float64(id)}) // 0, 1, …, 15: the average is 7.5
			check(err)
			fmt.Printf("member %2d: average %.12f (%d members)\n", id, res.Value[0], res.Live)
		})
	}
	wg.Wait()
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
