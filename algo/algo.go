// Package algo maps algorithm names to constructors, so that the simulator,
// the live runtime and the command line build any algorithm by name. The
// names are part of the command-line contract (DESIGN.md).
package algo

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gossipreduce/gossipreduce/central"
	"github.com/gossipreduce/gossipreduce/exchange"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/pfcc"
	"github.com/gossipreduce/gossipreduce/pflc"
	"github.com/gossipreduce/gossipreduce/pushflow"
	"github.com/gossipreduce/gossipreduce/pushsum"
	"github.com/gossipreduce/gossipreduce/rdb"
	"github.com/gossipreduce/gossipreduce/rhd"
	"github.com/gossipreduce/gossipreduce/ring"
)

// Spec describes one algorithm.
type Spec struct {
	// Name is the command-line name ("ps", "pfcc", …).
	Name string
	// Summary is one line for help texts.
	Summary string
	// New builds one node's machine.
	New func(gossip.Config) (gossip.Machine, error)
	// Ticked is true when the machine only sends on Tick (Algorithm 2
	// style), so its driver must tick it periodically.
	Ticked bool
	// Finite is true when the machine finishes on its own (it implements
	// gossip.Finisher), like recursive doubling.
	Finite bool
	// Fallback names the gossip algorithm the runtime (package member)
	// hands an operation to when this finite one cannot finish: an input
	// lost with its member, a stall, a disagreement. Empty: none, the
	// operation ends with an error instead.
	Fallback string
	// Extremes is true when a finite machine reduces gossip.Config's
	// Extremes itself (exchange). The runtime reduces extremes for gossip
	// machines in its certificate; other finite machines take none.
	Extremes bool
	// Lossy is true when a machine loses what a member held once that
	// member is excluded mid-operation (Push-Sum: its mass is gone), so
	// that no set of inputs has the value the others then converge to.
	// The runtime (package member) fails such an operation instead.
	Lossy bool
	// Reinjects is true when a machine started again within an operation
	// adds its member's input to the group a second time: Push-Sum's mass,
	// or Push-Cancel-Flow's flows, which a new machine cannot pair with
	// the ones its neighbours hold. The runtime (package member) records,
	// in the state a driver keeps across restarts, that the member began
	// such an operation, and a member restarted with that record does not
	// take part in the operation again. Push-Flow's machines take their
	// flows back from their neighbours' and need no record.
	Reinjects bool
	// Unsafe, when set, says why the live runtime (package member)
	// refuses the algorithm: it returns wrong values as results under the
	// runtime's faults. The simulator without the runtime still runs it,
	// to reproduce the thesis.
	Unsafe string
}

// CheckRuntime returns nil if the live runtime (package member) may run
// the algorithm, and otherwise an error wrapping gossip.ErrInvalidConfig
// that says why not (see Unsafe).
func (s Spec) CheckRuntime() error {
	if s.Unsafe != "" {
		return fmt.Errorf("algo: %w: %s is not safe in the runtime: %s", gossip.ErrInvalidConfig, s.Name, s.Unsafe)
	}
	return nil
}

// UsesGossip reports whether an operation may run a gossip algorithm (the
// algorithm itself, or its fallback), which needs a strongly connected
// overlay and its diameter.
func (s Spec) UsesGossip() bool { return !s.Finite || s.Fallback != "" }

