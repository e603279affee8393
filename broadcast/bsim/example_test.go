package bsim_test

import (
	"context"
	"fmt"

	"github.com/gossipreduce/gossipreduce/broadcast"
	"github.com/gossipreduce/gossipreduce/broadcast/bsim"
)

// A hundred simulated broadcasts over 4096 processes, 1 % of them failed:
// checked correction after an interleaved binomial tree colors everyone.
func ExampleCampaign() {
	s, _ := broadcast.ParseScheme("tree:binomial")
	c, _ := broadcast.ParseCorrection("checked")
	plan, err := broadcast.NewPlan(broadcast.Spec{Nodes: 4096, Scheme: s, Correction: c, Model: broadcast.LogP{L: 2, O: 1}})
	if err != nil {
		panic(err)
	}
	sum, err := bsim.Campaign{Plan: plan, Faults: 41, Runs: 100, Seed: 1}.Run(context.Background())
	if err != nil {
		panic(err)
	}
	start, _ := plan.CorrectionStart()
	fmt.Println("correction starts at", start)
	fmt.Println("runs leaving a process uncolored:", sum.UncoloredRuns)
	fmt.Println("L_SCC within Lemma 3's bounds:", sum.Correction.Max <= 8+2*sum.GMax.Max+1)
	// Output:
	// correction starts at 48
	// runs leaving a process uncolored: 0
	// L_SCC within Lemma 3's bounds: true
}

// Corrected gossip's choice of T for N = 1024, L = O = 1 with the paper's
// tie rule and one O of margin (the paper's figures 3 and 5 report 24 for
// OCG and 25 for CCG).
func ExampleOptimalGossipTime() {
	m := bsim.GossipModel{Nodes: 1024, Model: broadcast.LogP{L: 1, O: 1}, Delta: broadcast.DefaultDelta}
	ocg, _ := bsim.OptimalGossipTime(m, bsim.GossipOpportunistic)
	ccg, _ := bsim.OptimalGossipTime(m, bsim.GossipChecked)
	fmt.Println("OCG", ocg.T, "minimisers", ocg.Ties)
	fmt.Println("CCG", ccg.T, "minimisers", ccg.Ties)
	// Output:
	// OCG 24 minimisers [23 24]
	// CCG 27 minimisers [24 26]
}
