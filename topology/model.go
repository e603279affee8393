package topology

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sync"

	"gonum.org/v1/gonum/mat"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// ModelKind selects one of the Push-Sum cost models of thesis 5.3.
type ModelKind int

// The cost models. The thesis fitted the first three at ε = 1e-14, on N from
// a few dozen to a few thousand nodes (thesis figures 5.3, 5.5 and 5.9);
// this package fits all four, at the same ε and on the same range, to its
// own simulations (see ModelFits).
const (
	// ModelSyncRounds is table 5.1: rounds of synchronous Push-Sum as the
	// thesis's C simulator runs them (Algorithm 7, in place, node after
	// node: sim.RunSync with Sequential) until every node is ε-accurate;
	// the mean over runs.
	ModelSyncRounds ModelKind = iota
	// ModelAsyncMsgs is table 5.2: the maximum over nodes of messages sent by
	// asynchronous Push-Sum until every node is ε-accurate (the thesis's
	// Python discrete-event simulator, sim.Run here); the mean over runs.
	ModelAsyncMsgs
	// ModelAsyncFirstMsgs is table 5.3: the same, until the first node is
	// ε-accurate (the termination the thesis's MPI runs measured).
	ModelAsyncFirstMsgs
	// ModelSyncJacobiRounds is synchronous rounds as Algorithm 2 defines
	// them, every send of a round from the state at its start (sim.RunSync
	// without Sequential): more rounds than Algorithm 7. The thesis has no
	// table for it.
	ModelSyncJacobiRounds
)

// ModelKinds lists every ModelKind, in the order of their values.
var ModelKinds = []ModelKind{ModelSyncRounds, ModelAsyncMsgs, ModelAsyncFirstMsgs, ModelSyncJacobiRounds}

// String returns "sync-rounds", "async-msgs", "async-first-msgs" or
// "sync-jacobi-rounds".
func (k ModelKind) String() string {
	switch k {
	case ModelSyncRounds:
		return "sync-rounds"
	case ModelAsyncMsgs:
		return "async-msgs"
	case ModelAsyncFirstMsgs:
		return "async-first-msgs"
	case ModelSyncJacobiRounds:
		return "sync-jacobi-rounds"
	}
	return fmt.Sprintf("ModelKind(%d)", int(k))
}

// ModelEpsilon is the ε every model was fitted at, the thesis's and ours.
const ModelEpsilon = 1e-14

// ModelFamilies are the overlay families that have models, by the names
// ModelFamily returns: the complete graph, the hypercube and the
// three-dimensional torus.
var ModelFamilies = []string{"complete", "hypercube", "torus3"}

// ModelFamily returns the model family of g, one of ModelFamilies: the
// complete graph, the hypercube, or a TorusGraph with three sides, each ≥ 2
// (the thesis fitted cubes n×n×n). ok is false for any other graph.
func ModelFamily(g Graph) (family string, ok bool) {
	switch t := g.(type) {
	case *CompleteGraph:
		return "complete", true
	case *HypercubeGraph:
		return "hypercube", true
	case *TorusGraph:
		if len(t.sides) == 3 && min(t.sides[0], t.sides[1], t.sides[2]) >= 2 {
			return "torus3", true
		}
	}
	return "", false
}

// Coefficients are a, b and c of the cost model of equation 5.2,
//
//	f = a·log2(N + b) / (1 - λ2) + c,
//
// or, with b = +Inf, of its limit for b far above every N, where log2(N +
// b) no longer varies with N and is taken into a:
//
//	f = a / (1 - λ2) + c.
//
// In JSON an infinite b is null.
type Coefficients struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
	C float64 `json:"c"`
}

// Eval returns f for n nodes and spectral gap gap, and false where N + b ≤
// 1, where the logarithm is not positive and the model says nothing, or the
// gap is not positive.
func (c Coefficients) Eval(n int, gap float64) (float64, bool) {
	if !(gap > 0) {
		return 0, false
	}
	if math.IsInf(c.B, 1) {
		return c.A/gap + c.C, true
	}
	x := float64(n) + c.B
	if !(x > 1) {
		return 0, false
	}
	return c.A*math.Log2(x)/gap + c.C, true
}

// coefficientsJSON is Coefficients with a b that may be null.
type coefficientsJSON struct {
	A float64  `json:"a"`
	B *float64 `json:"b"`
	C float64  `json:"c"`
}

