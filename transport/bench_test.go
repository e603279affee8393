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
// messages in flight; one goroutine per endpoint drains its channel. With
// mac=on every message is signed and checked under a group key: compare
// mac=on with mac=off of the same transport and payload, in the same run,
// for the MAC's cost.
func BenchmarkThroughput(b *testing.B) {
	const nodes, window = 16, 512
	for _, words := range []int{2, 65} {
		for _, im := range impls() {
			for _, key := range [][]byte{nil, groupKey} {
				mac := "off"
				if key != nil {
					mac = "on"
				}
				b.Run(fmt.Sprintf("%s/payload=%d/mac=%s", im.name, words, mac), func(b *testing.B) {
					throughput(b, im, key, words, nodes, window)
				})
			}
		}
	}
}

func throughput(b *testing.B, im impl, key []byte, words, nodes, window int) {
	tr, _ := im.open(b, transport.Options{Buffer: window, Key: key})
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
		m := gossip.Message{From: from, To: (from + 1) % gossip.NodeID(nodes), Kind: gossip.KindPush, Tag: uint64(i), Payload: payload}
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
}
