package simnet

import (
	"context"
	"testing"
)

// BenchmarkMeasure simulates one operation of the runtime (PFCC on a
// hypercube, seed 1) per iteration and reports what an event costs, the
// figure that decides how long the 65,536-member rows of docs/live.md
// take. The events are the same on every run, so ns/event compares builds
// (benchstat) as long as the protocol is unchanged; the crash case is the
// one whose large rows are slowest. An event of a group this small finds
// most of its member's state in cache: at 65,536 members one cost about
// four times as much (docs/live.md, "Where the crash row's CPU goes").
func BenchmarkMeasure(b *testing.B) {
	for _, bc := range []struct {
		name  string
		nodes int
		crash float64
	}{
		{"1024", 1024, 0},
		{"1024crash", 1024, 0.01},
		{"4096crash", 4096, 0.01},
	} {
		b.Run(bc.name, func(b *testing.B) {
			events := 0
			for b.Loop() {
				rep, err := Measure(context.Background(), MeasureConfig{
					Net:   Config{Nodes: bc.nodes, Topology: "hypercube", Algorithm: "pfcc", Seed: 1},
					Crash: bc.crash,
				})
				if err != nil {
					b.Fatal(err)
				}
				events += rep.Events
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
			b.ReportMetric(float64(events)/float64(b.N), "events/op")
		})
	}
}
