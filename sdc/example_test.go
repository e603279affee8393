package sdc_test

import (
	"fmt"

	"github.com/gossipreduce/gossipreduce/sdc"
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
