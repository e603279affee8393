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

// Four nodes average vectors of 7 components by chunked exchange. In the
// first pass each node sends half of its vector (4 of its 8 words, the
// weight included), then a quarter, then the quarter it reduced and the
// half it holds: 4 messages and 12 words instead of recursive doubling's
// 2 messages of 8 words, for the ring's bytes when vectors are large.
// The second pass adds 2 vouches a node.
func ExampleNewChunked() {
	g, err := topology.Parse("complete", 4)
	if err != nil {
		panic(err)
	}
	var ms []*exchange.Machine
	var queue []gossip.Message
	for i := range 4 {
		v := make([]float64, 7)
		for c := range v {
			v[c] = float64(i*c + i)
		}
		m, err := exchange.NewChunked(gossip.Config{ID: gossip.NodeID(i), Overlay: g, Value: v})
		if err != nil {
			panic(err)
		}
		ms = append(ms, m)
		queue = m.Tick(queue)
	}
	sent := len(queue)
	for len(queue) > 0 {
		msg := queue[0]
		queue = queue[1:]
		n := len(queue)
		if queue, err = ms[msg.To].Step(msg, queue); err != nil {
			panic(err)
		}
		sent += len(queue) - n
	}
	for _, m := range ms {
		fmt.Println(m.ID(), m.Done(), m.Estimate(nil))
	}
	fmt.Println("messages", sent)
	// Output:
	// 0 true [1.5 3 4.5 6 7.5 9 10.5]
	// 1 true [1.5 3 4.5 6 7.5 9 10.5]
	// 2 true [1.5 3 4.5 6 7.5 9 10.5]
	// 3 true [1.5 3 4.5 6 7.5 9 10.5]
	// messages 24
}
