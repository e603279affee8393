// Command figures regenerates every figure of docs/ from the JSON data
// beside them (docs/figures/*.json) and from topology/modeldata.json:
//
//	go run ./cmd/figures
//
// run from the repository root. It draws whatever series the data files
// hold, so that new algorithms in them show up without a change here.
//
// With -simulate-models it first reruns the simulations behind
// topology/modeldata.json, the data of topology's fitted cost models (a few
// minutes on two cores), and prints every point with its seeds.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	simulate := flag.Bool("simulate-models", false, "rerun the simulations behind topology/modeldata.json first")
	syncRuns := flag.Int("sync-runs", 100, "with -simulate-models: runs per point of the synchronous models")
	asyncRuns := flag.Int("async-runs", 20, "with -simulate-models: runs per point of the asynchronous models")
	seed := flag.Uint64("seed", 1, "with -simulate-models: the first seed of every point")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *simulate {
		fmt.Printf("simulating the model data, seeds %d…, %d sync and %d async runs per point\n", *seed, *syncRuns, *asyncRuns)
		if err := simulateModels(ctx, "topology/modeldata.json", *syncRuns, *asyncRuns, *seed, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if err := drawAll("docs/figures", os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
