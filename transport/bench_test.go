package transport_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
)

// BenchmarkThroughput measures messages per second through each transport
// in one process: Send (encode, loss draw, publish), the network (for NATS a
// round trip through the embedded server), and delivery (decode, checks,
// the Messages channel), with 16 endpoints on one connection. One sender
// goroutine sends from node i%16 to node (i+1)%16 and keeps at most window
// messages in flight; one goroutine per endpoint drains its channel.
func BenchmarkThroughput(b *testing.B) {
	const nodes, window = 16, 512
	for _, words := range []int{2, 65} {
		for _, im := range impls() {
			b.Run(fmt.Sprintf("%s/payload=%d", im.name, words), func(b *testing.B) {
				tr, _ := im.open(b, transport.Options{Buffer: window})
				eps := openNodes(b, tr, transport.Group{Name: "bench"}, nodes)
				arrived := make(chan struct{}, window)
				var wg sync.WaitGroup
				for _, ep := range eps {
					wg.Go(func() {
						for range ep.Messages() {
							arrived <- struct{}{}
						}
					})
				}
				ctx := testCtx(b)
				payload := make([]float64, words)
				inFlight := 0
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					if inFlight == window {
						<-arrived
						inFlight--
					}
					from := gossip.NodeID(i % nodes)
					m := gossip.Message{From: from, To: (from + 1) % nodes, Kind: gossip.KindPush, Tag: uint64(i), Payload: payload}
					if err := eps[from].Send(ctx, m); err != nil {
						b.Fatal(err)
					}
					inFlight++
				}
				for ; inFlight > 0; inFlight-- {
					<-arrived
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
				require.NoError(b, tr.Close())
				wg.Wait()
				st := tr.Stats()
				require.Equal(b, uint64(b.N), st.Received, "every message arrived: %+v", st)
			})
		}
	}
}
