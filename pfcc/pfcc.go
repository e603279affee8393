// Package pfcc implements Push-Flow with cooperative correction (PFCC,
// thesis Algorithm 6). Like PFLC it carries a checksum c = Σ_k x_k + w in
// the input, every flow and every message, but it repairs instead of
// zeroing: a node whose estimate fails its checksum sends each corrupted flow
// to its neighbour (line 6), and a node that receives a corrupted flow
// answers with its own (line 16), which overwrites the corrupted one. Only
// when both ends of an edge are corrupted is the flow reset to zero. Both
// kinds of answer are extra messages, sent from the same Step. PFCC hardly
// falls back in convergence after a flip (thesis 3.2, figures 4.11, 4.13 and
// 4.14).
//
// One refinement over the pseudo-code: while a corrupted flow waits for its
// neighbour's answer, the node leaves it out of the estimate it halves and
// pushes, so the corruption does not spread into the pushed flow (the
// estimate reported by Estimate still includes it, so a node waiting for a
// repair never looks converged).
//
// The machine is package pushflow's checked engine with cooperative
// correction; see that package for the message format, the handling of
// concurrent messages and the repair of the input (thesis 3.3). [New] uses
// acknowledged flows, which the live runtime's convergence certificate
// relies on (Settled); [NewPublished] uses the flows of the thesis's
// Algorithm 3, which any later message on an edge repairs after a loss but
// concurrent messages disturb (docs/sdc.md).
package pfcc

import (
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/pushflow"
)

// DefaultTau is the relative checksum threshold used when gossip.Config.Tau
// is zero; see package pflc.
const DefaultTau = 1e-11

// New returns node cfg.ID's PFCC machine.
func New(cfg gossip.Config) (*pushflow.Machine, error) {
	return pushflow.NewChecked(cfg, pushflow.Cooperative, DefaultTau)
}

// NewPublished returns node cfg.ID's PFCC machine on the thesis's own flows
// (pushflow.NewCheckedPublished): a received flow always overwrites the
// local one. Not for the live runtime: it tracks no push in transit, so it
// always reports itself settled.
func NewPublished(cfg gossip.Config) (*pushflow.Machine, error) {
	return pushflow.NewCheckedPublished(cfg, pushflow.Cooperative, DefaultTau)
}
