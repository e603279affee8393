package aggregate_test

import (
	"context"
	"testing"
	"time"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
	"github.com/gossipreduce/gossipreduce/internal/livegroup"
	"github.com/gossipreduce/gossipreduce/transport"
)

// BenchmarkLargeVector is one Average of 16 members in one process, over
// the in-memory transport, on vectors of 100,000 components: the runtime's
// own cost of each finite algorithm for large vectors (the bench command
// adds NATS). Compare the sub-benchmarks in one run, with benchstat.
func BenchmarkLargeVector(b *testing.B) {
	const n, k = 16, 100_000
	inputs := gossiptest.Inputs(n, k, 1)
	for _, name := range []string{"exchange", "exchange-chunked", "rdb", "rhd", "ring"} {
		b.Run(name, func(b *testing.B) {
			tr, err := transport.NewMemory(transport.MemoryOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer tr.Close()
			g, err := livegroup.Join(context.Background(), tr, aggregate.Config{Group: "lv", Algorithm: name}, n, livegroup.None)
			if err != nil {
				b.Fatal(err)
			}
			defer g.Close()
			for b.Loop() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				o := g.Average(ctx, inputs)
				cancel()
				if v := o.Check(); v.Err != nil {
					b.Fatal(v.Err)
				}
			}
			sent, ops := 0, 0
			for _, nd := range g.Nodes {
				st := nd.Stats()
				sent, ops = sent+st.Sent, ops+st.Operations
			}
			b.ReportMetric(float64(sent)/float64(ops), "msgs/member")
		})
	}
}
