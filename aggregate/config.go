package aggregate

import (
	"fmt"
	"hash/fnv"
	"log/slog"
	"math"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gossipreduce/gossipreduce/algo"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/member"
	"github.com/gossipreduce/gossipreduce/topology"
)

// Errors of the runtime, those of the member protocol (package member)
// under the names this package has always had. Returned errors wrap them;
// test with errors.Is.
var (
	// ErrNotConverged reports an operation whose context ended before the
	// group agreed on a result. The Result then holds this node's best
	// estimate, which the other nodes do not share.
	ErrNotConverged = member.ErrNotConverged
	// ErrExcluded reports that the group's result leaves this node out (it
	// was silent for too long, or cut off), or that a member of the group
	// declared it dead and no result that covers it came within Suspect
	// after (or longer, see Config.Suspect). A member never returns a result that does not cover its
	// input, and one told it was declared dead still returns a result
	// that covers it: the root may have decided with it before the
	// declaration.
	ErrExcluded = member.ErrExcluded
	// ErrClosed reports an operation on a closed Node.
	ErrClosed = member.ErrClosed
	// ErrGroupMismatch reports that members of the group disagree on the
	// operation: a vector of another length, or another configuration.
	ErrGroupMismatch = member.ErrGroupMismatch
	// ErrInputLost reports an operation of Push-Sum in which a member
	// died: what it held is lost, and no set of inputs has the value the
	// others converge to.
	ErrInputLost = member.ErrInputLost
	// ErrRestarted reports an operation earlier than one this member
	// voted in before it restarted, or the first operation after a
	// restart of Push-Sum or Push-Cancel-Flow (see Config.StateFile).
	ErrRestarted = member.ErrRestarted
)

