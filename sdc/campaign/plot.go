package campaign

import (
	"errors"
	"fmt"
	"image/color"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/gossipreduce/gossipreduce/internal/plotstyle"
)

// ErrorCap is where PlotErrors draws errors that are larger, infinite or
// NaN (a run that never converged to anything).
const ErrorCap = 1e20

// errorFloor is where exact results (error 0) are drawn on the log scale.
const errorFloor = 1e-17

// CheckPath reports, before a campaign runs, whether its figure can be
// saved to path afterwards: the extension names a format gonum/plot
// writes (.png, .svg, .pdf and the others it registers), the directory
// exists and a file can be created in it, and a file already at path can
// be written. It leaves nothing behind: an existing file is opened
// without truncation, and the directory is tried with a temporary file
// that is removed.
func CheckPath(path string) error {
	format := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	if _, err := draw.NewFormattedCanvas(vg.Inch, vg.Inch, format); err != nil {
		return fmt.Errorf("campaign: plot %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("campaign: plot %s: %w", path, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("campaign: plot %s: %s is not a directory", path, dir)
	}
	if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
		return closeErr(path, f.Close())
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("campaign: plot %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, ".plot-check-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) { // name the directory, not the temporary file
			err = fmt.Errorf("%s: %w", dir, pe.Err)
		}
		return fmt.Errorf("campaign: plot %s: cannot create a file in %w", path, err)
	}
	name := f.Name()
	return closeErr(path, errors.Join(f.Close(), os.Remove(name)))
}

// closeErr prefixes an error of closing or removing what CheckPath opened.
func closeErr(path string, err error) error {
	if err != nil {
		return fmt.Errorf("campaign: plot %s: %w", path, err)
	}
	return nil
}

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

// addLines draws one line per series, each in its own colour, dash pattern
// and marker, and each thinner than the one before, with larger markers
// for the earlier ones: series that coincide (PF, PFLC and PFCC lose the
// same messages) then show as nested lines and marks rather than as one.
func addLines(p *plot.Plot, order []string, lines map[string]plotter.XYs) error {
	n := len(order)
	for i, k := range order {
		l, pts, err := plotter.NewLinePoints(lines[k])
		if err != nil {
			return fmt.Errorf("campaign: %w", err)
		}
		l.Color = plotstyle.Color(i)
		l.Dashes = plotstyle.Dashes(i)
		l.Width = vg.Points(1 + 2.5*float64(n-1-i)/float64(max(1, n-1)))
		pts.Color = plotstyle.Color(i)
		pts.Shape = plotutil.Shape(i)
		pts.Radius = vg.Points(2 + 2*float64(n-1-i)/float64(max(1, n-1)))
		p.Add(l, pts)
		p.Legend.Add(k+sameAs(order[:i], lines, lines[k]), l, pts)
	}
	return nil
}

// sameAs is " (= name)" for the first series among names whose points are
// xys exactly, and "" when there is none: the legend says which lines lie
// on top of one another.
func sameAs(names []string, lines map[string]plotter.XYs, xys plotter.XYs) string {
	for _, n := range names {
		if slices.Equal(lines[n], xys) {
			return " (= " + n + ")"
		}
	}
	return ""
}

