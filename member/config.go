package member

import (
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/gossipreduce/gossipreduce/algo"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/topology"
)

// Config is one member's protocol configuration, already resolved: package
// aggregate builds it from its user-facing Config (defaults, the overlay,
// its diameter), the runtime simulator from its flags. Every member of a
// group must use the same values except ID, Seed, Injector and Logger.
type Config struct {
	// ID is this member, 0 ≤ ID < Graph.Len().
	ID gossip.NodeID
	// Graph is the overlay; its size is the group size N.
	Graph topology.Graph
	// Algorithm is the gossip (or finite) algorithm every operation runs.
	Algorithm algo.Spec
	// Diameter is Graph's diameter, needed by gossip algorithms and
	// finite ones with a fallback (the agreement threshold θ = ε/(2(D+1))
	// follows from it). Ignored for other finite algorithms.
	Diameter int
	// Epsilon is the target relative accuracy of the result, in (0, 1).
	Epsilon float64
	// Tau is the checksum threshold of pflc and pfcc (0: their default).
	Tau float64
	// Idle is how long a member may go without sending before it takes a
	// gossip step on its own.
	Idle time.Duration
	// Suspect is how long a neighbour may stay silent during an operation
	// before this member declares it dead (it is probed from a quarter of
	// that on). A member sends every neighbour it has sent nothing for
	// Suspect/5 a heartbeat, so silence means lost messages or a member
	// not running. Silence is not death on a busy machine, though: a
	// member that hears a neighbour again after a silence of s waits at
	// least 2s before it declares any neighbour dead, up to MaxSilence
	// times Suspect, and forgets a quarter of s at each operation it
	// begins. The longest such silence is in Stats.Slowest. While more
	// than one neighbour has been silent for over Suspect/2 at once, the
	// wait is doubled (up to MaxSilence times Suspect): several members
	// falling silent together are more likely held up on the way than
	// dead.
	Suspect time.Duration
	// Tick is how often the driver calls Tick. A member whose own ticks
	// come much later than that was not running (a starved or stopped
	// process): the time it missed does not count as its neighbours'
	// silence. Zero turns that correction off.
	Tick time.Duration
	// Seed seeds the member's random choices (with its ID and the epoch).
	Seed uint64
	// Injector, if set, makes the fault injector for each operation.
	Injector func(epoch uint64) gossip.Injector
	// Logger receives debug logs; nil discards them.
	Logger *slog.Logger
	// Authenticated says that messages are authenticated (a group key):
	// a message's From is its sender. Without it, errors that blame a
	// member say that the sender is only what the message claims.
	Authenticated bool
}

// resolved adds what a Config implies.
type resolved struct {
	Config
	n        int
	theta    float64
	need     int
	fallback algo.Spec // Algorithm.Fallback's spec, if it names one
}

func (c Config) resolve() (*resolved, error) {
	switch {
	case c.Graph == nil:
		return nil, fmt.Errorf("member: %w: no overlay", gossip.ErrInvalidConfig)
	case c.Algorithm.New == nil:
		return nil, fmt.Errorf("member: %w: no algorithm", gossip.ErrInvalidConfig)
	case c.Algorithm.CheckRuntime() != nil:
		return nil, c.Algorithm.CheckRuntime()
	case int64(c.ID) >= int64(c.Graph.Len()):
		return nil, fmt.Errorf("member: %w: id %d out of range [0, %d)", gossip.ErrInvalidConfig, c.ID, c.Graph.Len())
	case !(c.Epsilon > 0 && c.Epsilon < 1):
		return nil, fmt.Errorf("member: %w: epsilon %v must be in (0, 1)", gossip.ErrInvalidConfig, c.Epsilon)
	case c.Tau < 0 || math.IsNaN(c.Tau) || math.IsInf(c.Tau, 0):
		return nil, fmt.Errorf("member: %w: tau %v", gossip.ErrInvalidConfig, c.Tau)
	case c.Idle <= 0 || c.Suspect <= 0:
		return nil, fmt.Errorf("member: %w: idle %v, suspect %v must be positive", gossip.ErrInvalidConfig, c.Idle, c.Suspect)
	case c.Diameter < 0:
		return nil, fmt.Errorf("member: %w: diameter %d", gossip.ErrInvalidConfig, c.Diameter)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	r := &resolved{Config: c, n: c.Graph.Len()}
	if c.Algorithm.Fallback != "" {
		fb, err := algo.Lookup(c.Algorithm.Fallback)
		if err != nil {
			return nil, fmt.Errorf("member: %w: fallback of %s: %w", gossip.ErrInvalidConfig, c.Algorithm.Name, err)
		}
		if fb.Finite {
			return nil, fmt.Errorf("member: %w: the fallback of %s, %s, is finite", gossip.ErrInvalidConfig, c.Algorithm.Name, fb.Name)
		}
		r.fallback = fb
	}
	if c.Algorithm.UsesGossip() {
		// Neighbours that agree within θ can still be D·θ apart across the
		// group; the root's estimate lies within the spread of all
		// estimates (α is a convex combination of them), so θ = ε/(2(D+1))
		// leaves a factor two of margin.
		r.theta = c.Epsilon / float64(2*(c.Diameter+1))
		// Agreement must hold across several messages, from several
		// neighbours: up to 8, fewer on sparse overlays.
		r.need = max(3, min(c.Graph.Degree(c.ID), 8))
	}
	return r, nil
}

// Quorum is the number of members a result must cover: a strict majority
// of the group, so that two sides of a partition can never both decide.
func Quorum(n int) int { return n/2 + 1 }

// Defaults is the one place the runtime's defaults live: package aggregate
// and the simulator both fill unset fields from it, so a simulated group
// behaves as a live one configured the same way.
type Defaults struct {
	Topology, Algorithm string
	Epsilon             float64
	Tick, Idle, Suspect time.Duration
}

// Fill sets every empty field of d to its default: the complete overlay,
// exchange, ε 1e-9, a 1 ms tick, Idle 4 ticks, Suspect 1 s.
func (d *Defaults) Fill() {
	if d.Topology == "" {
		d.Topology = "complete"
	}
	if d.Algorithm == "" {
		d.Algorithm = "exchange"
	}
	if d.Epsilon == 0 {
		d.Epsilon = 1e-9
	}
	if d.Tick == 0 {
		d.Tick = time.Millisecond
	}
	if d.Idle == 0 {
		d.Idle = 4 * d.Tick
	}
	if d.Suspect == 0 {
		d.Suspect = time.Second
	}
}

// Overlay returns the overlay a member of a group of n runs gossip on,
// for the topology asked for (topology.Parse's names) and the algorithm.
// It is the topology itself, except for a finite algorithm with a
// fallback (exchange): it uses no edges of its own, only its fallback
// gossips, and where the complete overlay is asked for (the default) its
// fallback runs on the binomial graph of the same members, degree about
// 2·log2 n instead of n−1. PFCC on the complete overlay of 256 members sent
// 4,279 messages per member beside six busy loops and failed 4 of 20 runs;
// on the binomial graph, 258 and none (docs/live.md).
func Overlay(name string, n int, spec algo.Spec) (topology.Graph, error) {
	if spec.Finite && spec.Fallback != "" && name == "complete" {
		name = "bmg"
	}
	return topology.Parse(name, n)
}