// Config describes one member of a group. Every member must use the same
// Group, Nodes, Topology, Algorithm, Epsilon and Tau: they are hashed into
// every message, and members configured differently never exchange a
// message (each side counts the other's as foreign). A member configured
// differently from most of its group fails its operations at once with
// ErrGroupMismatch naming the setting (see the package documentation,
// "Errors").
type Config struct {
	// Group names the group; it is a NATS subject token. Required.
	Group string
	// Prefix is the first subject token(s); empty means "gossipreduce".
	Prefix string
	// ID is this member, 0 ≤ ID < Nodes.
	ID gossip.NodeID
	// Nodes is the group size N.
	Nodes int
	// Name, if set, joins an elastic group by name instead: no ID, no
	// Nodes; the group's members agree on a sequence of views, and each
	// operation runs over one of them (see the package documentation,
	// "Elastic groups"). The overlay must take every group size
	// (complete, the default, does). A name is one member: a second
	// process under a name the group holds fails to join with
	// ErrDuplicateName.
	Name string
	// MinMembers (elastic groups) makes Join wait until this member is in
	// a view of at least that many members; a new group is founded only
	// once that many have been heard.
	MinMembers int
	// Topology is the overlay (see topology.Parse). Default "complete".
	// Exchange, the default algorithm, uses no edges of its own: the
	// overlay is its fallback's, and the complete overlay means the
	// binomial graph there, which PFCC converges on for a fraction of the
	// messages (member.Overlay).
	Topology string
	// Algorithm is any name algo.Names lists but "pcf-published", which
	// returns wrong averages when members crash and is refused
	// (algo.Spec.Unsafe); the Summary of its algo.Lookup spec says what
	// each is. Default "exchange": it costs
	// less than twice what recursive doubling does and survives loss, bit
	// flips and members that crash after their input left them (the
	// result keeps their input); when a member dies or stalls for Suspect
	// before its input left it, or a member is away from the last
	// result, the operation falls back to PFCC and costs what PFCC does
	// (docs/live.md). "pfcc" gossips throughout: it costs tens of times
	// recursive doubling and rides out the same faults at the same price
	// in every operation. Of the finite algorithms only exchange takes
	// Extremes. "rdb"
	// (recursive doubling), "ring" (reduce-scatter and all-gather, the
	// bandwidth-optimal choice for large vectors) and "rhd" (recursive
	// halving and doubling, the ring's bytes in 2 log2 N messages;
	// experimental) are baselines without fault tolerance; "central",
	// a gather at member 0 and back, survives loss but not member 0's
	// death. Push-Sum ("ps", "ps-iter") and Push-Cancel-Flow ("pcf") are
	// not fault-tolerant: a lost message (a NATS server restart loses
	// those in flight) changes their result without an error. Push-Sum loses the mass a member held when it crashes (the
	// operation then fails with ErrInputLost).
	// Push-Sum and Push-Cancel-Flow ("pcf") would count a member's input
	// twice if it restarted within an operation: with a StateFile the
	// restarted member sits out the first operation it is asked for
	// (ErrRestarted, and Push-Sum's others fail with ErrInputLost);
	// without one their results can be off by a few percent and still be
	// returned as results (docs/design.md, "Known limits").
	Algorithm string
	// Epsilon is the target relative accuracy of the result. Default 1e-9.
	Epsilon float64
	// Tau is the checksum threshold of pflc and pfcc (0: their default).
	Tau float64
	// Tick is the period of the node's clock: how often it checks for
	// silence, resends after loss and advances the result broadcast.
	// Default 1ms. A node alone in its process with an operation under
	// way wakes only at the ticks that have something to do (and every
	// tick while its NATS connection is down, to see it back); nodes that
	// share their process with others running an operation wake at every
	// tick, which is how they notice that they were kept from running.
	Tick time.Duration
	// Idle is how long a member may go without sending before it takes a
	// step on its own, which keeps an operation going after lost messages. The default is 4 ticks, or
	// 120 µs × the Nodes open in this process (of any group) / GOMAXPROCS
	// when that is longer (15 ms for 256 members on two cores): members
	// sharing cores hear each other less often, and Idle must stay long
	// against the silences they see by chance. For vectors it is also at
	// least 100 ns per component × the members per core (at least one):
	// a message of a long vector takes that long to encode, carry and take
	// in, and an idle step sooner asks again for answers still on their
	// way (10 ms for 100,000 components, 80 ms for 16 such members on two
	// cores). A positive Idle is used as given. docs/live.md has the
	// measurements behind these numbers.
	Idle time.Duration
	// Suspect is how long a neighbour may stay silent during an operation
	// before this node declares it dead and excludes it (it is probed first).
	// Default 1s. It widens by itself to twice the longest silence after
	// which a neighbour was heard again, up to member.MaxSilence times
	// Suspect, and doubles while several neighbours are silent at once
	// (see member.Config.Suspect).
	Suspect time.Duration
	// Seed seeds the node's random choices (with its ID and the epoch), so
	// a run can be repeated. Zero is a valid seed.
	Seed uint64
	// Injector, if set, makes the injector for each operation of this node
	// (silent-data-corruption experiments; see package sdc).
	Injector func(epoch uint64) gossip.Injector
	// Logger receives debug logs; nil discards them.
	Logger *slog.Logger
	// Founding says that this member joins a group that starts now, with
	// every other member new to it too (as the run command and tests
	// start a whole group in one process): Join then does not announce
	// the member to the others. The announcement tells members that left
	// this one out of an earlier result to count it again, and costs a
	// session with every other member: with N members in one process, N²
	// handshakes (3,000 members did not finish joining in a minute). A
	// member that joins a group that has already run an operation must
	// leave it false; if it does not, the others leave it out of their
	// next operation, it is told it was excluded, announces itself then,
	// and is counted from the operation after.
	Founding bool
	// StateFile, if set, is a file in which this member keeps its votes
	// (member.HardState) across restarts: they are written (checksummed,
	// to a temporary file, synced, renamed over it) before any message that
	// carries a new one leaves, and Join reads them. A process that may be
	// killed and started again under the same ID while an operation is
	// under way needs it: without it the new process has forgotten the
	// votes its earlier self cast, and two members may return different
	// results (docs/design.md, "Known limits"). With Push-Sum or
	// Push-Cancel-Flow the file also records that the member began an
	// operation, and a member started again with it sits out its first
	// operation (ErrRestarted). If a write fails, the
	// operation fails and the message with the vote is not sent. Each
	// member needs a file of its own: Join refuses one that a running
	// member holds (ErrStateInUse; a lock on the file's name plus
	// ".lock", where the system has flock). Not with Name. A file belongs to one
	// run of the group: a group started afresh (its epochs from 1 again)
	// needs new files, or a member begins operation 1 with the votes of
	// the last run's operation 1 (its own estimate then refuses a value
	// it does not confirm, and the operation may fail; it is not decided
	// wrongly).
	StateFile string

	// hashExtra is more that members must agree on (a Monitor's metrics).
	hashExtra string
}

// resolved is a validated Config with its derived values.
type resolved struct {
	Config
	graph  topology.Graph
	spec   algo.Spec
	member member.Config
	hash   uint64
	// autoIdle: Idle was left to its default, which grows with the
	// members open in this process (see opIdle).
	autoIdle bool
}

// open counts the Nodes open in this process, of every group: members that
// share the process's cores (see Config.Idle).
var open atomic.Int64

// opIdle is the idle period of an operation on vectors of k components
// starting now: Config.Idle if it was given, else sharedIdle's.
func (r *resolved) opIdle(k int) time.Duration {
	if !r.autoIdle {
		return r.Idle
	}
	return sharedIdle(r.Idle, int(open.Load()), runtime.GOMAXPROCS(0), k)
}