// MarshalJSON writes an infinite b as null.
func (c Coefficients) MarshalJSON() ([]byte, error) {
	j := coefficientsJSON{A: c.A, C: c.C}
	if !math.IsInf(c.B, 1) {
		j.B = &c.B
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads a null b as +Inf.
func (c *Coefficients) UnmarshalJSON(b []byte) error {
	var j coefficientsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*c = Coefficients{A: j.A, B: math.Inf(1), C: j.C}
	if j.B != nil {
		c.B = *j.B
	}
	return nil
}

// thesisCoefficients[kind][family] are transcribed from thesis tables 5.1,
// 5.2 and 5.3; ModelSyncJacobiRounds has none.
var thesisCoefficients = map[ModelKind]map[string]Coefficients{
	ModelSyncRounds: {
		"complete":  {0.5442, -15.9551, 68.6655},
		"hypercube": {0.9064, -15.9920, 133.1687},
		"torus3":    {0.9327, 8679000, 28.88},
	},
	ModelAsyncMsgs: {
		"complete":  {1.7359, -12.7597, 144.5031},
		"hypercube": {1.6106, -15.7585, 211.4465},
		"torus3":    {2.6268, -60.1879, 207.9838},
	},
	ModelAsyncFirstMsgs: {
		"complete":  {0.267, -16.00, 109.24},
		"hypercube": {0.96, -15.94, 157.64},
		"torus3":    {1.33, -26.99, 220.39},
	},
}

// ThesisCoefficients returns the thesis's coefficients for kind on family
// (tables 5.1 to 5.3), and false for ModelSyncJacobiRounds, which it did not
// fit, and for an unknown kind or family.
func ThesisCoefficients(kind ModelKind, family string) (Coefficients, bool) {
	c, ok := thesisCoefficients[kind][family]
	return c, ok
}

// Model evaluates our cost model of kind on g: equation 5.2 with the
// coefficients fitted to this package's simulation data (ModelFits), and
// λ2 from ClosedForm. ok is false for a graph ModelFamily does not know, an
// unknown kind, and where Coefficients.Eval is false.
//
// Like every fit it is trustworthy only near the sizes it was fitted on
// (up to a few thousand nodes) and at ε = ModelEpsilon.
func Model(kind ModelKind, g Graph) (float64, bool) {
	fits, err := ModelFits()
	if err != nil {
		return 0, false
	}
	fam, ok := ModelFamily(g)
	if !ok {
		return 0, false
	}
	for _, f := range fits {
		if f.Kind == kind && f.Family == fam {
			return evalOn(f.Ours.Coefficients, g)
		}
	}
	return 0, false
}

// ThesisModel is Model with the thesis's coefficients (tables 5.1 to 5.3),
// kept for comparison; ok is also false for ModelSyncJacobiRounds.
func ThesisModel(kind ModelKind, g Graph) (float64, bool) {
	fam, ok := ModelFamily(g)
	if !ok {
		return 0, false
	}
	c, ok := ThesisCoefficients(kind, fam)
	if !ok {
		return 0, false
	}
	return evalOn(c, g)
}

func evalOn(c Coefficients, g Graph) (float64, bool) {
	s, ok := ClosedForm(g)
	if !ok {
		return 0, false
	}
	return c.Eval(g.Len(), s.Gap)
}

// ModelPoint is one measured cost: the mean over Runs simulations on an
// overlay of Nodes nodes whose spectral gap is Gap.
type ModelPoint struct {
	Nodes int     `json:"nodes"`
	Gap   float64 `json:"gap"`
	Mean  float64 `json:"mean"`
	// SD is the standard deviation over the runs, Runs their number and
	// FirstSeed the seed of the first (run i had FirstSeed + i).
	SD        float64 `json:"sd"`
	Runs      int     `json:"runs"`
	FirstSeed uint64  `json:"first_seed"`
}

// Fit is the outcome of FitModel.
type Fit struct {
	Coefficients
	// RSquared is 1 - SSE/SST over the points' means, the measure of fit the
	// thesis quotes; RMS is the root mean square residual.
	RSquared float64 `json:"r_squared"`
	RMS      float64 `json:"rms"`
	Points   int     `json:"points"`
}

// MarshalJSON writes the coefficients (an infinite b as null) beside the
// measures of fit.
func (f Fit) MarshalJSON() ([]byte, error) {
	c, err := f.Coefficients.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		Coefficients json.RawMessage `json:"coefficients"`
		RSquared     float64         `json:"r_squared"`
		RMS          float64         `json:"rms"`
		Points       int             `json:"points"`
	}{c, f.RSquared, f.RMS, f.Points})
}

