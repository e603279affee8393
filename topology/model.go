package topology

import (
	"fmt"
	"math"
)

// ModelKind selects one of the fitted Push-Sum cost models of thesis 5.3.
type ModelKind int

// The fitted models. All three were fitted at ε = 1e-14, on N from a few
// dozen to a few thousand nodes (thesis figures 5.3, 5.5 and 5.9).
const (
	// ModelSyncRounds is table 5.1: iterations of synchronous Push-Sum until
	// every node is ε-accurate (C simulator, mean of 100 runs).
	ModelSyncRounds ModelKind = iota
	// ModelAsyncMsgs is table 5.2: the maximum over nodes of messages sent by
	// asynchronous Push-Sum until every node is ε-accurate (Python
	// discrete-event simulator, mean of 100 runs).
	ModelAsyncMsgs
	// ModelAsyncFirstMsgs is table 5.3: the same, until the first node is
	// ε-accurate (the termination the thesis's MPI runs measured).
	ModelAsyncFirstMsgs
)

// String returns "sync-rounds", "async-msgs" or "async-first-msgs".
func (k ModelKind) String() string {
	switch k {
	case ModelSyncRounds:
		return "sync-rounds"
	case ModelAsyncMsgs:
		return "async-msgs"
	case ModelAsyncFirstMsgs:
		return "async-first-msgs"
	}
	return fmt.Sprintf("ModelKind(%d)", int(k))
}

// The overlay families the thesis fitted.
const (
	familyComplete = iota
	familyHypercube
	familyTorus3
)

// coefficients[kind][family] = {a, b, c} of equation 5.2, transcribed from
// thesis tables 5.1, 5.2 and 5.3.
var coefficients = [3][3][3]float64{
	ModelSyncRounds: {
		familyComplete:  {0.5442, -15.9551, 68.6655},
		familyHypercube: {0.9064, -15.9920, 133.1687},
		familyTorus3:    {0.9327, 8679000, 28.88},
	},
	ModelAsyncMsgs: {
		familyComplete:  {1.7359, -12.7597, 144.5031},
		familyHypercube: {1.6106, -15.7585, 211.4465},
		familyTorus3:    {2.6268, -60.1879, 207.9838},
	},
	ModelAsyncFirstMsgs: {
		familyComplete:  {0.267, -16.00, 109.24},
		familyHypercube: {0.96, -15.94, 157.64},
		familyTorus3:    {1.33, -26.99, 220.39},
	},
}

// Model evaluates the fitted cost model of equation 5.2,
//
//	f = a·log2(N + b) / (1 - λ2) + c
//
// with the coefficients the thesis fitted for kind (tables 5.1 to 5.3) and
// λ2 from ClosedForm. It knows the complete graph, the hypercube and the
// three-dimensional torus (a TorusGraph with three sides, each ≥ 2; the
// thesis fitted cubes n×n×n). ok is false for any other graph, an unknown
// kind, and when N + b ≤ 1, where the logarithm is not positive and the
// fit says nothing (the complete and hypercube fits have b ≈ -16, so they
// start above 16 nodes; the asynchronous torus fit needs N > 61).
//
// Like every fit it is trustworthy only near the sizes it was fitted on
// (up to a few thousand nodes) and at ε = 1e-14.
func Model(kind ModelKind, g Graph) (float64, bool) {
	if kind < ModelSyncRounds || kind > ModelAsyncFirstMsgs {
		return 0, false
	}
	var family int
	switch t := g.(type) {
	case *CompleteGraph:
		family = familyComplete
	case *HypercubeGraph:
		family = familyHypercube
	case *TorusGraph:
		if len(t.sides) != 3 || min(t.sides[0], t.sides[1], t.sides[2]) < 2 {
			return 0, false
		}
		family = familyTorus3
	default:
		return 0, false
	}
	s, ok := ClosedForm(g)
	if !ok {
		return 0, false
	}
	coef := coefficients[kind][family]
	a, b, c := coef[0], coef[1], coef[2]
	x := float64(g.Len()) + b
	if x <= 1 {
		return 0, false
	}
	return a*math.Log2(x)/s.Gap + c, true
}
