package rhd_test

import (
	"fmt"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/rhd"
	"github.com/gossipreduce/gossipreduce/topology"
)

// Six nodes average vectors of seven components (eight words with the
// weight). Six is not a power of two: nodes 0 and 2 fold their vectors
// into 1 and 3 (one message each) and get the result back; the four
// others halve the vector twice and double it back, four messages each,
// and the folded-into nodes one more for the result.
func Example() {
	g, err := topology.Parse("complete", 6)
	if err != nil {
		panic(err)
	}
	var ms []*rhd.Machine
	var queue []gossip.Message
	for i := range 6 {
		x := make([]float64, 7)
		for c := range x {
			x[c] = float64(6*i + c)
		}
		m, err := rhd.New(gossip.Config{ID: gossip.NodeID(i), Overlay: g, Value: x})
		if err != nil {
			panic(err)
		}
		ms = append(ms, m)
		queue = m.Tick(queue)
	}
	sent := make([]int, 6)
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
	// 0 true 1 [15 16 17 18 19 20 21]
	// 1 true 5 [15 16 17 18 19 20 21]
	// 2 true 1 [15 16 17 18 19 20 21]
	// 3 true 5 [15 16 17 18 19 20 21]
	// 4 true 4 [15 16 17 18 19 20 21]
	// 5 true 4 [15 16 17 18 19 20 21]
}
