package campaign

import (
	"fmt"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// ErrorCap is where PlotErrors draws errors that are larger, infinite or
// NaN (a run that never converged to anything).
const ErrorCap = 1e20

// errorFloor is where exact results (error 0) are drawn on the log scale.
const errorFloor = 1e-17

func save(p *plot.Plot, path string) error {
	if err := p.Save(8*vg.Inch, 5*vg.Inch, path); err != nil {
		return fmt.Errorf("campaign: plot %s: %w", path, err)
	}
	return nil
}

func series(points []Point, key func(Point) string) ([]string, map[string]plotter.XYs) {
	var order []string
	lines := map[string]plotter.XYs{}
	for _, p := range points {
		k := key(p)
		if _, ok := lines[k]; !ok {
			order = append(order, k)
		}
		lines[k] = append(lines[k], plotter.XY{X: float64(p.Bit)})
	}
	for k := range lines {
		lines[k] = lines[k][:0]
	}
	return order, lines
}

func addLines(p *plot.Plot, order []string, lines map[string]plotter.XYs) error {
	for i, k := range order {
		l, pts, err := plotter.NewLinePoints(lines[k])
		if err != nil {
			return fmt.Errorf("campaign: %w", err)
		}
		l.Color = plotutil.Color(i)
		l.Dashes = plotutil.Dashes(i / 7)
		pts.Color = plotutil.Color(i)
		pts.Shape = plotutil.Shape(i)
		pts.Radius = vg.Points(2)
		p.Add(l, pts)
		p.Legend.Add(k, l, pts)
	}
	return nil
}

// PlotErrors draws the maximum relative error over bit positions on a log
// scale, one line per algorithm and target, with the target accuracy eps as
// a dashed line (thesis figures 4.6-4.12). The format follows the
// extension of path (.png, .svg, .pdf).
func PlotErrors(points []Point, eps float64, title, path string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "flipped bit (0-51 mantissa, 52-62 exponent, 63 sign)"
	p.Y.Label.Text = "max relative error"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = decades{}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.ThumbnailWidth = vg.Points(20)
	key := func(q Point) string { return q.Algo + " " + q.Target }
	order, lines := series(points, key)
	for _, q := range points {
		e := q.MaxRelError
		if !(e <= ErrorCap) {
			e = ErrorCap
		}
		lines[key(q)] = append(lines[key(q)], plotter.XY{X: float64(q.Bit), Y: max(e, errorFloor)})
	}
	if err := addLines(p, order, lines); err != nil {
		return err
	}
	epsLine := plotter.NewFunction(func(float64) float64 { return eps })
	epsLine.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
	epsLine.Color = color.Gray{Y: 100}
	p.Add(epsLine)
	p.Legend.Add(fmt.Sprintf("eps %g", eps), epsLine)
	p.X.Min, p.X.Max = 0, 63
	p.Y.Min, p.Y.Max = errorFloor, 1e40
	return save(p, path)
}

// decades marks every third power of ten, labelled "1e-14".
type decades struct{}

// Ticks implements plot.Ticker.
func (decades) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for e := int(math.Floor(math.Log10(lo))); e <= int(math.Ceil(math.Log10(hi))); e++ {
		t := plot.Tick{Value: math.Pow10(e)}
		if e%3 == 0 {
			t.Label = fmt.Sprintf("1e%d", e)
		}
		ts = append(ts, t)
	}
	return ts
}

// PlotOverhead draws the mean messages per node relative to the baseline's
// (fault-free Push-Sum in the thesis), in percent, over bit positions
// (thesis figure 4.13).
func PlotOverhead(points []Point, base Baseline, title, path string) error {
	if !(base.MeanMsgs > 0) {
		return fmt.Errorf("campaign: no baseline to plot the overhead against")
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "flipped bit"
	p.Y.Label.Text = fmt.Sprintf("mean msgs per node vs %s without flips (%%)", base.Algo)
	p.Legend.Top = true
	p.Legend.Left = true
	key := func(q Point) string { return q.Algo + " " + q.Target }
	order, lines := series(points, key)
	for _, q := range points {
		lines[key(q)] = append(lines[key(q)], plotter.XY{X: float64(q.Bit), Y: 100 * (q.MeanMsgs/base.MeanMsgs - 1)})
	}
	if err := addLines(p, order, lines); err != nil {
		return err
	}
	p.X.Min, p.X.Max = 0, 63
	return save(p, path)
}

// PlotRates draws, per algorithm, box plots of the maximum messages per node
// of the converged runs grouped by their number of flips (thesis figure
// 4.14; whiskers at 1.5 IQR).
func PlotRates(runs []RateRun, title, path string) error {
	var algos []string
	groups := map[string]map[int]plotter.Values{}
	maxFlips := 0
	for _, r := range runs {
		if groups[r.Algo] == nil {
			groups[r.Algo] = map[int]plotter.Values{}
			algos = append(algos, r.Algo)
		}
		if r.Converged {
			groups[r.Algo][r.Flips] = append(groups[r.Algo][r.Flips], float64(r.MaxMsgs))
			maxFlips = max(maxFlips, r.Flips)
		}
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "bit flips in the run"
	p.Y.Label.Text = "max msgs per node (converged runs)"
	w := vg.Points(14)
	var names []string
	for f := 0; f <= maxFlips; f++ {
		names = append(names, fmt.Sprint(f))
	}
	for i, a := range algos {
		off := (float64(i) - float64(len(algos)-1)/2) * 0.35
		var flips []int
		for f := range groups[a] {
			flips = append(flips, f)
		}
		sort.Ints(flips)
		for _, f := range flips {
			b, err := plotter.NewBoxPlot(w, float64(f)+off, groups[a][f])
			if err != nil {
				return fmt.Errorf("campaign: %w", err)
			}
			b.FillColor = plotutil.Color(i)
			p.Add(b)
			if f == flips[0] {
				swatch, err := plotter.NewPolygon(plotter.XYs{})
				if err != nil {
					return fmt.Errorf("campaign: %w", err)
				}
				swatch.Color = plotutil.Color(i)
				p.Legend.Add(a, swatch)
			}
		}
	}
	p.NominalX(names...)
	p.Legend.Top = true
	return save(p, path)
}

// PlotLoss draws the message overhead over the loss rate, one line per
// algorithm, with the lower bound 1/(1-p) - 1 (thesis figures 4.1 and 4.2).
func PlotLoss(points []LossPoint, title, path string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "message loss rate (%)"
	p.Y.Label.Text = "max msgs overhead (%)"
	p.Legend.Top = true
	p.Legend.Left = true
	var order []string
	lines := map[string]plotter.XYs{}
	for _, q := range points {
		if _, ok := lines[q.Algo]; !ok {
			order = append(order, q.Algo)
		}
		lines[q.Algo] = append(lines[q.Algo], plotter.XY{X: 100 * q.Loss, Y: 100 * q.Overhead})
	}
	if err := addLines(p, order, lines); err != nil {
		return err
	}
	bound := plotter.NewFunction(func(x float64) float64 { return 100 * (1/(1-x/100) - 1) })
	bound.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
	bound.Color = color.Gray{Y: 100}
	p.Add(bound)
	p.Legend.Add("lower bound 1/(1-p)-1", bound)
	maxLoss := 0.0
	for _, q := range points {
		maxLoss = math.Max(maxLoss, 100*q.Loss)
	}
	p.X.Min, p.X.Max = 0, maxLoss
	return save(p, path)
}
