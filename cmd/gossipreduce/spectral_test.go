package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/topology"
)

// runSpectralCLI runs `gossipreduce spectral args...` and returns the exit
// status, stdout and stderr.
func runSpectralCLI(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(ctx, append([]string{"spectral"}, args...), &stdio{Stdout: &stdout, Stderr: &stderr})
	return code, stdout.String(), stderr.String()
}

// spectralJSON runs the verb with --json and decodes its one object.
func spectralJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	code, stdout, stderr := runSpectralCLI(t, context.Background(), append(args, "--json")...)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	dec := json.NewDecoder(bytes.NewBufferString(stdout))
	var obj map[string]any
	require.NoError(t, dec.Decode(&obj))
	require.False(t, dec.More(), "exactly one JSON object")
	return obj
}

func TestSpectralJSONClosedForm(t *testing.T) {
	obj := spectralJSON(t, "--topology", "hypercube", "--nodes", "1024")
	g, err := topology.Parse("hypercube", 1024)
	require.NoError(t, err)
	cf, ok := topology.ClosedForm(g)
	require.True(t, ok)
	rounds, err := topology.PredictedRounds(g, 1e-14)
	require.NoError(t, err)

	assert.Equal(t, "hypercube", obj["topology"])
	assert.Equal(t, 1024.0, obj["nodes"])
	assert.Equal(t, "closed-form", obj["method"])
	// JSON carries float64 in shortest round-trip form: equal exactly.
	assert.Equal(t, cf.Lambda2, obj["lambda2"])
	assert.Equal(t, cf.Gap, obj["spectral_gap"])
	assert.Equal(t, cf.Gap, obj["closed_form_gap"])
	assert.Equal(t, rounds, obj["predicted_rounds"])
	assert.Equal(t, 1e-14, obj["eps"])
	for kind, field := range map[topology.ModelKind]string{
		topology.ModelSyncRounds:       "model_sync_rounds",
		topology.ModelAsyncMsgs:        "model_async_msgs",
		topology.ModelAsyncFirstMsgs:   "model_async_first_msgs",
		topology.ModelSyncJacobiRounds: "model_sync_jacobi_rounds",
	} {
		want, ok := topology.Model(kind, g)
		require.True(t, ok)
		assert.Equal(t, want, obj[field], field)
		if kind == topology.ModelSyncJacobiRounds {
			assert.NotContains(t, obj, "thesis_"+field, "the thesis has no Jacobi model")
			continue
		}
		want, ok = topology.ThesisModel(kind, g)
		require.True(t, ok)
		assert.Equal(t, want, obj["thesis_"+field], field)
	}
	assert.NotContains(t, obj, "warning")
}

func TestSpectralFit(t *testing.T) {
	code, stdout, stderr := runSpectralCLI(t, context.Background(), "--fit")
	require.Equal(t, 0, code, stderr)
	for _, kind := range topology.ModelKinds {
		for _, fam := range topology.ModelFamilies {
			assert.Regexp(t, `(?m)^ *`+kind.String()+` +`+fam+` +\d+-\d+ +\d+ `, stdout, "%v %s", kind, fam)
		}
	}
	// Table 5.1(b) printed beside ours.
	assert.Regexp(t, `(?m)^ *sync-rounds +hypercube .* 0\.9064 +-15\.99 +133\.1687 `, stdout)

	var rep struct {
		Eps  float64 `json:"eps"`
		Fits []struct {
			Kind   string                 `json:"kind"`
			Family string                 `json:"family"`
			Ours   map[string]any         `json:"ours"`
			Thesis *topology.Coefficients `json:"thesis"`
			Points []topology.ModelPoint  `json:"points"`
		} `json:"fits"`
	}
	code, stdout, stderr = runSpectralCLI(t, context.Background(), "--fit", "--json")
	require.Equal(t, 0, code, stderr)
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	assert.Equal(t, topology.ModelEpsilon, rep.Eps)
	fits, err := topology.ModelFits()
	require.NoError(t, err)
	require.Len(t, rep.Fits, len(fits))
	for i, f := range rep.Fits {
		assert.Equal(t, fits[i].Kind.String(), f.Kind)
		assert.Equal(t, fits[i].Ours.RSquared, f.Ours["r_squared"])
		assert.Len(t, f.Points, len(fits[i].Points))
		if fits[i].Thesis != nil {
			assert.Equal(t, *fits[i].Thesis, *f.Thesis)
		}
	}
}

func TestSpectralJSONNumeric(t *testing.T) {
	obj := spectralJSON(t, "--topology", "bmg", "--nodes", "64", "--eps", "1e-6")
	assert.Equal(t, "numeric", obj["method"])
	for _, absent := range []string{"closed_form_gap", "model_sync_rounds", "model_async_msgs", "model_async_first_msgs", "warning"} {
		assert.NotContains(t, obj, absent, "bmg has no %s", absent)
	}
	lambda2, gap := obj["lambda2"].(float64), obj["spectral_gap"].(float64)
	assert.Equal(t, 1-lambda2, gap)
	// Equation 5.1 with constant 1: (ln 64 + ln 1e6) / gap; the verb and
	// this line round differently by a few ulps.
	assert.InEpsilon(t, (math.Log(64)+6*math.Ln10)/gap, obj["predicted_rounds"].(float64), 1e-14)

	// --method numeric on a graph with a closed form shows both, and they
	// agree to the solver's accuracy (N·2^-52 ≈ 1e-14 at N = 64).
	obj = spectralJSON(t, "--topology", "torus", "--nodes", "64", "--method", "numeric")
	assert.Equal(t, "numeric", obj["method"])
	assert.Equal(t, "torus:4x4x4", obj["topology"])
	assert.InDelta(t, obj["closed_form_gap"].(float64), obj["spectral_gap"].(float64), 1e-12)
	assert.Contains(t, obj, "model_async_msgs", "64 nodes is inside the torus fit")
}

