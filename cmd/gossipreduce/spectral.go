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
	// The cost models of thesis equation 5.2 with our coefficients, fitted
	// to our simulations (topology.Model), at eps 1e-14.
	ModelSyncRounds       *float64 `json:"model_sync_rounds,omitempty"`
	ModelAsyncMsgs        *float64 `json:"model_async_msgs,omitempty"`
	ModelAsyncFirstMsgs   *float64 `json:"model_async_first_msgs,omitempty"`
	ModelSyncJacobiRounds *float64 `json:"model_sync_jacobi_rounds,omitempty"`
	// The same with the thesis's coefficients (tables 5.1, 5.2 and 5.3).
	ThesisSyncRounds     *float64 `json:"thesis_model_sync_rounds,omitempty"`
	ThesisAsyncMsgs      *float64 `json:"thesis_model_async_msgs,omitempty"`
	ThesisAsyncFirstMsgs *float64 `json:"thesis_model_async_first_msgs,omitempty"`
	Warning              string   `json:"warning,omitempty"`
}

type spectralCmd struct {
	group  groupFlags
	method string
	fit    bool
	fs     *flag.FlagSet
	g      topology.Graph // the overlay, built by check
}

func (c *spectralCmd) flags(fs *flag.FlagSet) {
	c.fs = fs
	c.group.register(fs, familyDefaults[simFamily])
	fs.BoolVar(&c.fit, "fit", false, "print the cost models' coefficients fitted to our simulations next to the thesis's (tables 5.1-5.3), and nothing else")
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
	if c.fit {
		return printFits(out)
	}
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
	rep.ModelSyncRounds = model(topology.Model, topology.ModelSyncRounds, g)
	rep.ModelAsyncMsgs = model(topology.Model, topology.ModelAsyncMsgs, g)
	rep.ModelAsyncFirstMsgs = model(topology.Model, topology.ModelAsyncFirstMsgs, g)
	rep.ModelSyncJacobiRounds = model(topology.Model, topology.ModelSyncJacobiRounds, g)
	rep.ThesisSyncRounds = model(topology.ThesisModel, topology.ModelSyncRounds, g)
	rep.ThesisAsyncMsgs = model(topology.ThesisModel, topology.ModelAsyncMsgs, g)
	rep.ThesisAsyncFirstMsgs = model(topology.ThesisModel, topology.ModelAsyncFirstMsgs, g)
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

func model(eval func(topology.ModelKind, topology.Graph) (float64, bool), kind topology.ModelKind, g topology.Graph) *float64 {
	if f, ok := eval(kind, g); ok {
		return &f
	}
	return nil
}

// fitReport is what `gossipreduce spectral --fit --json` prints.
type fitReport struct {
	Eps  float64    `json:"eps"`
	Fits []fitEntry `json:"fits"`
}

type fitEntry struct {
	Kind string `json:"kind"`
	topology.ModelFit
}

// printFits prints our fitted coefficients next to the thesis's.
func printFits(out *stdio) error {
	fits, err := topology.ModelFits()
	if err != nil {
		return err
	}
	if out.json {
		rep := fitReport{Eps: topology.ModelEpsilon}
		for _, f := range fits {
			rep.Fits = append(rep.Fits, fitEntry{Kind: f.Kind.String(), ModelFit: f})
		}
		return writeJSON(out.Stdout, rep)
	}
	fmt.Fprintf(out.Stdout, "f = a·log2(N + b)/(1 - λ2) + c (thesis eq. 5.2) at eps %g, fitted by least squares to the\n"+
		"means of our simulations (topology/modeldata.json), next to the thesis's tables 5.1-5.3; b = +Inf is\n"+
		"the limit f = a/(1 - λ2) + c, which those data fit best. At N* (1024 nodes, the torus 10x10x10):\n"+
		"the simulated mean, our model and the thesis's.\n\n", topology.ModelEpsilon)
	tw := tabwriter.NewWriter(out.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "model\tfamily\tN\truns\ta\tb\tc\tR²\trms\tthesis a\tthesis b\tthesis c\tsim N*\tours N*\tthesis N*\t")
	dash := func(v float64, ok bool) string {
		if !ok {
			return "-"
		}
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	for _, f := range fits {
		o := f.Ours
		runs := 0
		var star *topology.ModelPoint
		for i, p := range f.Points {
			runs += p.Runs
			if p.Nodes == 1024 || p.Nodes == 1000 {
				star = &f.Points[i]
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d-%d\t%d\t%.4f\t%.4g\t%.4f\t%.4f\t%.2f\t", f.Kind, f.Family,
			f.Points[0].Nodes, f.Points[len(f.Points)-1].Nodes, runs, o.A, o.B, o.C, o.RSquared, o.RMS)
		if t := f.Thesis; t != nil {
			fmt.Fprintf(tw, "%.4f\t%.4g\t%.4f\t", t.A, t.B, t.C)
		} else {
			fmt.Fprintf(tw, "-\t-\t-\t")
		}
		var sim, ours, thesis string = "-", "-", "-"
		if star != nil {
			sim = dash(star.Mean, true)
			ours = dash(o.Eval(star.Nodes, star.Gap))
			if t := f.Thesis; t != nil {
				thesis = dash(t.Eval(star.Nodes, star.Gap))
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t\n", sim, ours, thesis)
	}
	return tw.Flush()
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
		{"model_sync_rounds", "synchronous rounds, Algorithm 7, our fit", r.ModelSyncRounds},
		{"thesis_model_sync_rounds", "the same, thesis table 5.1", r.ThesisSyncRounds},
		{"model_sync_jacobi_rounds", "synchronous rounds, Jacobi (sim --mode sync), our fit", r.ModelSyncJacobiRounds},
		{"model_async_msgs", "asynchronous max messages, all converged, our fit", r.ModelAsyncMsgs},
		{"thesis_model_async_msgs", "the same, thesis table 5.2", r.ThesisAsyncMsgs},
		{"model_async_first_msgs", "asynchronous max messages, first converged, our fit", r.ModelAsyncFirstMsgs},
		{"thesis_model_async_first_msgs", "the same, thesis table 5.3", r.ThesisAsyncFirstMsgs},
	} {
		if m.v != nil {
			fmt.Fprintf(tw, "%s\t%.1f\t(%s, at eps 1e-14)\n", m.name, *m.v, m.what)
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
