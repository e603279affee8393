package exchange_test

import (
	"testing"

	"github.com/gossipreduce/gossipreduce/exchange"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
	"github.com/gossipreduce/gossipreduce/rhd"
)

// The machines' own cost (no transport) of one operation of 16 members
// over vectors of 100,000 components, delivered in a random order: chunked
// and plain exchange against rhd, the chunked pass without its repairs.
// Compare with benchstat; the bench command measures the whole runtime.

func benchOperation(b *testing.B, mk func(gossip.Config) (gossip.Machine, error)) {
	const n, k = 16, 100000
	inputs := gossiptest.Inputs(n, k, 1)
	for b.Loop() {
		ms, err := gossiptest.Build(gossiptest.Complete(n), inputs, gossip.Average, 1, mk)
		if err != nil {
			b.Fatal(err)
		}
		net := gossiptest.NewNet(ms, 1)
		net.Start()
		for done := 0; done < n; {
			ok, err := net.DeliverOne()
			if err != nil || !ok {
				b.Fatalf("stopped: %v", err)
			}
			done = 0
			for _, m := range ms {
				if m.(gossip.Finisher).Done() {
					done++
				}
			}
		}
	}
}

func BenchmarkChunked(b *testing.B) {
	benchOperation(b, func(c gossip.Config) (gossip.Machine, error) { return exchange.NewChunked(c) })
}

func BenchmarkPlain(b *testing.B) {
	benchOperation(b, func(c gossip.Config) (gossip.Machine, error) { return exchange.New(c) })
}

func BenchmarkRHD(b *testing.B) {
	benchOperation(b, func(c gossip.Config) (gossip.Machine, error) { return rhd.New(c) })
}