func TestSpectralTorusSidesNeedNoNodes(t *testing.T) {
	obj := spectralJSON(t, "--topology", "torus:8x8x8")
	assert.Equal(t, 512.0, obj["nodes"])
	assert.Equal(t, "torus:8x8x8", obj["topology"])
}

// TestSpectralDefaultsAreTheSimulatedVerbs: without flags, spectral
// models the overlay the other simulated verbs run, the thesis's 32-node
// hypercube at ε 1e-14.
func TestSpectralDefaultsAreTheSimulatedVerbs(t *testing.T) {
	obj := spectralJSON(t)
	assert.Equal(t, "hypercube", obj["topology"])
	assert.Equal(t, 32.0, obj["nodes"])
	assert.Equal(t, 1e-14, obj["eps"])
}

func TestSpectralDirectedHypercubeWarns(t *testing.T) {
	obj := spectralJSON(t, "--topology", "dhypercube", "--nodes", "64")
	assert.Equal(t, 0.5, obj["lambda2"], "λ2 = 1/2 whatever N")
	assert.Contains(t, obj["warning"], "not strongly connected")

	code, stdout, _ := runSpectralCLI(t, context.Background(), "--topology", "dhypercube", "--nodes", "64")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "warning: dhypercube is not strongly connected")
}

func TestSpectralText(t *testing.T) {
	code, stdout, stderr := runSpectralCLI(t, context.Background(), "--topology", "complete", "--nodes", "100")
	require.Equal(t, 0, code, stderr)
	for _, line := range []string{"topology", "nodes", "method", "lambda2", "spectral_gap", "closed_form_gap", "predicted_rounds", "model_sync_rounds", "model_async_msgs"} {
		assert.Regexp(t, "(?m)^"+line+" +\\S", stdout, line)
	}
	assert.Regexp(t, `(?m)^lambda2 +0\.4949494949`, stdout, "(N-2)/(2N-2) = 98/198")
	assert.Regexp(t, `(?m)^nodes +100$`, stdout)
}

func TestSpectralBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		say  string
	}{
		{[]string{"--topology", "mesh", "--nodes", "64"}, 2, "unknown topology"},
		{[]string{"--topology", "hypercube", "--nodes", "100"}, 2, "nearest: 64 or 128"},
		{[]string{"--topology", "hypercube", "--nodes", "64", "--eps", "0"}, 2, "--eps 0 must be in (0, 1)"},
		{[]string{"--topology", "hypercube", "--nodes", "64", "--eps", "1"}, 2, "must be in (0, 1)"},
		{[]string{"--topology", "hypercube", "--nodes", "64", "--eps", "-1e-3"}, 2, "must be in (0, 1)"},
		{[]string{"--topology", "hypercube", "--nodes", "64", "--eps", "NaN"}, 2, "--eps NaN"},
		{[]string{"--topology", "hypercube", "--nodes", "64", "--eps", "abc"}, 2, `--eps: "abc" is not a valid float`},
		{[]string{"--topology", "ring", "--nodes", "-4"}, 2, "--nodes -4 must be at least 1"},
		{[]string{"--topology", "torus:8xx8"}, 2, `side 1 is ""`},
		{[]string{"--topology", "torus:8x8", "--nodes", "60"}, 2, "has 64 nodes, not 60"},
		{[]string{"--topology", "hypercube", "--nodes", "64", "--bogus"}, 2, "unknown flag --bogus"},
		{[]string{"--topology", "hypercube", "--nodes", "64", "extra"}, 2, "unexpected argument"},
		{[]string{"--topology", "bmg", "--nodes", "64", "--method", "closed-form"}, 2, "bmg has no closed form"},
		{[]string{"--topology", "bmg", "--nodes", "64", "--method", "magic"}, 2, "--method"},
		{[]string{"--topology", "bmg", "--nodes", "10000"}, 1, "limited to 8192 nodes"},
	} {
		code, stdout, stderr := runSpectralCLI(t, context.Background(), c.args...)
		assert.Equal(t, c.code, code, "%v: stderr %s", c.args, stderr)
		assert.Contains(t, stderr, c.say, "%v", c.args)
		assert.Empty(t, stdout, "%v prints no result", c.args)
	}
}

func TestSpectralHelp(t *testing.T) {
	code, _, stderr := runSpectralCLI(t, context.Background(), "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, stderr, "-topology")
}

func TestSpectralCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	code, stdout, stderr := runSpectralCLI(t, ctx, "--topology", "bmg", "--nodes", "512")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "context canceled")
	assert.Empty(t, stdout)
	// The closed form needs no computation and still answers.
	code, _, stderr = runSpectralCLI(t, ctx, "--topology", "hypercube", "--nodes", "512")
	assert.Equal(t, 0, code, stderr)
}
