package ring_test

import (
	"fmt"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/ring"
	"github.com/gossipreduce/gossipreduce/topology"
)

// Four nodes average vectors of five components around a ring, with a
// message queue standing in for the network. The six words (five values
// and the weight) are cut into slices of one or two words; each node
// sends six messages, three of reduce-scatter and three of all-gather,
// and every node ends with the same bits.
func Example() {
	g, err := topology.Parse("complete", 4)
	if err != nil {
		panic(err)
	}
	var ms []*ring.Machine
	var queue []gossip.Message
	for i := range 4 {
		x := float64(10 * i)
		m, err := ring.New(gossip.Config{ID: gossip.NodeID(i), Overlay: g, Value: []float64{x, x + 1, x + 2, x + 3, x + 4}})
		if err != nil {
			panic(err)
		}
		ms = append(ms, m)
		queue = m.Tick(queue)
	}
	sent := make([]int, 4)
	for len(queue) > 0 {
		msg := queue[0]
		queue = queue[1:]
		sent[msg.From]++
		if queue, err = ms[msg.To].Step(msg, queue); err != nil {
			panic(err)
		}
	}
	for i, m := range ms {
		fmt.Println(m.ID(), m.Done(), sent[i], m.Estimate(nil))
	}
	// Output:
	// 0 true 6 [15 16 17 18 19]
	// 1 true 6 [15 16 17 18 19]
	// 2 true 6 [15 16 17 18 19]
	// 3 true 6 [15 16 17 18 19]
}
