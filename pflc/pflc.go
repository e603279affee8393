// Package pflc implements Push-Flow with local correction (PFLC, thesis
// Algorithm 5): Push-Flow whose input, flows and messages carry a third
// component, the checksum c = Σ_k x_k + w. When a node's estimate fails its
// checksum it tests every flow and sets the corrupted ones to zero; a
// received flow that fails its checksum is dropped. The next exchange on the
// edge restores flow conservation, so the computation recovers from a bit
// flip in any bit of a flow or a message, at the price of falling back in
// convergence on the zeroed edge (thesis 3.1, figures 4.10 and 4.13).
//
// The machine is package pushflow's checked engine with local correction;
// see that package for the message format, the handling of concurrent
// messages, the exact input test and the repair of the input from the last
// verified estimate (thesis 3.3). [New] uses acknowledged flows (no mass is
// lost to concurrent messages; the live runtime's engine); [NewPublished]
// uses the flows of the thesis's Algorithm 3, which any later message on an
// edge repairs after a loss but concurrent messages disturb (docs/sdc.md).
package pflc

import (
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/pushflow"
)

// DefaultTau is the relative checksum threshold used when gossip.Config.Tau
// is zero. A triple v passes when |Σx + w - c| ≤ τ·(‖v‖₁ + ‖e‖₁), e being the
// node's last verified estimate. docs/sdc.md gives the measurements behind
// the choice.
const DefaultTau = 1e-11

// New returns node cfg.ID's PFLC machine.
func New(cfg gossip.Config) (*pushflow.Machine, error) {
	return pushflow.NewChecked(cfg, pushflow.Local, DefaultTau)
}

// NewPublished returns node cfg.ID's PFLC machine on the thesis's own flows
// (pushflow.NewCheckedPublished): a received flow always overwrites the
// local one.
func NewPublished(cfg gossip.Config) (*pushflow.Machine, error) {
	return pushflow.NewCheckedPublished(cfg, pushflow.Local, DefaultTau)
}
