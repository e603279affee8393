package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gossipreduce/gossipreduce/topology"
)

func init() {
	register("spectral", "spectral gap and predicted Push-Sum rounds of an overlay", simFamily, func() command { return &spectralCmd{} })
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

type spectralCmd struct {
	group  groupFlags
	method string
	fs     *flag.FlagSet
	g      topology.Graph // the overlay, built by check
}

func (c *spectralCmd) flags(fs *flag.FlagSet) {
	c.fs = fs
	c.group.register(fs, familyDefaults[simFamily])
	fs.StringVar(&c.method, "method", "auto", "auto (closed form where known, else numeric), closed-form, or numeric (dense, N ≤ "+strconv.Itoa(topology.MaxDenseNodes)+")")
}

func (c *spectralCmd) check() error {
	if err := c.group.check(); err != nil {
		return err
	}
	if c.method != "auto" && c.method != topology.MethodClosedForm && c.method != topology.MethodNumeric {
		return usagef("--method %q: want auto, closed-form or numeric", c.method)
	}
	n := c.group.nodes
	if strings.Contains(c.group.topology, ":") && !given(c.fs)["nodes"] {
		n = 0 // torus:AxBxC has A·B·C nodes
	}
	g, err := c.group.overlay(n)
	if err != nil {
		return err
	}
	if _, ok := topology.ClosedForm(g); c.method == topology.MethodClosedForm && !ok {
		return usagef("%s has no closed form; use --method numeric or auto", g.Name())
	}
	c.g = g
	return nil
}

func (c *spectralCmd) exec(ctx context.Context, out *stdio) error {
	g := c.g
	cf, haveCF := topology.ClosedForm(g)
	s := cf
	if c.method == topology.MethodNumeric || !haveCF {
		var err error
		if s, err = numericSpectrum(ctx, g); err != nil {
			return err
		}
	}
	rounds, err := s.Rounds(g.Len(), c.group.eps)
	if err != nil {
		return err
	}
	rep := spectralReport{
		Topology: g.Name(), Nodes: g.Len(), Eps: c.group.eps, Method: s.Method,
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
	if out.json {
		return writeJSON(out.Stdout, rep)
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