// maxFitB bounds the finite b FitModel tries. With b far above every N,
// log2(N + b) is nearly constant and equation 5.2 tends to its limit a/(1 -
// λ2) + c (see Coefficients), which FitModel fits apart: the thesis's torus
// fit, b = 8.7e6 for N up to a few thousand, is nearly that limit.
const maxFitB = 1e12

// FitModel fits equation 5.2 to points by least squares, as the thesis did
// with Matlab's cftool. For a fixed b the model is linear in a and c, which
// a QR least-squares solve finds (gonum's mat); b is then chosen to
// minimise the sum of squared residuals, over b from just above 1 - min N
// (so that every log2(N + b) is positive) to maxFitB, first on a
// logarithmic grid of N + b, then by golden-section search around the best
// grid point. When the limit b = +Inf (see Coefficients) fits at least as
// well, as it does whenever the residuals keep falling as b grows, the fit
// is that limit. It needs at least three points with positive gaps and at
// least two sizes; the points are unweighted, like the thesis's.
func FitModel(points []ModelPoint) (Fit, error) {
	f, err := fitModel(points)
	if err != nil {
		return Fit{}, fmt.Errorf("topology: fit: %w", err)
	}
	return f, nil
}

func fitModel(points []ModelPoint) (Fit, error) {
	if len(points) < 3 {
		return Fit{}, fmt.Errorf("%d points, need at least 3: %w", len(points), gossip.ErrInvalidConfig)
	}
	minN := math.Inf(1)
	for _, p := range points {
		if p.Nodes < 2 || !(p.Gap > 0) || math.IsNaN(p.Mean) || math.IsInf(p.Mean, 0) {
			return Fit{}, fmt.Errorf("point %+v: need N ≥ 2, a positive gap and a finite mean: %w",
				p, gossip.ErrInvalidConfig)
		}
		minN = min(minN, float64(p.Nodes))
	}
	if minN == float64(slices.MaxFunc(points, func(p, q ModelPoint) int { return p.Nodes - q.Nodes }).Nodes) {
		return Fit{}, fmt.Errorf("every point has %v nodes, need two sizes at least: %w", minN, gossip.ErrInvalidConfig)
	}
	// u = ln(min N + b - 1) > 0 keeps every N + b above 1.
	bOf := func(u float64) float64 { return math.Exp(u) + 1 - minN }
	lo, hi := math.Log(1e-3), math.Log(maxFitB)
	const grid = 400
	best, bestSSE := lo, math.Inf(1)
	for i := range grid + 1 {
		u := lo + (hi-lo)*float64(i)/grid
		if _, sse, ok := solveAC(points, bOf(u)); ok && sse < bestSSE {
			best, bestSSE = u, sse
		}
	}
	if math.IsInf(bestSSE, 1) {
		return Fit{}, fmt.Errorf("the points do not determine a and c (all log2(N)/gap alike?): %w",
			gossip.ErrInvalidConfig)
	}
	// Golden-section search on [best - step, best + step].
	step := (hi - lo) / grid
	a, b := max(lo, best-step), min(hi, best+step)
	sseAt := func(u float64) float64 {
		if _, sse, ok := solveAC(points, bOf(u)); ok {
			return sse
		}
		return math.Inf(1)
	}
	const phi = 0.6180339887498949 // (√5 - 1)/2
	x1, x2 := b-phi*(b-a), a+phi*(b-a)
	f1, f2 := sseAt(x1), sseAt(x2)
	for range 100 {
		if f1 < f2 {
			b, x2, f2 = x2, x1, f1
			x1 = b - phi*(b-a)
			f1 = sseAt(x1)
		} else {
			a, x1, f1 = x1, x2, f2
			x2 = a + phi*(b-a)
			f2 = sseAt(x2)
		}
	}
	if u := (a + b) / 2; sseAt(u) < bestSSE {
		best = u
	}
	bb := bOf(best)
	ac, sse, _ := solveAC(points, bb)
	if lac, lsse, ok := solveAC(points, math.Inf(1)); ok && lsse <= sse {
		bb, ac, sse = math.Inf(1), lac, lsse
	}
	var mean, sst float64
	for _, p := range points {
		mean += p.Mean / float64(len(points))
	}
	for _, p := range points {
		sst += (p.Mean - mean) * (p.Mean - mean)
	}
	fit := Fit{Coefficients: Coefficients{A: ac[0], B: bb, C: ac[1]}, Points: len(points),
		RMS: math.Sqrt(sse / float64(len(points)))}
	if sst > 0 {
		fit.RSquared = 1 - sse/sst
	}
	return fit, nil
}

