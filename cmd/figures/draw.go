package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/gossipreduce/gossipreduce/sdc/campaign"
	"github.com/gossipreduce/gossipreduce/topology"
)

// sdcData is what `gossipreduce sdc --json` writes (the fields the figures
// need).
type sdcData struct {
	Mode     string               `json:"mode"`
	Topology string               `json:"topology"`
	Nodes    int                  `json:"nodes"`
	Eps      float64              `json:"eps"`
	Runs     int                  `json:"runs"`
	Injector string               `json:"injector"`
	Points   []campaign.Point     `json:"points"`
	Baseline *campaign.Baseline   `json:"baseline"`
	RateRuns []campaign.RateRun   `json:"runs_detail"`
	Loss     []campaign.LossPoint `json:"loss"`
}

// drawAll draws the figures of every data file in dir: the sdc files by
// their mode (bits, rate or loss), the broadcast experiments' figures 6, 7
// and 10 (drawBcast), and the model figures; it logs each figure it wrote
// with the time it took.
func drawAll(dir string, log io.Writer) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return fmt.Errorf("figures: %w", err)
	}
	sort.Strings(files)
	for _, f := range files {
		start := time.Now()
		wrote, err := drawFile(f)
		if err != nil {
			return err
		}
		for _, w := range wrote {
			fmt.Fprintf(log, "%-45s from %s (%.1f s)\n", w, filepath.Base(f), time.Since(start).Seconds())
		}
	}
	start := time.Now()
	wrote, err := drawModels(dir)
	if err != nil {
		return err
	}
	for _, w := range wrote {
		fmt.Fprintf(log, "%-45s from topology/modeldata.json (%.1f s)\n", w, time.Since(start).Seconds())
	}
	return nil
}

// drawFile draws the figures of one data file, sdc or broadcast, and
// returns their paths; a file that holds no figure's data draws nothing.
func drawFile(file string) ([]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("figures: %w", err)
	}
	wrote, err := drawSDC(file, b)
	if err != nil || len(wrote) > 0 {
		return wrote, err
	}
	return drawBcast(file, b)
}

// drawSDC draws the figures of one sdc data file, if it is one, and returns
// their paths.
func drawSDC(file string, b []byte) ([]string, error) {
	var d sdcData
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("figures: %s: %w", file, err)
	}
	png := strings.TrimSuffix(file, ".json") + ".png"
	where := fmt.Sprintf("%s %d nodes, eps %g", d.Topology, d.Nodes, d.Eps)
	switch {
	case d.Mode == "loss" && len(d.Loss) > 0:
		title := fmt.Sprintf("message loss, %s, %d runs", where, d.Runs)
		return []string{png}, campaign.PlotLoss(d.Loss, title, png)
	case d.Mode == "rate" && len(d.RateRuns) > 0:
		title := fmt.Sprintf("%s, %s", d.Injector, where)
		return []string{png}, campaign.PlotRates(d.RateRuns, title, png)
	case d.Mode == "bits" && len(d.Points) > 0:
		title := fmt.Sprintf("single flips, %s, %d runs per point", where, d.Runs)
		if err := campaign.PlotErrors(d.Points, d.Eps, title, png); err != nil {
			return nil, err
		}
		if d.Baseline == nil {
			return []string{png}, nil
		}
		over := filepath.Join(filepath.Dir(png), strings.Replace(filepath.Base(png), "sdc-bits-", "sdc-overhead-", 1))
		if over == png {
			over = strings.TrimSuffix(png, ".png") + "-overhead.png"
		}
		return []string{png, over}, campaign.PlotOverhead(d.Points, *d.Baseline, title, over)
	}
	return nil, nil
}

// drawModels draws, per model kind, the simulated means of each family
// (marks with ±1 standard deviation bars), our fit (solid) and the
// thesis's (dashed), over N on a log2 axis: model-<kind>.png in dir.
func drawModels(dir string) ([]string, error) {
	fits, err := topology.ModelFits()
	if err != nil {
		return nil, fmt.Errorf("figures: %w", err)
	}
	var wrote []string
	for _, kind := range topology.ModelKinds {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s at eps %g: simulated means (±1 sd), our fit (solid), thesis (dashed)", kind, topology.ModelEpsilon)
		p.X.Label.Text = "nodes N"
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = powersOfTwo{}
		p.Y.Label.Text = "rounds"
		if strings.HasPrefix(kind.String(), "async") {
			p.Y.Label.Text = "max messages per node"
		}
		p.Legend.Top = true
		p.Legend.Left = true
		i := 0
		for _, f := range fits {
			if f.Kind != kind {
				continue
			}
			if err := addModel(p, f, i); err != nil {
				return nil, err
			}
			i++
		}
		if i == 0 {
			continue
		}
		path := filepath.Join(dir, "model-"+kind.String()+".png")
		if err := savePlot(p, path); err != nil {
			return nil, err
		}
		wrote = append(wrote, path)
	}
	return wrote, nil
}

