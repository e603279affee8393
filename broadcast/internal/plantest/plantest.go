// Package plantest builds broadcast plans for the tests of package
// broadcast and its simulators (broadcast/bsim) from the command-line
// names of a scheme and a correction.
package plantest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/broadcast"
)

// MustPlan returns the plan of scheme (as ParseScheme reads it) and
// correction (as ParseCorrection reads it) over n processes with the LogP
// costs m, or fails the test.
func MustPlan(t testing.TB, scheme, correction string, n int, m broadcast.LogP) *broadcast.Plan {
	t.Helper()
	s, err := broadcast.ParseScheme(scheme)
	require.NoError(t, err)
	c, err := broadcast.ParseCorrection(correction)
	require.NoError(t, err)
	p, err := broadcast.NewPlan(broadcast.Spec{Nodes: n, Scheme: s, Correction: c, Model: m})
	require.NoError(t, err)
	return p
}
