package exchange_test

import (
	"fmt"

	"github.com/gossipreduce/gossipreduce/exchange"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/topology"
)

// Five nodes average their inputs by dimension exchange, with a message
// queue standing in for the network. Five is not a power of two, so node 0
// is folded: it hands its input to node 1, which exchanges with 2 and 3 …,
// and gets the result back. Every node ends with the same bits.
func Example() {
	g, err := topology.Parse("complete", 5)
	if err != nil {
		panic(err)
	}
	var ms []*exchange.Machine
	var queue []gossip.Message
	for i := range 5 {
		m, err := exchange.New(gossip.Config{ID: gossip.NodeID(i), Overlay: g, Value: []float64{float64(10 * i)}})
		if err != nil {
			panic(err)
		}
		ms = append(ms, m)
		queue = m.Tick(queue)
	}
	for len(queue) > 0 {
		msg := queue[0]
		queue = queue[1:]
		if queue, err = ms[msg.To].Step(msg, queue); err != nil {
			panic(err)
		}
	}
	for _, m := range ms {
		fmt.Println(m.ID(), m.Done(), m.Estimate(nil))
	}
	// Output:
	// 0 true [20]
	// 1 true [20]
	// 2 true [20]
	// 3 true [20]
	// 4 true [20]
}
