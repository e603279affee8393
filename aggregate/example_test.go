package aggregate_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/gossipreduce/gossipreduce/transport/natsserver"
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

// Members of an elastic group join by name, with no ids and no size: they
// agree on a view of whoever is there (MinMembers: wait for three) and sum
// over it. Members may join and leave later; each operation runs over the
// view of its time, which its Result names.
func ExampleJoin_byName() {
	tr, _ := transport.NewMemory(transport.MemoryOptions{})
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	names := []string{"web-7f9c", "web-2a1d", "web-c03e"}
	results := make([]aggregate.Result, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			node, err := aggregate.Join(ctx, tr, aggregate.Config{Group: "fleet", Name: name, MinMembers: 3, Epsilon: 1e-12})
			if err != nil {
				fmt.Println(err)
				return
			}
			defer node.Stop()
			res, err := node.Reduce(ctx, aggregate.Request{Epoch: 1, Values: []float64{float64(10 * (i + 1))}})
			if err != nil {
				fmt.Println(err)
				return
			}
			results[i] = res
		})
	}
	wg.Wait()
	same := true
	for _, r := range results {
		same = same && r.View == results[0].View && r.Value[0] == results[0].Value[0]
	}
	fmt.Printf("average %.9f over %v, the same view and bits at every member: %v\n", results[0].Value[0], results[0].Names, same)
	// Output: average 20.000000000 over [web-2a1d web-7f9c web-c03e], the same view and bits at every member: true
}

// The README's snippet, compiled: an embedded NATS server, nothing to
// install; three members average two numbers each. Any NATS server or
// cluster serves instead (transport.Connect).
func ExampleNode_Average() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv, err := natsserver.StartEmbedded(ctx, natsserver.EmbeddedOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Shutdown()

	inputs := [][]float64{{10, 1}, {20, 2}, {60, 3}} // latency in ms, queue length
	results := make([]aggregate.Result, len(inputs))
	var wg sync.WaitGroup
	for id := range inputs {
		tr, err := srv.Connect(ctx, transport.NATSOptions{})
		if err != nil {
			fmt.Println(err)
			return
		}
		defer tr.Close()
		node, err := aggregate.Join(ctx, tr, aggregate.Config{Group: "fleet", ID: gossip.NodeID(id), Nodes: len(inputs)})
		if err != nil {
			fmt.Println(err)
			return
		}
		defer node.Close()
		wg.Go(func() {
			res, err := node.Average(ctx, inputs[id])
			if err != nil {
				fmt.Println(err) // wraps aggregate.ErrNotConverged if ctx ended first
				return
			}
			results[id] = res
		})
	}
	wg.Wait()
	fmt.Printf("average %.6f, the same at every member: %v, %d live\n",
		results[0].Value, results[0].Value[0] == results[2].Value[0] && results[1].Value[1] == results[2].Value[1], results[0].Live)
	// Output: average [30.000000 2.000000], the same at every member: true, 3 live
}

// Reduce takes an average and element-wise maxima in one operation; a
// minimum is the maximum of the negated values. Here with dimension
// exchange (the default), then with PFCC.
func ExampleNode_Reduce() {
	tr, _ := transport.NewMemory(transport.MemoryOptions{})
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	loads := []float64{0.5, 0.9, 0.1}
	for _, alg := range []string{"exchange", "pfcc"} {
		results := make([]aggregate.Result, len(loads))
		var wg sync.WaitGroup
		for id, load := range loads {
			node, err := aggregate.Join(ctx, tr, aggregate.Config{Group: "reduce-" + alg, ID: gossip.NodeID(id), Nodes: len(loads), Algorithm: alg})
			if err != nil {
				fmt.Println(err)
				return
			}
			defer node.Close()
			req := aggregate.Request{Values: []float64{load}, Extremes: []float64{load, -load}}
			wg.Go(func() {
				res, err := node.Reduce(ctx, req)
				if err != nil {
					fmt.Println(err)
					return
				}
				results[id] = res
			})
		}
		wg.Wait()
		r := results[0]
		fmt.Printf("%s: mean %.4f, max %.1f, min %.1f\n", alg, r.Value[0], r.Extremes[0], -r.Extremes[1])
	}
	// Output:
	// exchange: mean 0.5000, max 0.9, min 0.1
	// pfcc: mean 0.5000, max 0.9, min 0.1
}

// Sum counts across the group: here the requests each member served, and
// the members themselves (a 1 from each). Every member gets the same
// totals; Live says how many inputs they cover. A member leaves with
// Leave, which first answers members still at the operation.
func ExampleNode_Sum() {
	tr, _ := transport.NewMemory(transport.MemoryOptions{})
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	served := []float64{120, 80, 200, 0}
	results := make([]aggregate.Result, len(served))
	var wg sync.WaitGroup
	for id, n := range served {
		node, err := aggregate.Join(ctx, tr, aggregate.Config{Group: "sum", ID: gossip.NodeID(id), Nodes: len(served)})
		if err != nil {
			fmt.Println(err)
			return
		}
		wg.Go(func() {
			res, err := node.Sum(ctx, []float64{n, 1})
			if err != nil {
				fmt.Println(err)
				return
			}
			results[id] = res
			leave, done := context.WithTimeout(ctx, 100*time.Millisecond)
			defer done()
			node.Leave(leave)
		})
	}
	wg.Wait()
	r := results[3]
	fmt.Printf("requests %.0f, members %.0f, inputs covered %d\n", r.Value[0], r.Value[1], r.Live)
	// Output: requests 400, members 4, inputs covered 4
}

// A monitor keeps cluster-wide figures of local metrics up to date without
// a collector: every Interval, and when any member asks, with Refresh.
func ExampleStartMonitor() {
	tr, _ := transport.NewMemory(transport.MemoryOptions{})
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	queue := []float64{3, 5, 10}
	mons := make([]*aggregate.Monitor, len(queue))
	for id, q := range queue {
		m, err := aggregate.StartMonitor(ctx, tr, aggregate.MonitorConfig{
			Config:   aggregate.Config{Group: "monitor", ID: gossip.NodeID(id), Nodes: len(queue), Epsilon: 1e-12},
			Metrics:  []string{"queue_length"},
			Integers: []string{"queue_length"}, // whole numbers: the sum is exact
			Interval: time.Hour,                // aggregate on Refresh only, for the example
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		defer m.Close()
		if err := m.Set("queue_length", q); err != nil {
			fmt.Println(err)
			return
		}
		mons[id] = m
	}
	// One member asks; the others take part as soon as they hear of it.
	snap, err := mons[0].Refresh(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	q := snap.Metrics["queue_length"]
	fmt.Printf("members %d, sum %v (exact: %v), mean %.3f, min %v, max %v\n", q.Count, q.Sum, q.Exact, q.Mean, q.Min, q.Max)
	// Output: members 3, sum 18 (exact: true), mean 6.000, min 3, max 10
}