// solveAC solves for a and c by least squares at a fixed b (+Inf: the
// limit model) and returns the sum of squared residuals; ok is false when
// the design matrix is rank deficient.
func solveAC(points []ModelPoint, b float64) (ac [2]float64, sse float64, ok bool) {
	n := len(points)
	x := mat.NewDense(n, 2, nil)
	y := mat.NewVecDense(n, nil)
	for i, p := range points {
		l := 1.0
		if !math.IsInf(b, 1) {
			l = math.Log2(float64(p.Nodes) + b)
		}
		x.Set(i, 0, l/p.Gap)
		x.Set(i, 1, 1)
		y.SetVec(i, p.Mean)
	}
	var qr mat.QR
	qr.Factorize(x)
	var sol mat.VecDense
	if err := qr.SolveVecTo(&sol, false, y); err != nil {
		return ac, 0, false
	}
	ac = [2]float64{sol.AtVec(0), sol.AtVec(1)}
	for i, p := range points {
		r := p.Mean - (ac[0]*x.At(i, 0) + ac[1])
		sse += r * r
	}
	return ac, sse, true
}

// ModelFit is one of our fits next to the thesis's coefficients.
type ModelFit struct {
	// Kind and Family say which model this is (Family one of
	// ModelFamilies); JSON leaves the kind to the caller, which names it.
	Kind   ModelKind `json:"-"`
	Family string    `json:"family"`
	// Ours is fitted to Points, this package's simulations.
	Ours Fit `json:"ours"`
	// Thesis is the thesis's (nil for ModelSyncJacobiRounds).
	Thesis *Coefficients `json:"thesis,omitempty"`
	Points []ModelPoint  `json:"points"`
}

// ModelData is the simulation data of our models (modeldata.json, written by
// `go run ./cmd/figures -simulate-models`).
type ModelData struct {
	Epsilon float64 `json:"eps"`
	// Series are the points of each kind and family.
	Series []ModelSeries `json:"series"`
}

// ModelSeries is the data of one model: a kind (its String) on a family.
type ModelSeries struct {
	Kind   string       `json:"kind"`
	Family string       `json:"family"`
	Points []ModelPoint `json:"points"`
}

//go:embed modeldata.json
var modelDataJSON []byte

var modelFits = sync.OnceValues(func() ([]ModelFit, error) { return FitModelData(modelDataJSON) })

// ModelFits returns our fits, one per kind and family, fitted with FitModel
// to the simulations in modeldata.json (fitted once, on first use), next
// to the thesis's coefficients.
func ModelFits() ([]ModelFit, error) {
	fits, err := modelFits()
	return append([]ModelFit(nil), fits...), err
}

// FitModelData fits every series of a ModelData document (JSON) with
// FitModel.
func FitModelData(data []byte) ([]ModelFit, error) {
	var d ModelData
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("topology: model data: %w", err)
	}
	if d.Epsilon != ModelEpsilon {
		return nil, fmt.Errorf("topology: model data at eps %g, the models are for %g: %w",
			d.Epsilon, ModelEpsilon, gossip.ErrInvalidConfig)
	}
	var fits []ModelFit
	for _, s := range d.Series {
		kind, ok := parseModelKind(s.Kind)
		if !ok {
			return nil, fmt.Errorf("topology: model data: unknown kind %q: %w", s.Kind, gossip.ErrInvalidConfig)
		}
		f, err := fitModel(s.Points)
		if err != nil {
			return nil, fmt.Errorf("topology: model data: %s on %s: %w", s.Kind, s.Family, err)
		}
		mf := ModelFit{Kind: kind, Family: s.Family, Ours: f, Points: s.Points}
		if c, ok := ThesisCoefficients(kind, s.Family); ok {
			mf.Thesis = &c
		}
		fits = append(fits, mf)
	}
	return fits, nil
}

func parseModelKind(s string) (ModelKind, bool) {
	for _, k := range ModelKinds {
		if k.String() == s {
			return k, true
		}
	}
	return 0, false
}
