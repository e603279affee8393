package broadcast

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gossipreduce/gossipreduce/broadcast/internal/approx"
	"github.com/gossipreduce/gossipreduce/gossip"
)

// SchemeKind is the dissemination scheme.
type SchemeKind uint8

// Dissemination schemes.
const (
	// SchemeTree disseminates over a tree, then corrects (corrected trees).
	SchemeTree SchemeKind = iota + 1
	// SchemeGossip gossips to random processes until time T, then corrects
	// (corrected gossip: OCG, CCG, FCG).
	SchemeGossip
	// SchemeBMG floods the binomial graph: every process forwards the first
	// message it receives to all its neighbours (revoke paper, 3).
	SchemeBMG
	// SchemeAck disseminates over a tree and acknowledges back up it, the
	// traditional baseline (corrected trees, 4.1). A parent that misses an
	// acknowledgment past its timeout adopts the silent child's children.
	SchemeAck
)

// Scheme is a dissemination scheme and, for SchemeTree and SchemeAck, its
// tree.
type Scheme struct {
	Kind SchemeKind
	Tree TreeSpec
}

// String returns the command-line text: "tree:binomial", "tree:kary:4",
// "gossip", "bmg", "ack:binomial", …
func (s Scheme) String() string {
	switch s.Kind {
	case SchemeTree:
		return "tree:" + s.Tree.String()
	case SchemeGossip:
		return "gossip"
	case SchemeBMG:
		return "bmg"
	case SchemeAck:
		return "ack:" + s.Tree.String()
	}
	return "scheme(" + strconv.Itoa(int(s.Kind)) + ")"
}

// ParseScheme reads tree:binomial, tree:kary:K, tree:lame:K, tree:optimal,
// gossip, bmg and ack:<tree> (ack:binomial, ack:kary:K, …). The numbering
// of the tree is set separately (ParseOrder).
func ParseScheme(s string) (Scheme, error) {
	bad := func(why string) (Scheme, error) {
		return Scheme{}, fmt.Errorf("broadcast: %w: scheme %q: %s", gossip.ErrInvalidConfig, s, why)
	}
	switch s {
	case "gossip":
		return Scheme{Kind: SchemeGossip}, nil
	case "bmg":
		return Scheme{Kind: SchemeBMG}, nil
	}
	head, rest, _ := strings.Cut(s, ":")
	var kind SchemeKind
	switch head {
	case "tree":
		kind = SchemeTree
	case "ack":
		kind = SchemeAck
	default:
		return bad("want tree:…, gossip, bmg or ack:…")
	}
	name, param, hasParam := strings.Cut(rest, ":")
	var ts TreeSpec
	switch name {
	case "binomial":
		ts.Kind = Binomial
	case "optimal":
		ts.Kind = Optimal
	case "kary", "lame":
		ts.Kind = KAry
		if name == "lame" {
			ts.Kind = Lame
		}
		if !hasParam {
			return bad(name + " needs a parameter, as in " + head + ":" + name + ":2")
		}
		k, err := strconv.Atoi(param)
		if err != nil {
			return bad("parameter " + strconv.Quote(param) + " is not an integer")
		}
		ts.K = k
		hasParam = false
	default:
		return bad("unknown tree " + strconv.Quote(name) + " (want binomial, kary:K, lame:K or optimal)")
	}
	if hasParam {
		return bad("tree " + name + " takes no parameter")
	}
	if err := ts.validate(); err != nil {
		return Scheme{}, err
	}
	return Scheme{Kind: kind, Tree: ts}, nil
}

// CorrectionKind is the correction algorithm run after dissemination.
type CorrectionKind uint8

// Corrections (corrected gossip III, corrected trees 3.3).
const (
	// CorrectionNone runs dissemination alone.
	CorrectionNone CorrectionKind = iota
	// CorrectionOpportunistic sends D messages in each direction of the
	// ring, alternating left and right.
	CorrectionOpportunistic
	// CorrectionOptimized is opportunistic correction that skips what a
	// received correction message proves covered (corrected trees 3.3): a
	// message from j at distance δ ≤ D on the right makes i stop sending
	// right and skip its first D-δ left messages. The paper applies the
	// rule in both directions, which can leave a process uncovered when
	// two neighbours each rely on the other; this package applies it to
	// messages from the right only (see Machine.onCorrection).
	CorrectionOptimized
	// CorrectionChecked sends left and right until it has sent to the
	// nearest process it heard from in each direction (CCG).
	CorrectionChecked
	// CorrectionFailProof is checked correction that tolerates F failures
	// during the correction (FCG, corrected gossip III.D), with the SOS
	// path for the pathological case.
	CorrectionFailProof
)

