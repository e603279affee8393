package sim_test

import (
	"context"
	"testing"

	"github.com/gossipreduce/gossipreduce/sim"
)

// BenchmarkDESPushSumHypercube1024 measures the discrete-event simulator on
// the workload of the foundation issue: Push-Sum on a 1024-node hypercube
// until every node is 1e-11-accurate. It reports simulated events per
// second of wall time.
func BenchmarkDESPushSumHypercube1024(b *testing.B) {
	cfg := sim.Config{Overlay: hypercube(10), Epsilon: 1e-11}
	var events int64
	b.ReportAllocs()
	for i := range b.N {
		cfg.Seed = uint64(i)
		r, err := sim.Run(context.Background(), cfg)
		if err != nil || !r.Converged {
			b.Fatalf("run %d: %v %+v", i, err, r.Reason)
		}
		events += r.Events
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(events)/float64(b.N), "events/run")
}
