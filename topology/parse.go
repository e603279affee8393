package topology

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// ErrUnknownTopology reports a topology name Parse does not know.
var ErrUnknownTopology = errors.New("topology: unknown topology")

// Names returns the topology names Parse accepts, in a fixed order. "torus"
// also takes explicit sides, as in "torus:8x8x8".
func Names() []string {
	return []string{"complete", "hypercube", "torus", "dhypercube", "bmg", "ring"}
}

// Parse builds the graph a spec names on n nodes. spec is one of Names()
// (case and surrounding spaces are ignored) or "torus:" followed by sides
// joined by "x" ("torus:8x8x8", "torus:16x16", "torus:4x4x2x2"). Plain
// "torus" is TorusN(n). For a torus with explicit sides n may be 0, meaning
// "the product of the sides"; a non-zero n that differs from the product is
// an error. Every Graph's Name() parses back to an equal graph with the same
// n.
//
// An unknown name gives an error wrapping ErrUnknownTopology that lists the
// known names; a malformed spec or an impossible n (n < 1, a hypercube of 100
// nodes) an error wrapping gossip.ErrInvalidConfig.
func Parse(spec string, n int) (Graph, error) {
	s := strings.ToLower(strings.TrimSpace(spec))
	name, arg, hasArg := strings.Cut(s, ":")
	if hasArg && name != "torus" {
		if !isKnown(name) {
			return nil, unknown(spec)
		}
		return nil, fmt.Errorf("topology: %q: only torus takes parameters (torus:AxBxC): %w", spec, gossip.ErrInvalidConfig)
	}
	var (
		g   Graph
		err error
	)
	switch name {
	case "complete":
		g, err = asGraph(Complete(n))
	case "hypercube":
		g, err = asGraph(Hypercube(n))
	case "dhypercube":
		g, err = asGraph(DirectedHypercube(n))
	case "bmg":
		g, err = asGraph(BMG(n))
	case "ring":
		g, err = asGraph(Ring(n))
	case "torus":
		if !hasArg {
			g, err = asGraph(TorusN(n))
			break
		}
		g, err = parseTorus(spec, arg, n)
	default:
		return nil, unknown(spec)
	}
	if err != nil {
		return nil, err
	}
	return g, nil
}

// asGraph turns a constructor's (*T, error) into (Graph, error) without
// wrapping a nil *T in a non-nil interface.
func asGraph[T Graph](g T, err error) (Graph, error) {
	if err != nil {
		return nil, err
	}
	return g, nil
}

func parseTorus(spec, arg string, n int) (Graph, error) {
	parts := strings.Split(arg, "x")
	sides := make([]int, len(parts))
	for i, p := range parts {
		s, err := strconv.Atoi(p)
		if err != nil || s < 1 {
			return nil, fmt.Errorf("topology: %q: side %d is %q, want a positive integer (torus:AxBxC): %w", spec, i, p, gossip.ErrInvalidConfig)
		}
		sides[i] = s
	}
	t, err := Torus(sides...)
	if err != nil {
		return nil, err
	}
	if n != 0 && n != t.Len() {
		return nil, fmt.Errorf("topology: %s has %d nodes, not %d: %w", t.Name(), t.Len(), n, gossip.ErrInvalidConfig)
	}
	return t, nil
}

func isKnown(name string) bool {
	for _, k := range Names() {
		if k == name {
			return true
		}
	}
	return false
}

func unknown(spec string) error {
	return fmt.Errorf("%w %q (known: %s, torus:AxBxC)", ErrUnknownTopology, spec, strings.Join(Names(), ", "))
}
