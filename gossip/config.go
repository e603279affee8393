package gossip

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// WeightMode selects what the aggregate y = Σx/Σw computes (thesis 2.2.1).
type WeightMode uint8

const (
	// Average sets every weight to 1: y is the element-wise average.
	Average WeightMode = iota
	// Sum sets every weight to 1/N, so the weights add up to 1 and y is the
	// element-wise sum. After nodes are excluded the weights of the
	// survivors add up to less than 1, and y becomes N/survivors times the
	// survivors' sum; use Average and multiply where that matters.
	Sum
)

// String returns "average" or "sum".
func (m WeightMode) String() string {
	switch m {
	case Average:
		return "average"
	case Sum:
		return "sum"
	}
	return fmt.Sprintf("WeightMode(%d)", uint8(m))
}

// ParseWeightMode reads "average" (or "avg") and "sum".
func ParseWeightMode(s string) (WeightMode, error) {
	switch s {
	case "average", "avg", "":
		return Average, nil
	case "sum":
		return Sum, nil
	}
	return 0, fmt.Errorf("gossip: %w: weight mode %q (want average or sum)", ErrInvalidConfig, s)
}

// Neighborhood is the overlay a node gossips on: who its neighbours are.
// Package topology implements it for every supported graph. For directed
// graphs Neighbor lists the nodes this node may send to.
type Neighborhood interface {
	// Len is the number of nodes N.
	Len() int
	// Degree is the number of neighbours of v.
	Degree(v NodeID) int
	// Neighbor returns the k-th neighbour of v, 0 ≤ k < Degree(v), in a
	// fixed order.
	Neighbor(v NodeID, k int) NodeID
}

// Config is what every algorithm needs to build one node's Machine.
type Config struct {
	// ID is this node, 0 ≤ ID < Overlay.Len().
	ID NodeID
	// Overlay gives the neighbours. Required.
	Overlay Neighborhood
	// Value is this node's input x_i, k ≥ 1 components, all finite. The
	// machine copies it.
	Value []float64
	// Mode selects average or sum (the initial weight).
	Mode WeightMode
	// Epoch tags every message, so that repeated operations on one group
	// never mix. Messages of another epoch are rejected.
	Epoch uint64
	// Rand is the machine's only source of randomness. Nil selects a PCG
	// seeded with (Epoch, ID), which is deterministic but the same for every
	// run; simulators pass a source derived from the run's seed.
	Rand rand.Source
	// Tau is the checksum threshold of PFLC and PFCC; zero selects the
	// algorithm's default. Other algorithms ignore it.
	Tau float64
	// Resend makes the flow algorithms send a flow again, asking for an
	// answer, when a push to that neighbour has gone unacknowledged for
	// this many of the node's steps (Tick and Step calls), so that a lost
	// message cannot leave mass in transit for long. Zero never resends,
	// as the thesis's algorithms. The live runtime sets it.
	Resend int
	// Revive makes the flow algorithms with acknowledged flows (pushflow's
	// New, pflc and pfcc) push on in place of every push that a later
	// message from its sender shows never came, as they would have on
	// the push: each push received is answered with one, and a lost push
	// otherwise ends one of those in circulation for good. False keeps
	// the thesis's algorithms, whose simulated runs push on every Tick.
	// The live runtime sets it.
	Revive bool
	// Extremes are this node's inputs to an element-wise maximum, all
	// finite, reduced beside Value by the machines that take them (package
	// exchange: see algo.Spec.Extremes). The others ignore them; the live
	// runtime reduces extremes for gossip machines in its certificate.
	Extremes []float64
}

// Validate reports the first problem that would keep c from running, wrapped
// in ErrInvalidConfig, ErrLength or ErrNotFinite.
func (c *Config) Validate() error {
	if c.Overlay == nil {
		return fmt.Errorf("gossip: %w: no overlay", ErrInvalidConfig)
	}
	n := c.Overlay.Len()
	if n < 1 {
		return fmt.Errorf("gossip: %w: overlay has %d nodes", ErrInvalidConfig, n)
	}
	if int64(c.ID) >= int64(n) {
		return fmt.Errorf("gossip: %w: node id %d out of range [0, %d)", ErrInvalidConfig, c.ID, n)
	}
	if len(c.Value) == 0 {
		return fmt.Errorf("gossip: %w: empty value vector", ErrLength)
	}
	if err := CheckFinite(c.Value); err != nil {
		return fmt.Errorf("node %d input: %w", c.ID, err)
	}
	if err := CheckFinite(c.Extremes); err != nil {
		return fmt.Errorf("node %d extremes: %w", c.ID, err)
	}
	if c.Mode != Average && c.Mode != Sum {
		return fmt.Errorf("gossip: %w: weight mode %d", ErrInvalidConfig, c.Mode)
	}
	if c.Resend < 0 {
		return fmt.Errorf("gossip: %w: resend %d must be ≥ 0", ErrInvalidConfig, c.Resend)
	}
	if c.Tau < 0 || math.IsNaN(c.Tau) || math.IsInf(c.Tau, 0) {
		return fmt.Errorf("gossip: %w: tau %v must be finite and ≥ 0", ErrInvalidConfig, c.Tau)
	}
	return nil
}

// Weight returns the node's initial weight w_i under c.Mode: 1 for Average,
// 1/N for Sum.
func (c *Config) Weight() float64 {
	if c.Mode == Sum {
		return 1 / float64(c.Overlay.Len())
	}
	return 1
}

// Source returns c.Rand, or the deterministic default when it is nil.
func (c *Config) Source() rand.Source {
	if c.Rand != nil {
		return c.Rand
	}
	return rand.NewPCG(c.Epoch, uint64(c.ID))
}

// CheckFinite returns an error wrapping ErrNotFinite naming the first NaN or
// infinite component of v.
func CheckFinite(v []float64) error {
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("gossip: %w: component %d is %v", ErrNotFinite, i, x)
		}
	}
	return nil
}
