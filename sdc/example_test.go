package sdc_test

import (
	"context"
	"fmt"

	"github.com/gossipreduce/gossipreduce/sdc"
	"github.com/gossipreduce/gossipreduce/sim"
	"github.com/gossipreduce/gossipreduce/topology"
)

func ExampleFlipBit() {
	fmt.Println(sdc.FlipBit(0.75, 63), sdc.FlipBit(0.75, 52), sdc.FlipBit(0.75, 51))
	// Output: -0.75 1.5 0.5
}

func ExampleNewSingle() {
	// Flip bit 55 of a flow value at a random node of 32, once the first
	// node has sent 150 messages (thesis 4.3.2). Give each run its own
	// copy with Fresh.
	s, err := sdc.NewSingle(55, sdc.Value, 150, 32)
	if err != nil {
		panic(err)
	}
	fmt.Println(s)
	// Output: single(bit=55 target=value after=150 nodes=32)
}

// An injector in a simulation: one flip of the exponent's top bit (62) in
// a flow value of PFCC on a 32-node hypercube, after 150 messages, and the
// same flip under Push-Sum, which has no checksum to catch it.
func ExampleSingle_inASimulation() {
	cube, err := topology.Hypercube(32)
	if err != nil {
		panic(err)
	}
	for _, algorithm := range []string{"pfcc", "ps"} {
		flip, err := sdc.NewSingle(62, sdc.Value, 150, 32)
		if err != nil {
			panic(err)
		}
		res, err := sim.Run(context.Background(), sim.Config{
			Algorithm: algorithm,
			Overlay:   cube,
			Epsilon:   1e-12,
			Seed:      7,
			MaxMsgs:   5000,
			Injector:  flip,
		})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %d flip, within ε: %v\n", algorithm, len(flip.Flips()), res.Converged && res.MaxRelError <= 1e-12)
	}
	// Output:
	// pfcc: 1 flip, within ε: true
	// ps: 1 flip, within ε: false
}
