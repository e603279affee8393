package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gossipreduce/gossipreduce/topology"
)

func init() {
	register("spectral", "spectral gap and predicted Push-Sum rounds of an overlay", runSpectral)
}

// spectralReport is what `gossipreduce spectral --json` prints. lambda2,
// spectral_gap and predicted_rounds are the contract of DESIGN.md; the
// optional fields appear only where they exist for the topology.
type spectralReport struct {
	Topology        string   `json:"topology"`
	Nodes           int      `json:"nodes"`
	Eps             float64  `json:"eps"`
	Method          string   `json:"method"`
	Lambda2         float64  `json:"lambda2"`
	SpectralGap     float64  `json:"spectral_gap"`
	PredictedRounds float64  `json:"predicted_rounds"`
	ClosedFormGap   *float64 `json:"closed_form_gap,omitempty"`
	// The fitted models of thesis equation 5.2 (tables 5.1, 5.2 and 5.3).
	ModelSyncRounds     *float64 `json:"model_sync_rounds,omitempty"`
	ModelAsyncMsgs      *float64 `json:"model_async_msgs,omitempty"`
	ModelAsyncFirstMsgs *float64 `json:"model_async_first_msgs,omitempty"`
	Warning             string   `json:"warning,omitempty"`
}

func runSpectral(ctx context.Context, args []string, out *stdio) error {
	fs := newFlags("spectral", out)
	topo := fs.String("topology", "hypercube", "overlay: "+strings.Join(topology.Names(), "|")+"|torus:AxBxC")
	nodes := fs.Int("nodes", 0, "number of nodes N (required, except for torus:AxBxC, where it defaults to the product of the sides)")
	eps := fs.Float64("eps", 1e-14, "target accuracy ε in (0, 1) for predicted_rounds (the thesis models were fitted at 1e-14)")
	method := fs.String("method", "auto", "auto (closed form where known, else numeric), closed-form, or numeric (dense, N ≤ "+strconv.Itoa(topology.MaxDenseNodes)+")")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if math.IsNaN(*eps) || *eps <= 0 || *eps >= 1 {
		return usagef("--eps %v must be in (0, 1)", *eps)
	}
	if *method != "auto" && *method != topology.MethodClosedForm && *method != topology.MethodNumeric {
		return usagef("--method %q: want auto, closed-form or numeric", *method)
	}
	if *nodes == 0 && !strings.Contains(*topo, ":") {
		return usagef("--nodes is required for --topology %s", *topo)
	}
	g, err := topology.Parse(*topo, *nodes)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}

	cf, haveCF := topology.ClosedForm(g)
	var s topology.Spectral
	switch {
	case *method == topology.MethodClosedForm && !haveCF:
		return usagef("%s has no closed form; use --method numeric or auto", g.Name())
	case *method == topology.MethodClosedForm, *method == "auto" && haveCF:
		s = cf
	default:
		if s, err = numericSpectrum(ctx, g); err != nil {
			return err
		}
	}
	rounds, err := s.Rounds(g.Len(), *eps)
	if err != nil {
		return err
	}
	rep := spectralReport{
		Topology: g.Name(), Nodes: g.Len(), Eps: *eps, Method: s.Method,
		Lambda2: s.Lambda2, SpectralGap: s.Gap, PredictedRounds: rounds,
	}
	if haveCF {
		rep.ClosedFormGap = &cf.Gap
	}
	rep.ModelSyncRounds = model(topology.ModelSyncRounds, g)
	rep.ModelAsyncMsgs = model(topology.ModelAsyncMsgs, g)
	rep.ModelAsyncFirstMsgs = model(topology.ModelAsyncFirstMsgs, g)
	// Every undirected overlay Parse builds is connected; a directed one
	// has no closed form, so it is small enough (numeric) to search.
	if g.Directed() && !topology.StronglyConnected(g) {
		rep.Warning = g.Name() + " is not strongly connected: some nodes never receive or never send, " +
			"so averaging does not converge at every node; predicted_rounds is how fast mass drains into the sink, not a convergence time"
	}

	if *asJSON {
		enc := json.NewEncoder(out.Stdout)
		return enc.Encode(rep)
	}
	return printSpectral(out, rep)
}

// numericSpectrum runs topology.Spectrum, which cannot be interrupted, in a
// goroutine so that a cancelled ctx (Ctrl-C on a minutes-long 8192-node
// decomposition) returns at once; the process then exits and takes the
// goroutine with it.
func numericSpectrum(ctx context.Context, g topology.Graph) (topology.Spectral, error) {
	if err := ctx.Err(); err != nil {
		return topology.Spectral{}, err
	}
	type result struct {
		s   topology.Spectral
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := topology.Spectrum(g)
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		return r.s, r.err
	case <-ctx.Done():
		return topology.Spectral{}, fmt.Errorf("numeric spectrum of %s on %d nodes: %w", g.Name(), g.Len(), ctx.Err())
	}
}

func model(kind topology.ModelKind, g topology.Graph) *float64 {
	if f, ok := topology.Model(kind, g); ok {
		return &f
	}
	return nil
}

func printSpectral(out *stdio, r spectralReport) error {
	tw := tabwriter.NewWriter(out.Stdout, 0, 0, 2, ' ', 0)
	num := func(x float64) string { return strconv.FormatFloat(x, 'g', 10, 64) }
	fmt.Fprintf(tw, "topology\t%s\n", r.Topology)
	fmt.Fprintf(tw, "nodes\t%d\n", r.Nodes)
	fmt.Fprintf(tw, "method\t%s\n", r.Method)
	fmt.Fprintf(tw, "lambda2\t%s\n", num(r.Lambda2))
	fmt.Fprintf(tw, "spectral_gap\t%s\n", num(r.SpectralGap))
	if r.ClosedFormGap != nil {
		fmt.Fprintf(tw, "closed_form_gap\t%s\n", num(*r.ClosedFormGap))
	}
	fmt.Fprintf(tw, "predicted_rounds\t%.1f\t(eq. 5.1, constant 1, eps %g: an order of magnitude)\n", r.PredictedRounds, r.Eps)
	for _, m := range []struct {
		name, what string
		v          *float64
	}{
		{"model_sync_rounds", "synchronous iterations, table 5.1", r.ModelSyncRounds},
		{"model_async_msgs", "asynchronous max messages, all converged, table 5.2", r.ModelAsyncMsgs},
		{"model_async_first_msgs", "asynchronous max messages, first converged, table 5.3", r.ModelAsyncFirstMsgs},
	} {
		if m.v != nil {
			fmt.Fprintf(tw, "%s\t%.1f\t(%s, fitted at eps 1e-14)\n", m.name, *m.v, m.what)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Warning != "" {
		_, err := fmt.Fprintf(out.Stdout, "warning: %s\n", r.Warning)
		return err
	}
	return nil
}