var specs = []Spec{
	{Name: "ps", Summary: "Push-Sum, one send per receive (thesis Algorithm 8)", Lossy: true, Reinjects: true,
		New: func(c gossip.Config) (gossip.Machine, error) { return pushsum.New(c) }},
	{Name: "ps-iter", Summary: "Push-Sum, one send per tick (thesis Algorithm 2)", Ticked: true, Lossy: true, Reinjects: true,
		New: func(c gossip.Config) (gossip.Machine, error) { return pushsum.NewIterative(c) }},
	{Name: "central", Summary: "central gather-and-publish baseline: all to node 0 and back", Finite: true,
		New: func(c gossip.Config) (gossip.Machine, error) { return central.New(c) }},
	{Name: "rdb", Summary: "recursive doubling, any N (thesis Algorithm 1, MPICH fold)", Finite: true,
		New: func(c gossip.Config) (gossip.Machine, error) { return rdb.New(c) }},
	{Name: "exchange", Summary: "dimension exchange: rdb's schedule with hashes, stored messages and resends, PFCC when an input is lost", Finite: true, Ticked: true, Fallback: "pfcc", Extremes: true,
		New: func(c gossip.Config) (gossip.Machine, error) { return exchange.New(c) }},
	{Name: "exchange-chunked", Summary: "chunked dimension exchange: rhd's schedule (the ring's bytes) with exchange's hashes, resends and second pass, PFCC when a slice or an input is lost", Finite: true, Ticked: true, Fallback: "pfcc", Extremes: true,
		New: func(c gossip.Config) (gossip.Machine, error) { return exchange.NewChunked(c) }},
	{Name: "ring", Summary: "ring reduce-scatter + all-gather, the bandwidth-optimal baseline for large vectors (no fault tolerance)", Finite: true,
		New: func(c gossip.Config) (gossip.Machine, error) { return ring.New(c) }},
	{Name: "rhd", Summary: "recursive halving + doubling (Rabenseifner): the ring's bytes in 2 log2 N messages (no fault tolerance; exchange-chunked adds it)", Finite: true,
		New: func(c gossip.Config) (gossip.Machine, error) { return rhd.New(c) }},
	{Name: "pf", Summary: "Push-Flow with acknowledged flows (thesis Algorithm 3, concurrent messages fixed)",
		New: func(c gossip.Config) (gossip.Machine, error) { return pushflow.New(c) }},
	{Name: "pf-published", Summary: "Push-Flow exactly as Algorithm 3 (concurrent messages break conservation)",
		New: func(c gossip.Config) (gossip.Machine, error) { return pushflow.NewPublished(c) }},
	{Name: "pcf", Summary: "Push-Cancel-Flow, no consecutive messages to a neighbour (thesis Algorithm 4, fixed)", Reinjects: true,
		New: func(c gossip.Config) (gossip.Machine, error) { return pushflow.NewPCF(c) }},
	{Name: "pcf-published", Summary: "Push-Cancel-Flow exactly as Algorithm 4 (stalls on consecutive messages)", Reinjects: true,
		Unsafe: "Push-Cancel-Flow as published returns wrong averages when members crash (the runtime's chaos campaign with crashes, loss, duplication and reordering: 11 violations in 60 operations); pcf is the fixed version",
		New:    func(c gossip.Config) (gossip.Machine, error) { return pushflow.NewPCFPublished(c) }},
	{Name: "pflc", Summary: "Push-Flow with local correction (thesis Algorithm 5, checksums)",
		New: func(c gossip.Config) (gossip.Machine, error) { return pflc.New(c) }},
	{Name: "pfcc", Summary: "Push-Flow with cooperative correction (thesis Algorithm 6, checksums)",
		New: func(c gossip.Config) (gossip.Machine, error) { return pfcc.New(c) }},
	{Name: "pflc-published", Summary: "PFLC on Algorithm 3's flows as published (loss repaired by any later message; concurrent messages break conservation)",
		New: func(c gossip.Config) (gossip.Machine, error) { return pflc.NewPublished(c) }},
	{Name: "pfcc-published", Summary: "PFCC on Algorithm 3's flows as published (loss repaired by any later message; concurrent messages break conservation)",
		New: func(c gossip.Config) (gossip.Machine, error) { return pfcc.NewPublished(c) }},
}

// Lookup returns the algorithm called name, or an error wrapping
// gossip.ErrUnknownAlgorithm that lists the known names.
func Lookup(name string) (Spec, error) {
	for _, s := range specs {
		if s.Name == name {
			return s, nil
		}
	}
	return Spec{}, fmt.Errorf("algo: %w %q (known: %s)", gossip.ErrUnknownAlgorithm, name, strings.Join(Names(), ", "))
}

// Names returns the known algorithm names, sorted.
func Names() []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.Name
	}
	sort.Strings(out)
	return out
}

// New builds node cfg.ID's machine of the algorithm called name.
func New(name string, cfg gossip.Config) (gossip.Machine, error) {
	s, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	return s.New(cfg)
}