// Correction selects the correction and its parameters.
type Correction struct {
	Kind CorrectionKind
	// D is the distance of (optimized) opportunistic correction: messages
	// per direction, or, with Split, in both directions together.
	D int
	// Split divides D between the two directions, ⌊D/2⌋ to the left and
	// the rest to the right, as corrected trees' reference simulator
	// (flogsim) reads its d: the paper's "up to 4 messages in each
	// direction" ran there as 2 each way. Written "opportunistic:4/2".
	Split bool
	// F is the number of failures during the operation that fail-proof
	// correction tolerates.
	F int
	// Synchronized starts the correction at a fixed moment on every
	// process: the fault-free dissemination latency of a tree, T+L+o after
	// gossip. Otherwise (overlapped, trees only) a process corrects as soon
	// as it has sent its tree messages. Gossip and fail-proof correction
	// are always synchronized.
	Synchronized bool
}

// String returns the command-line text: "none", "opportunistic:4",
// "optimized:4", "optimized:4/2" (split), "checked", "checked-overlapped",
// "failproof:1"; the
// overlapped opportunistic and synchronized checked forms are the
// unadorned ones, the others carry "-synchronized" or "-overlapped".
func (c Correction) String() string {
	switch c.Kind {
	case CorrectionNone:
		return "none"
	case CorrectionOpportunistic, CorrectionOptimized:
		name := "opportunistic"
		if c.Kind == CorrectionOptimized {
			name = "optimized"
		}
		if c.Synchronized {
			name += "-synchronized"
		}
		name += ":" + strconv.Itoa(c.D)
		if c.Split {
			name += "/2"
		}
		return name
	case CorrectionChecked:
		if c.Synchronized {
			return "checked"
		}
		return "checked-overlapped"
	case CorrectionFailProof:
		return "failproof:" + strconv.Itoa(c.F)
	}
	return "correction(" + strconv.Itoa(int(c.Kind)) + ")"
}

// ParseCorrection reads none, opportunistic:D, optimized:D (overlapped
// after a tree), opportunistic-synchronized:D, optimized-synchronized:D,
// checked (synchronized), checked-overlapped and failproof:F. The
// opportunistic forms send D messages in each direction; written D/2
// (opportunistic:4/2, optimized-synchronized:5/2, …) they send D in all,
// ⌊D/2⌋ to the left and the rest to the right (Correction.Split).
func ParseCorrection(s string) (Correction, error) {
	bad := func(why string) (Correction, error) {
		return Correction{}, fmt.Errorf("broadcast: %w: correction %q: %s", gossip.ErrInvalidConfig, s, why)
	}
	name, param, hasParam := strings.Cut(s, ":")
	num := func() (int, error) {
		if !hasParam {
			return 0, fmt.Errorf("broadcast: %w: correction %q needs a parameter, as in %s:4", gossip.ErrInvalidConfig, s, name)
		}
		v, err := strconv.Atoi(param)
		if err != nil || v < 1 {
			return 0, fmt.Errorf("broadcast: %w: correction %q: parameter must be a positive integer", gossip.ErrInvalidConfig, s)
		}
		return v, nil
	}
	var c Correction
	switch name {
	case "none":
		c.Kind = CorrectionNone
	case "checked":
		c.Kind, c.Synchronized = CorrectionChecked, true
	case "checked-overlapped":
		c.Kind = CorrectionChecked
	case "opportunistic", "optimized", "opportunistic-synchronized", "optimized-synchronized":
		c.Kind = CorrectionOpportunistic
		if strings.HasPrefix(name, "optimized") {
			c.Kind = CorrectionOptimized
		}
		c.Synchronized = strings.HasSuffix(name, "-synchronized")
		if d, ok := strings.CutSuffix(param, "/2"); ok {
			param, c.Split = d, true
		}
		d, err := num()
		if err != nil {
			return Correction{}, err
		}
		c.D = d
		hasParam = false
	case "failproof":
		c.Kind, c.Synchronized = CorrectionFailProof, true
		f, err := num()
		if err != nil {
			return Correction{}, err
		}
		c.F = f
		hasParam = false
	default:
		return bad("want none, opportunistic:D[/2], optimized:D[/2], checked, checked-overlapped or failproof:F")
	}
	if hasParam {
		return bad(name + " takes no parameter")
	}
	return c, nil
}

// MaxFailProof is the largest F fail-proof correction supports (the ids it
// carries are counted in four bits of the tag).
const MaxFailProof = 13

// DefaultDelta is the δ of corrected gossip's approximations:
// 1-(1-0.5)^(1/10^6), the chance of missing a node that gives about even
// odds that 10^6 broadcasts all succeed (corrected gossip III.B).
const DefaultDelta = 6.9315e-7

