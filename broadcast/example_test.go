package broadcast_test

import (
	"fmt"

	"github.com/gossipreduce/gossipreduce/broadcast"
	"github.com/gossipreduce/gossipreduce/gossip"
)

// The Lamé tree of order 3 over 9 processes (corrected trees, figure 5).
func ExampleNewTree() {
	t, err := broadcast.NewTree(broadcast.TreeSpec{Kind: broadcast.Lame, K: 3}, 9, broadcast.LogP{L: 1, O: 1})
	if err != nil {
		panic(err)
	}
	for v := gossip.NodeID(0); v < 3; v++ {
		fmt.Println(v, t.Children(nil, v))
	}
	fmt.Println("interleaved:", t.CheckInterleaved() == nil, "latency:", t.Deadline(broadcast.LogP{L: 1, O: 1}))
	// Output:
	// 0 [1 2 3 4 6]
	// 1 [5 7]
	// 2 [8]
	// interleaved: true latency: 7
}

// How a runtime drives nodes: every tick each node may send one message;
// a message is received 2o+L ticks after it was sent. Here 16 processes,
// process 5 dead, and process 0 broadcasting one value under epoch 1.
func ExampleNode() {
	s, _ := broadcast.ParseScheme("tree:binomial")
	c, _ := broadcast.ParseCorrection("checked")
	plan, err := broadcast.NewPlan(broadcast.Spec{Nodes: 16, Scheme: s, Correction: c, Model: broadcast.LogP{L: 2, O: 1}})
	if err != nil {
		panic(err)
	}
	nodes := make([]*broadcast.Node, 16)
	for i := range nodes {
		nodes[i], _ = broadcast.NewNode(plan, broadcast.NodeConfig{ID: gossip.NodeID(i), Clock: broadcast.ClockFromMessages})
	}
	inbox := map[int64][]gossip.Message{}
	if err := nodes[0].Broadcast(0, 1, []float64{42}); err != nil {
		panic(err)
	}
	delivered := 0
	var out []gossip.Message
	var got []broadcast.Delivery
	for now := int64(0); now < 60; now++ {
		for _, m := range inbox[now] {
			if m.To != 5 {
				_ = nodes[m.To].Step(now, m)
			}
		}
		for i, n := range nodes {
			if i == 5 {
				continue
			}
			out = n.Poll(now, out[:0])
			inbox[now+4] = append(inbox[now+4], out...)
			got = n.Deliveries(got[:0])
			delivered += len(got)
		}
	}
	fmt.Println("delivered to", delivered, "of 15 live processes")
	// Output:
	// delivered to 15 of 15 live processes
}