// perMember and perComponent are what a message costs its members on one
// core, end to end (encode, NATS, decode, a machine step): 120 µs for a
// short message (the 256-member measurements in docs/live.md), and about
// 75 ns per component for a long one, rounded up to 100 (recursive
// doubling, 16 members with 100,000 components on two cores: 0.24 s for
// its four steps, a message of 800 kB every 60 ms per member).
const (
	perMember    = 120 * time.Microsecond
	perComponent = 100 * time.Nanosecond
)

// sharedIdle is the largest of idle, perMember × members per core, and
// perComponent × k × members per core (at least one: a long message costs
// its time on one core however many there are).
func sharedIdle(idle time.Duration, members, cores, k int) time.Duration {
	cores = max(cores, 1)
	share := time.Duration(max(members, cores))
	return max(idle, time.Duration(members)*perMember/time.Duration(cores), time.Duration(k)*perComponent*share/time.Duration(cores))
}

// Validate reports the first problem that would make Join fail: a missing
// group name, an id out of range, an unknown algorithm or topology, a
// topology that cannot take Nodes, and so on.
func (c Config) Validate() error {
	if c.Name != "" {
		_, err := c.resolveElastic()
		return err
	}
	_, err := c.resolve()
	return err
}

func (c Config) resolve() (*resolved, error) {
	autoIdle := c.Idle == 0
	d := member.Defaults{Topology: c.Topology, Algorithm: c.Algorithm, Epsilon: c.Epsilon, Tick: c.Tick, Idle: c.Idle, Suspect: c.Suspect}
	d.Fill()
	c.Topology, c.Algorithm, c.Epsilon, c.Tick, c.Idle, c.Suspect = d.Topology, d.Algorithm, d.Epsilon, d.Tick, d.Idle, d.Suspect
	switch {
	case c.Group == "":
		return nil, fmt.Errorf("aggregate: %w: no group name", gossip.ErrInvalidConfig)
	case c.Nodes < 1:
		return nil, fmt.Errorf("aggregate: %w: %d nodes", gossip.ErrInvalidConfig, c.Nodes)
	case int64(c.ID) >= int64(c.Nodes):
		return nil, fmt.Errorf("aggregate: %w: id %d out of range [0, %d)", gossip.ErrInvalidConfig, c.ID, c.Nodes)
	case !(c.Epsilon > 0 && c.Epsilon < 1):
		return nil, fmt.Errorf("aggregate: %w: epsilon %v must be in (0, 1)", gossip.ErrInvalidConfig, c.Epsilon)
	case c.Tau < 0 || math.IsNaN(c.Tau) || math.IsInf(c.Tau, 0):
		return nil, fmt.Errorf("aggregate: %w: tau %v", gossip.ErrInvalidConfig, c.Tau)
	case c.Tick < 0 || c.Suspect <= c.Tick || c.Idle < c.Tick:
		return nil, fmt.Errorf("aggregate: %w: tick %v, idle %v, suspect %v (need 0 < tick ≤ idle and tick < suspect)", gossip.ErrInvalidConfig, c.Tick, c.Idle, c.Suspect)
	}
	spec, err := algo.Lookup(c.Algorithm)
	if err != nil {
		return nil, err
	}
	if err := spec.CheckRuntime(); err != nil {
		return nil, err
	}
	g, err := member.Overlay(c.Topology, c.Nodes, spec)
	if err != nil {
		return nil, err
	}
	r := &resolved{Config: c, graph: g, spec: spec, autoIdle: autoIdle}
	r.member = member.Config{ID: c.ID, Graph: g, Algorithm: spec, Epsilon: c.Epsilon, Tau: c.Tau,
		Idle: c.Idle, Suspect: c.Suspect, Tick: c.Tick, Seed: c.Seed, Injector: c.Injector, Logger: c.Logger}
	if spec.UsesGossip() {
		d, err := topology.Diameter(g)
		if err != nil {
			return nil, fmt.Errorf("%w (gossip needs a strongly connected overlay)", err)
		}
		r.member.Diameter = d
	}
	r.hash = configHash(r)
	return r, nil
}

// configHash identifies what every member must agree on.
func configHash(r *resolved) uint64 {
	h := fnv.New64a()
	for _, s := range []string{
		"gossipreduce/aggregate/v1", r.Group, strconv.Itoa(r.Nodes), r.graph.Name(), r.Algorithm,
		strconv.FormatFloat(r.Epsilon, 'g', -1, 64), strconv.FormatFloat(r.Tau, 'g', -1, 64), r.hashExtra,
	} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// Result is the outcome of one operation (see member.Result): every member
// that gets one with a nil error gets the bitwise same Value, Extremes,
// Live, Absent and Epoch, and the result covers that member's input.
type Result = member.Result

// Hash returns the hash of the settings every member of the group must
// share (what Node.ConfigHash returns after Join): tools that watch or
// test a group's traffic need it to address its members.
func (c Config) Hash() (uint64, error) {
	r, err := c.resolve()
	if err != nil {
		return 0, err
	}
	return r.hash, nil
}