// Spec describes a broadcast completely; every process of a group builds its
// machine from the same Spec.
type Spec struct {
	// Nodes is the number of processes N.
	Nodes int
	// Scheme is the dissemination.
	Scheme Scheme
	// Correction follows dissemination (trees and gossip only).
	Correction Correction
	// Model holds the LogP costs L and o in units of local time.
	Model LogP
	// GossipT is the time T at which gossip stops sending: a gossip send
	// is made only if it ends by T. Zero selects T by the approximations
	// of corrected gossip (equations 3, 4 and 5) for Live processes.
	GossipT int
	// Live is the number of live processes n the approximations assume;
	// zero means all N.
	Live int
	// Delta is the δ of the approximations; zero selects DefaultDelta.
	Delta float64
	// SOSTimeout is how long a fail-proof c-node waits, after it was
	// colored, to learn of F+1 g-nodes before it starts the SOS protocol.
	// Zero selects 2·N·o + 2(2o+L), more than a full round of the ring.
	SOSTimeout int64
	// AckTimeout is how long, after it started sending to a child, a
	// process of an acknowledged tree waits for that child's
	// acknowledgment before adopting its children. Zero selects twice the
	// fault-free latency of the acknowledged broadcast.
	AckTimeout int64
}

// Plan is a validated Spec with everything derived from it that all
// processes share: the tree, the correction start, the gossip time. A Plan
// is immutable and safe for concurrent use; build it once and give it to
// every machine of a simulation.
type Plan struct {
	spec  Spec
	n     int32
	o     int64
	l     int64
	hop   int64 // 2o + L
	tree  *Tree
	start int64 // synchronized correction start (broadcast time)
	sync  bool
	gT    int64 // gossip: last moment a send may end
	dl    int32 // opportunistic: messages to the left
	dr    int32 // opportunistic: messages to the right
	// opportunistic: messages each way before clamping to the ring
	reachL, reachR int32
	f              int     // fail-proof
	bmg            []int32 // BMG neighbour offsets in send order
	sos            int64
	ack            int64
	kHat           int // gossip: K̂ (or Ĝ for fail-proof) at the chosen T
}

// NewPlan validates spec and derives the shared plan.
func NewPlan(spec Spec) (*Plan, error) {
	if spec.Nodes < 1 || spec.Nodes > MaxNodes {
		return nil, fmt.Errorf("broadcast: %w: %d processes (want 1 … %d)", gossip.ErrInvalidConfig, spec.Nodes, MaxNodes)
	}
	if err := spec.Model.Validate(); err != nil {
		return nil, err
	}
	if spec.Live < 0 || spec.Live > spec.Nodes {
		return nil, fmt.Errorf("broadcast: %w: %d live of %d processes", gossip.ErrInvalidConfig, spec.Live, spec.Nodes)
	}
	if spec.Delta < 0 || spec.Delta >= 1 || math.IsNaN(spec.Delta) {
		return nil, fmt.Errorf("broadcast: %w: delta %v outside [0, 1)", gossip.ErrInvalidConfig, spec.Delta)
	}
	if spec.GossipT < 0 || spec.SOSTimeout < 0 || spec.AckTimeout < 0 {
		return nil, fmt.Errorf("broadcast: %w: negative T or timeout", gossip.ErrInvalidConfig)
	}
	p := &Plan{
		spec: spec,
		n:    int32(spec.Nodes),
		o:    int64(spec.Model.O),
		l:    int64(spec.Model.L),
		hop:  spec.Model.Hop(),
	}
	c := spec.Correction
	switch c.Kind {
	case CorrectionNone, CorrectionChecked:
	case CorrectionOpportunistic, CorrectionOptimized:
		if c.D < 1 {
			return nil, fmt.Errorf("broadcast: %w: opportunistic correction needs D ≥ 1", gossip.ErrInvalidConfig)
		}
		p.reachL, p.reachR = int32(c.D), int32(c.D)
		if c.Split {
			p.reachL = int32(c.D / 2)
			p.reachR = int32(c.D) - p.reachL
		}
		// Never send to oneself or twice to a process: on a ring of N the
		// other N-1 processes lie at left distances 1 … ⌈(N-1)/2⌉ and right
		// distances 1 … ⌊(N-1)/2⌋.
		p.dl = min(p.reachL, int32(spec.Nodes/2))
		p.dr = min(p.reachR, int32((spec.Nodes-1)/2))
	case CorrectionFailProof:
		if c.F < 1 || c.F > MaxFailProof {
			return nil, fmt.Errorf("broadcast: %w: fail-proof correction needs 1 ≤ F ≤ %d", gossip.ErrInvalidConfig, MaxFailProof)
		}
		p.f = c.F
		c.Synchronized = true
	default:
		return nil, fmt.Errorf("broadcast: %w: unknown correction %d", gossip.ErrInvalidConfig, c.Kind)
	}
	switch spec.Scheme.Kind {
	case SchemeTree, SchemeAck:
		t, err := NewTree(spec.Scheme.Tree, spec.Nodes, spec.Model)
		if err != nil {
			return nil, err
		}
		p.tree = t
		p.start = t.Deadline(spec.Model)
		if spec.Scheme.Kind == SchemeAck && c.Kind != CorrectionNone {
			return nil, fmt.Errorf("broadcast: %w: an acknowledged tree takes no correction", gossip.ErrInvalidConfig)
		}
	case SchemeGossip:
		if spec.Nodes < 2 {
			return nil, fmt.Errorf("broadcast: %w: gossip needs at least 2 processes", gossip.ErrInvalidConfig)
		}
		c.Synchronized = true
		if err := p.chooseT(); err != nil {
			return nil, err
		}
		p.start = p.gT + p.l + p.o
	case SchemeBMG:
		if c.Kind != CorrectionNone {
			return nil, fmt.Errorf("broadcast: %w: BMG flooding takes no correction", gossip.ErrInvalidConfig)
		}
		p.bmg = bmgOffsets(spec.Nodes)
	default:
		return nil, fmt.Errorf("broadcast: %w: unknown scheme %d", gossip.ErrInvalidConfig, spec.Scheme.Kind)
	}
	p.sync = c.Synchronized
	p.spec.Correction = c
	p.sos = spec.SOSTimeout
	if p.sos == 0 {
		p.sos = 2*int64(spec.Nodes)*p.o + 2*p.hop
	}
	p.ack = spec.AckTimeout
	if p.ack == 0 && spec.Scheme.Kind == SchemeAck {
		p.ack = 2 * p.tree.AckLatency(spec.Model)
	}
	return p, nil
}