// addModel adds one family's data and fits to p, in colour i.
func addModel(p *plot.Plot, f topology.ModelFit, i int) error {
	pts := make(plotter.XYs, len(f.Points))
	errs := make(plotter.YErrors, len(f.Points))
	for k, q := range f.Points {
		pts[k] = plotter.XY{X: float64(q.Nodes), Y: q.Mean}
		errs[k].Low, errs[k].High = q.SD, q.SD
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return fmt.Errorf("figures: %w", err)
	}
	col := modelColors[i%len(modelColors)]
	sc.Color = col
	bars, err := plotter.NewYErrorBars(struct {
		plotter.XYer
		plotter.YErrorer
	}{pts, errs})
	if err != nil {
		return fmt.Errorf("figures: %w", err)
	}
	bars.Color = col
	p.Add(sc, bars)
	p.Legend.Add(fmt.Sprintf("%s: simulated", f.Family), sc)
	curve := func(c topology.Coefficients, dashed bool, label string) error {
		var xy plotter.XYs
		for _, q := range sampleFamily(f) {
			if y, ok := c.Eval(q.Nodes, q.Gap); ok {
				xy = append(xy, plotter.XY{X: float64(q.Nodes), Y: y})
			}
		}
		if len(xy) < 2 {
			return nil
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return fmt.Errorf("figures: %w", err)
		}
		l.Color = col
		if dashed {
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(l)
		p.Legend.Add(label, l)
		return nil
	}
	o := f.Ours
	if err := curve(o.Coefficients, false, fmt.Sprintf("%s: ours a=%.3g b=%.3g c=%.4g", f.Family, o.A, o.B, o.C)); err != nil {
		return err
	}
	if t := f.Thesis; t != nil {
		return curve(*t, true, fmt.Sprintf("%s: thesis a=%.4g b=%.4g c=%.4g", f.Family, t.A, t.B, t.C))
	}
	return nil
}

// sampleFamily returns the overlays of f's family from its smallest to its
// largest size, densely enough for a smooth curve: every size with a
// closed-form gap (powers of two for the hypercube, cubes for the torus).
func sampleFamily(f topology.ModelFit) []topology.ModelPoint {
	lo, hi := f.Points[0].Nodes, f.Points[len(f.Points)-1].Nodes
	var out []topology.ModelPoint
	add := func(g topology.Graph, err error) {
		if err != nil {
			return
		}
		if cf, ok := topology.ClosedForm(g); ok {
			out = append(out, topology.ModelPoint{Nodes: g.Len(), Gap: cf.Gap})
		}
	}
	switch f.Family {
	case "hypercube":
		for n := lo; n <= hi; n *= 2 {
			add(topology.Parse("hypercube", n))
		}
	case "torus3":
		for s := 2; s*s*s <= hi; s++ {
			if s*s*s >= lo {
				add(topology.Parse(fmt.Sprintf("torus:%dx%dx%d", s, s, s), 0))
			}
		}
	default:
		for x := math.Log2(float64(lo)); x <= math.Log2(float64(hi))+1e-9; x += 0.125 {
			add(topology.Parse(f.Family, int(math.Round(math.Exp2(x)))))
		}
	}
	return out
}

// modelColors are one colour per family.
var modelColors = []plotColor{{0, 90, 181}, {220, 50, 32}, {0, 140, 70}}

// powersOfTwo labels the powers of two on a log axis, with kilo as "1K",
// "2K", … from 1024 on.
type powersOfTwo struct{ kilo bool }

// Ticks implements plot.Ticker.
func (t powersOfTwo) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for e := int(math.Ceil(math.Log2(lo))); e <= int(math.Floor(math.Log2(hi))); e++ {
		label := fmt.Sprint(1 << e)
		if t.kilo && e >= 10 {
			label = fmt.Sprintf("%dK", 1<<(e-10))
		}
		ts = append(ts, plot.Tick{Value: math.Exp2(float64(e)), Label: label})
	}
	return ts
}
