// Package algo maps algorithm names to constructors, so that the simulator,
// the live runtime and the command line build any algorithm by name. The
// names are part of the command-line contract (DESIGN.md).
package algo

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/pushsum"
	"github.com/gossipreduce/gossipreduce/rdb"
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
}

var specs = []Spec{
	{Name: "ps", Summary: "Push-Sum, one send per receive (thesis Algorithm 8)",
		New: func(c gossip.Config) (gossip.Machine, error) { return pushsum.New(c) }},
	{Name: "ps-iter", Summary: "Push-Sum, one send per tick (thesis Algorithm 2)", Ticked: true,
		New: func(c gossip.Config) (gossip.Machine, error) { return pushsum.NewIterative(c) }},
	{Name: "rdb", Summary: "recursive doubling, any N (thesis Algorithm 1, MPICH fold)", Finite: true,
		New: func(c gossip.Config) (gossip.Machine, error) { return rdb.New(c) }},
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