func (p *Plan) chooseT() error {
	spec := p.spec
	if spec.GossipT > 0 {
		p.gT = int64(spec.GossipT)
		return nil
	}
	live := spec.Live
	if live == 0 {
		live = spec.Nodes
	}
	delta := spec.Delta
	if delta == 0 {
		delta = DefaultDelta
	}
	alg := approx.Opportunistic
	switch spec.Correction.Kind {
	case CorrectionChecked:
		alg = approx.Checked
	case CorrectionFailProof:
		alg = approx.FailProof
	}
	// NewPlan has validated everything the approximations need.
	ch, err := approx.Optimal(approx.Model{Nodes: spec.Nodes, Live: live, L: spec.Model.L, O: spec.Model.O, Delta: delta, F: spec.Correction.F}, alg)
	if err != nil {
		return fmt.Errorf("broadcast: %w", err)
	}
	p.gT = int64(ch.T)
	p.kHat = ch.K
	return nil
}

// Spec returns the specification with defaults resolved.
func (p *Plan) Spec() Spec {
	s := p.spec
	s.GossipT = int(p.gT)
	s.SOSTimeout, s.AckTimeout = p.sos, p.ack
	return s
}

// Nodes returns N.
func (p *Plan) Nodes() int { return int(p.n) }

// Tree returns the dissemination tree of SchemeTree and SchemeAck, nil
// otherwise.
func (p *Plan) Tree() *Tree { return p.tree }

// CorrectionStart returns the broadcast time at which synchronized
// correction starts (the tree's fault-free latency, or T+L+o after gossip);
// ok is false when correction is not synchronized.
func (p *Plan) CorrectionStart() (t int64, ok bool) {
	if !p.sync || p.spec.Correction.Kind == CorrectionNone {
		return 0, false
	}
	return p.start, true
}

// Deadline returns the broadcast time by which dissemination ends in a
// fault-free run: the tree's Deadline, or T+L+o after gossip (when the
// last gossip message has been received); 0 for BMG flooding.
// Synchronized correction starts then, and a process colored by gossip
// later is no g-node.
func (p *Plan) Deadline() int64 { return p.start }

// GossipTime returns T and, when T was chosen by the approximations, the
// K̂ (or Ĝ for fail-proof) that went with it.
func (p *Plan) GossipTime() (t int64, kHat int) { return p.gT, p.kHat }

// BMGDegree returns δ, the number of distinct neighbours of a process in
// the binomial graph, or 0 for other schemes.
func (p *Plan) BMGDegree() int { return len(p.bmg) }

// bmgOffsets lists the distinct neighbours v ± 2^k mod N (2^k < N) of the
// binomial graph as offsets from v, in send order +1, -1, +2, -2, ….
func bmgOffsets(n int) []int32 {
	var offs []int32
	seen := map[int32]bool{0: true}
	for step := 1; step < n; step *= 2 {
		for _, d := range [2]int{step % n, (n - step%n) % n} {
			if !seen[int32(d)] {
				seen[int32(d)] = true
				offs = append(offs, int32(d))
			}
		}
	}
	return offs
}
