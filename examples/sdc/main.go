// Command sdc is a bit-flip study to copy and adapt: it flips one bit of a
// flow's value at every bit position in Push-Flow, PFLC and PFCC on a
// 32-node hypercube (thesis figures 4.8, 4.10 and 4.11) and draws the
// maximum relative error over bit positions into sdc.png.
//
//	go run ./examples/sdc            # 20 runs per bit, about half a minute
//	go run ./examples/sdc -runs 100  # the thesis's 100
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/gossipreduce/gossipreduce/sdc"
	"github.com/gossipreduce/gossipreduce/sdc/campaign"
	"github.com/gossipreduce/gossipreduce/topology"
)

func main() {
	runs := flag.Int("runs", 20, "runs per bit position")
	out := flag.String("out", "sdc.png", "figure to write (.png or .svg)")
	flag.Parse()
	if err := study(*runs, *out); err != nil {
		slog.Error("sdc study failed", "err", err)
		os.Exit(1)
	}
}

func study(runs int, out string) error {
	g, err := topology.Hypercube(32)
	if err != nil {
		return err
	}
	bits := make([]int, 64)
	for b := range bits {
		bits[b] = b
	}
	s := campaign.Sweep{
		Common: campaign.Common{
			Algorithms: []string{"pf", "pflc", "pfcc"},
			Overlay:    g,
			Epsilon:    1e-14,
			Runs:       runs,
			Seed:       1,   // run i uses seed 1+i: replay any run with Runs 1
			MaxMsgs:    500, // the thesis's cap
		},
		Bits:    bits,
		Targets: []sdc.Target{sdc.Value},
		After:   campaign.DefaultAfter, // flip once the first node has sent 150 messages
	}
	res, err := s.Run(context.Background())
	if err != nil {
		return err
	}
	for _, p := range res.Points {
		if p.ConvergedRuns < p.Runs {
			fmt.Printf("%-5s bit %2d: %d of %d runs missed eps (max error %.2g, replay seed %d)\n",
				p.Algo, p.Bit, p.Runs-p.ConvergedRuns, p.Runs, p.MaxRelError, p.WorstSeed)
		}
	}
	title := fmt.Sprintf("one flipped bit in a flow value, hypercube 32, eps 1e-14, %d runs per bit", runs)
	if err := campaign.PlotErrors(res.Points, 1e-14, title, out); err != nil {
		return err
	}
	fmt.Println("wrote", out)
	return nil
}
