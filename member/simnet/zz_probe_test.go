package simnet

import (
	"fmt"
	"testing"
	"time"

	"github.com/gossipreduce/gossipreduce/gossip"
)

func TestZZProbe(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		net, _ := New(Config{Topology: "hypercube", Algorithm: "exchange", Nodes: 8, Seed: seed, Suspect: 200 * time.Millisecond, Loss: 0.2})
		net.Inject(gossip.Message{From: 0, To: 7, Kind: gossip.KindControl, Epoch: 1, Tag: ^uint64(0) - 3}, 50*time.Microsecond)
		in := make([][]float64, 8)
		for i := range in {
			in[i] = []float64{float64(i + 1)}
		}
		outs := net.Run(1, in, nil, 10*time.Second)
		o := outs[7]
		fmt.Printf("seed=%d x: err=%v live=%d others live=%d took=%v\n", seed, o.Err != nil, o.Result.Live, outs[1].Result.Live, net.Now())
	}
}
