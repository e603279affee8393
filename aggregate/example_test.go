package aggregate_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
)

// Four members of a group sum their values over an in-memory transport;
// with NATS, replace the transport by transport.Connect or an embedded
// server (see examples/quickstart).
func ExampleJoin() {
	tr, _ := transport.NewMemory(transport.MemoryOptions{})
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	results := make([]aggregate.Result, 4)
	var wg sync.WaitGroup
	for id := range 4 {
		node, err := aggregate.Join(ctx, tr, aggregate.Config{Group: "example", ID: gossip.NodeID(id), Nodes: 4, Epsilon: 1e-12})
		if err != nil {
			fmt.Println(err)
			return
		}
		defer node.Close()
		wg.Go(func() {
			res, err := node.Sum(ctx, []float64{float64(id + 1)}) // 1 + 2 + 3 + 4
			if err != nil {
				fmt.Println(err)
				return
			}
			results[id] = res
		})
	}
	wg.Wait()
	same := true
	for _, r := range results {
		same = same && r.Value[0] == results[0].Value[0]
	}
	fmt.Printf("sum %.9f, the same at every member: %v, %d live\n", results[0].Value[0], same, results[0].Live)
	// Output: sum 10.000000000, the same at every member: true, 4 live
}
