package bsim

import (
	"fmt"

	"github.com/gossipreduce/gossipreduce/broadcast"
	"github.com/gossipreduce/gossipreduce/broadcast/internal/approx"
	"github.com/gossipreduce/gossipreduce/gossip"
)

// GossipAlgorithm selects which of corrected gossip's latency
// approximations picks the gossip time T.
type GossipAlgorithm uint8

// The approximations of corrected gossip.
const (
	// GossipOpportunistic minimises T + 2L + (2+K̂)O (equation 3).
	GossipOpportunistic GossipAlgorithm = iota
	// GossipChecked minimises T + 2L + (2+2K̂)O (equation 4).
	GossipChecked
	// GossipFailProof minimises T + 4Ĝ·O + L - 13O (equation 5), derived
	// in the paper for f = 1 with chains of V = 5 g-nodes; for larger f
	// this package uses V = 2f+3 with the same constants.
	GossipFailProof
)

// approxOf maps the algorithms to the model's.
var approxOf = [...]approx.Algorithm{
	GossipOpportunistic: approx.Opportunistic,
	GossipChecked:       approx.Checked,
	GossipFailProof:     approx.FailProof,
}

// GossipModel is what the approximations depend on.
type GossipModel struct {
	Nodes int            // N, the ring
	Live  int            // n, the live processes (0 means N)
	Model broadcast.LogP // L and O
	Delta float64        // δ, the accepted chance of a longer gap
	F     int            // f, for GossipFailProof
}

// GossipChoice is the result of OptimalGossipTime.
type GossipChoice struct {
	// T is the gossip time to use: ArgMin plus a margin of one O, as the
	// paper adds in all its experiments ("we recommend adding a small
	// margin to the selected T").
	T int
	// ArgMin is the minimiser of the approximation chosen by the paper's
	// tie rule: of all minimisers (Ties), the one that withstands the
	// largest reduction in δ, which is the one of smallest Tail.
	ArgMin  int
	K       int     // K̂ (Ĝ for fail-proof) at ArgMin
	Latency float64 // the minimised objective
	Tail    float64 // probability mass beyond K̂ at ArgMin (below δ)
	// Ties lists every T reaching the minimum, in increasing order.
	Ties []int
}

// ExpectedColored returns c(j·O) for j = 0 … steps, the expected number of
// processes colored by gossip at time j·O (corrected gossip, Lemma 1):
//
//	c(t+O) = c(t) + (n - c(t)) · (1 - (1 - 1/(N-1))^c(t-L-O)),
//
// with c(0) = 1 and c(t) = 0 for t < 0. When O does not divide L the
// sender count is taken at the last multiple of O before t-L-O.
func ExpectedColored(m GossipModel, steps int) ([]float64, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	return m.approx().Colored(steps), nil
}

func (m GossipModel) validate() error {
	if m.Nodes < 2 {
		return fmt.Errorf("bsim: %w: gossip needs N ≥ 2, got %d", gossip.ErrInvalidConfig, m.Nodes)
	}
	if m.Live < 0 || m.Live > m.Nodes {
		return fmt.Errorf("bsim: %w: %d live of %d", gossip.ErrInvalidConfig, m.Live, m.Nodes)
	}
	if !(m.Delta > 0 && m.Delta < 1) {
		return fmt.Errorf("bsim: %w: delta %v outside (0, 1)", gossip.ErrInvalidConfig, m.Delta)
	}
	return m.Model.Validate()
}

func (m GossipModel) approx() approx.Model {
	return approx.Model{Nodes: m.Nodes, Live: m.Live, L: m.Model.L, O: m.Model.O, Delta: m.Delta, F: m.F}
}

// MaxGapQuantile returns K̂, the smallest K such that the probability that
// the longest chain of consecutive uncolored processes after gossip is
// longer than K is below δ, given c colored processes out of N (corrected
// gossip, equation 2), and that probability.
func MaxGapQuantile(nodes int, c, delta float64) (k int, tail float64) {
	return approx.MaxGapQuantile(nodes, c, delta)
}

// ChainQuantile returns Ĝ_V for fail-proof correction (corrected gossip,
// appendix B): the smallest G such that the probability that some run of
// G consecutive processes holding exactly V g-nodes (the outer two at its
// ends) is longer than Ĝ is at most δ, given c colored of N, and that
// probability. q(G,V) = (c/N)^V (1-c/N)^(G-V) (G-2)!/((V-2)!(G-V)!).
func ChainQuantile(nodes int, c, delta float64, v int) (g int, tail float64) {
	return approx.ChainQuantile(nodes, c, delta, v)
}

// OptimalGossipTime picks the gossip time T that minimises the latency
// approximation of alg (corrected gossip, equations 3, 4 and 5), plus one
// O of margin. When several T reach the minimum it follows the paper ("we
// recommend to select among them the T that can withstand the largest
// reduction in δ"): a minimiser keeps its K̂, hence its latency, until δ
// falls to its Tail, so the minimiser of smallest Tail is chosen. For
// N = n = 1024, L = O = 1 and δ = 6.93·10⁻⁷ this gives T = 24 for OCG
// (minimisers 23 and 24, tails 3.1·10⁻⁷ and 5.9·10⁻⁷: 23 is kept), the
// paper's figure, and T = 27 for CCG (minimisers 24 and 26, tails
// 5.9·10⁻⁷ and 3.4·10⁻⁷: 26 is kept) where the paper reports 25, which
// is the smallest minimiser plus O. A [broadcast.Plan] for gossip with no
// GossipT chooses T the same way.
func OptimalGossipTime(m GossipModel, alg GossipAlgorithm) (GossipChoice, error) {
	if err := m.validate(); err != nil {
		return GossipChoice{}, err
	}
	if int(alg) >= len(approxOf) {
		return GossipChoice{}, fmt.Errorf("bsim: %w: unknown gossip algorithm %d", gossip.ErrInvalidConfig, alg)
	}
	if alg == GossipFailProof && (m.F < 1 || m.F > broadcast.MaxFailProof) {
		return GossipChoice{}, fmt.Errorf("bsim: %w: fail-proof approximation needs 1 ≤ f ≤ %d", gossip.ErrInvalidConfig, broadcast.MaxFailProof)
	}
	ch, err := approx.Optimal(m.approx(), approxOf[alg])
	if err != nil {
		return GossipChoice{}, fmt.Errorf("bsim: %w", err)
	}
	return GossipChoice(ch), nil
}