// PlotErrors draws the maximum relative error over bit positions, one line
// per algorithm and target, with the target accuracy eps as a dashed line
// drawn over them (thesis figures 4.6-4.12). The y axis fits the data and
// eps: logarithmic with a labelled tick every decade (or every third, past
// twelve) when they span two decades or more, linear with round ticks
// otherwise, so that flat lines just below eps stay apart from it. The
// format follows the extension of path (.png, .svg, .pdf).
func PlotErrors(points []Point, eps float64, title, path string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "flipped bit (0-51 mantissa, 52-62 exponent, 63 sign)"
	p.Y.Label.Text = "max relative error"
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.ThumbnailWidth = vg.Points(30)
	key := func(q Point) string { return q.Algo + " " + q.Target }
	order, lines := series(points, key)
	lo, hi := eps, eps
	for _, q := range points {
		e := q.MaxRelError
		if !(e <= ErrorCap) {
			e = ErrorCap
		}
		e = max(e, errorFloor)
		lo, hi = min(lo, e), max(hi, e)
		lines[key(q)] = append(lines[key(q)], plotter.XY{X: float64(q.Bit), Y: e})
	}
	// The top third (linear) or quarter (log) is left to the legend.
	if hi/lo >= 100 {
		p.Y.Scale = plot.LogScale{}
		lo, hi = math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
		p.Y.Min, p.Y.Max = math.Pow10(int(lo)), math.Pow10(int(hi+math.Ceil((hi-lo)/3)))
		p.Y.Tick.Marker = decades{every: 1 + 2*b2i(math.Log10(p.Y.Max/p.Y.Min) > 15)}
		if hi >= math.Log10(ErrorCap) {
			p.Title.Text += fmt.Sprintf("\n(NaN and errors ≥ %g drawn at %g)", ErrorCap, ErrorCap)
		}
	} else {
		p.Y.Min, p.Y.Max = padRange(lo, hi)
		p.Y.Max += (p.Y.Max - p.Y.Min) / 2
		p.Y.Tick.Marker = plotstyle.RoundTicks{}
	}
	if err := addLines(p, order, lines); err != nil {
		return err
	}
	epsLine := plotter.NewFunction(func(float64) float64 { return eps })
	epsLine.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	epsLine.Color = color.Black
	epsLine.Width = vg.Points(1.5)
	p.Add(epsLine)
	p.Legend.Add(fmt.Sprintf("target eps = %g", eps), epsLine)
	p.X.Min, p.X.Max = 0, 63
	p.X.Tick.Marker = plotstyle.StepTicks{Step: 8}
	return save(p, path)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// padRange widens [lo, hi] by a twentieth of its span on each side (by a
// hundredth of lo when it is empty), for a linear axis.
func padRange(lo, hi float64) (float64, float64) {
	pad := (hi - lo) / 20
	if pad == 0 {
		pad = math.Abs(lo) / 100
	}
	if pad == 0 {
		pad = 1
	}
	return lo - pad, hi + pad
}

// decades marks every power of ten, labelling every'th, as "1e-14".
type decades struct{ every int }

// Ticks implements plot.Ticker.
func (d decades) Ticks(lo, hi float64) []plot.Tick {
	every := max(1, d.every)
	var ts []plot.Tick
	for e := int(math.Floor(math.Log10(lo))); e <= int(math.Ceil(math.Log10(hi))); e++ {
		t := plot.Tick{Value: math.Pow10(e)}
		if e%every == 0 {
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

// MinBoxRuns is the fewest converged runs PlotRates puts in a box: with
// fewer, the quartiles and whiskers of a box say little.
const MinBoxRuns = 20

// PlotRates draws, per algorithm, box plots of the maximum messages per node
// of the converged runs grouped by their number of flips (thesis figure
// 4.14; whiskers at 1.5 IQR). Each algorithm's flip counts are binned
// (FlipBins with MinBoxRuns), each box stands at the mean flip count of its
// runs, a little apart from the other algorithms', with its number of runs
// above it; the algorithms keep the order in which runs names them.
func PlotRates(runs []RateRun, title, path string) error {
	var algos []string
	perAlgo := map[string]map[int]int{}
	for _, r := range runs {
		if perAlgo[r.Algo] == nil {
			perAlgo[r.Algo] = map[int]int{}
			algos = append(algos, r.Algo)
		}
		if r.Converged {
			perAlgo[r.Algo][r.Flips]++
		}
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = fmt.Sprintf("bit flips in the run (a box per bin of at least %d converged runs, at their mean; n = runs)", MinBoxRuns)
	p.Y.Label.Text = "max msgs per node (converged runs)"
	p.Legend.Top = true
	w := vg.Points(12)
	var labels plotter.XYLabels
	maxFlips := 0
	for i, a := range algos {
		bins := FlipBins(perAlgo[a], MinBoxRuns)
		vals := make([]plotter.Values, len(bins))
		sums := make([]float64, len(bins))
		for _, r := range runs {
			if r.Algo != a || !r.Converged {
				continue
			}
			b := sort.Search(len(bins), func(k int) bool { return bins[k][1] >= r.Flips })
			vals[b] = append(vals[b], float64(r.MaxMsgs))
			sums[b] += float64(r.Flips)
			maxFlips = max(maxFlips, r.Flips)
		}
		off := (float64(i) - float64(len(algos)-1)/2) * 0.4
		for b := range bins {
			x := sums[b]/float64(len(vals[b])) + off
			box, err := plotter.NewBoxPlot(w, x, vals[b])
			if err != nil {
				return fmt.Errorf("campaign: %w", err)
			}
			box.FillColor = plotstyle.Color(i)
			p.Add(box)
			labels.XYs = append(labels.XYs, plotter.XY{X: x, Y: box.AdjHigh})
			labels.Labels = append(labels.Labels, fmt.Sprintf("n=%d", len(vals[b])))
		}
		if len(bins) > 0 {
			swatch, err := plotter.NewPolygon(plotter.XYs{})
			if err != nil {
				return fmt.Errorf("campaign: %w", err)
			}
			swatch.Color = plotstyle.Color(i)
			p.Legend.Add(a, swatch)
		}
	}
	if len(labels.XYs) > 0 {
		l, err := plotter.NewLabels(labels)
		if err != nil {
			return fmt.Errorf("campaign: %w", err)
		}
		for i := range l.TextStyle {
			l.TextStyle[i].Font.Size = vg.Points(8)
			l.TextStyle[i].XAlign = -0.5
		}
		l.Offset = vg.Point{Y: vg.Points(3)}
		p.Add(l)
	}
	step := plotstyle.NiceStep(float64(maxFlips))
	p.X.Min, p.X.Max = 0, step*math.Ceil(float64(maxFlips+1)/step)
	p.X.Tick.Marker = plotstyle.StepTicks{Step: step}
	return save(p, path)
}

// FlipBins splits the flip counts of counts (converged runs per flip count)
// into consecutive bins [lo, hi], from the smallest count on: a bin grows
// until it holds at least minRuns runs, and a last bin that falls short
// joins the one before. Together the bins cover every count from the
// smallest to the largest; a single bin holds everything when there are
// fewer than minRuns runs in all.
func FlipBins(counts map[int]int, minRuns int) [][2]int {
	lo, hi := math.MaxInt, math.MinInt
	for f, n := range counts {
		if n > 0 {
			lo, hi = min(lo, f), max(hi, f)
		}
	}
	if lo > hi {
		return nil
	}
	var bins [][2]int
	start, in := lo, 0
	for f := lo; f <= hi; f++ {
		if in += counts[f]; in >= minRuns {
			bins = append(bins, [2]int{start, f})
			start, in = f+1, 0
		}
	}
	if start <= hi {
		if len(bins) > 0 {
			bins[len(bins)-1][1] = hi
		} else {
			bins = append(bins, [2]int{start, hi})
		}
	}
	return bins
}

// PlotLoss draws the message overhead over the loss rate, one line per
// algorithm in the order the points name them, with the lower bound
// 1/(1-p) - 1 (thesis figures 4.1 and 4.2): a message reaches its receiver
// with probability 1-p, so the mass a node must hand on takes at least
// 1/(1-p) times the sends. Axes start at zero and end at round values just
// past the data and the bound.
func PlotLoss(points []LossPoint, title, path string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "message loss rate p (%)"
	p.Y.Label.Text = "max msgs per node, overhead over p = 0 (%)"
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.ThumbnailWidth = vg.Points(30)
	var order []string
	lines := map[string]plotter.XYs{}
	maxLoss, maxY := 0.0, 0.0
	for _, q := range points {
		if _, ok := lines[q.Algo]; !ok {
			order = append(order, q.Algo)
		}
		lines[q.Algo] = append(lines[q.Algo], plotter.XY{X: 100 * q.Loss, Y: 100 * q.Overhead})
		maxLoss, maxY = max(maxLoss, 100*q.Loss), max(maxY, 100*q.Overhead)
	}
	if maxLoss == 0 {
		maxLoss = 1
	}
	boundAt := func(x float64) float64 { return 100 * (1/(1-x/100) - 1) }
	maxY = max(maxY, boundAt(maxLoss))
	var bound plotter.XYs
	for k := range 101 {
		x := maxLoss * float64(k) / 100
		bound = append(bound, plotter.XY{X: x, Y: boundAt(x)})
	}
	bl, err := plotter.NewLine(bound)
	if err != nil {
		return fmt.Errorf("campaign: %w", err)
	}
	bl.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	bl.Color = color.Black
	bl.Width = vg.Points(1.5)
	p.Add(bl)
	p.Legend.Add("lower bound 1/(1-p) - 1", bl)
	if err := addLines(p, order, lines); err != nil {
		return err
	}
	xs, ys := plotstyle.NiceStep(maxLoss), plotstyle.NiceStep(maxY)
	p.X.Min, p.X.Max = 0, xs*math.Ceil(maxLoss/xs)
	p.Y.Min, p.Y.Max = 0, ys*math.Ceil(maxY*1.02/ys)
	p.X.Tick.Marker = plotstyle.StepTicks{Step: xs}
	p.Y.Tick.Marker = plotstyle.StepTicks{Step: ys}
	return save(p, path)
}
