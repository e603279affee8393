package main

import (
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/gossipreduce/gossipreduce/internal/plotstyle"
)

// bcastData holds the fields of the broadcast experiments' data files
// (broadcast/bsim/experiments_test.go) that the figures need: Series from
// TestExperimentFig67 (bcast-fig67.json), Fig10 from TestExperimentTable1
// (bcast-table1.json).
type bcastData struct {
	L      int            `json:"L"`
	O      int            `json:"o"`
	Series []bcastSeries  `json:"series"`
	Nodes  int            `json:"nodes"`
	Runs   int            `json:"runs"`
	LFF    float64        `json:"l_ff"`
	Fig10  []bcastGapPair `json:"fig10_pairs"`
	Gossip int            `json:"gossip_runs"`
}

// bcastSeries is one line of figures 6 and 7 of corrected trees: messages
// per process and quiescence latency over P; for corrected gossip the
// means of several runs with their 5th and 95th percentiles.
type bcastSeries struct {
	Name       string
	P          []int
	Msgs       []float64
	Quiescence []float64
	Q5, Q95    []float64
}

// bcastGapPair is one distinct (g_max, L_SCC) pair of a tree in Table 1's
// runs, with the number of runs that gave it.
type bcastGapPair struct {
	Tree string `json:"tree"`
	GMax int    `json:"g_max"`
	LSCC int    `json:"l_scc"`
	Runs int    `json:"runs"`
}

// The figures drawn from the broadcast data, beside the data file.
const (
	fig6Name  = "bcast-fig6-messages.png"
	fig7Name  = "bcast-fig7-quiescence.png"
	fig10Name = "bcast-fig10-gmax-lscc.png"
)

// drawBcast draws the figures of one broadcast data file, if it holds any,
// and returns their paths.
func drawBcast(file string, b []byte) ([]string, error) {
	var d bcastData
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("figures: %s: %w", file, err)
	}
	dir := filepath.Dir(file)
	switch {
	case len(d.Series) > 0:
		f6, f7 := filepath.Join(dir, fig6Name), filepath.Join(dir, fig7Name)
		if err := drawFig67(d, false, f6); err != nil {
			return nil, err
		}
		return []string{f6, f7}, drawFig67(d, true, f7)
	case len(d.Fig10) > 0:
		f10 := filepath.Join(dir, fig10Name)
		return []string{f10}, drawFig10(d, f10)
	}
	return nil, nil
}

// treeGlyphs are the marks of the trees of figures 6, 7 and 10 (binomial,
// 4-ary, Lamé 2, optimal), and gossip's last.
var treeGlyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.BoxGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}, draw.RingGlyph{}}

// schemeStyle is the colour, mark and dash pattern of a series of figures 6
// and 7, by its name ("<tree> checked|optimized:4|ack", "gossip … (CCG)",
// "gossip … (OCG)"): a colour and a mark per tree (black rings for
// gossip) and a dash pattern per correction: solid checked, dotted
// opportunistic, dashed acknowledged. No two series share both mark and
// dash pattern, so the figure reads in grey too.
func schemeStyle(name string, trees []string) (color.Color, draw.GlyphDrawer, []vg.Length) {
	tree, kind, _ := strings.Cut(name, " ")
	i := len(treeGlyphs) - 1
	c := color.Color(color.Black)
	if tree != "gossip" {
		i = len(trees)
		for k, t := range trees {
			if t == tree {
				i = k
			}
		}
		c = plotstyle.Color(i)
		i = min(i, len(treeGlyphs)-2)
	}
	var dashes []vg.Length
	switch {
	case strings.HasSuffix(kind, "ack"):
		dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	case strings.Contains(kind, "optimized") || strings.Contains(kind, "OCG"):
		dashes = []vg.Length{vg.Points(1), vg.Points(2.5)}
	}
	return c, treeGlyphs[i], dashes
}

// drawFig67 draws figure 6 (messages per process) or, with quiescence,
// figure 7 (quiescence latency; like the paper's, without the optimized
// opportunistic trees, and with gossip's 5–95 % range as bars) to path.
// The x axis is P on a log scale, the y axis fits the data with round
// ticks and leaves the top part to the legend.
func drawFig67(d bcastData, quiescence bool, path string) error {
	p := plot.New()
	p.X.Label.Text = "processes P"
	p.X.Scale = plot.LogScale{}
	if quiescence {
		p.Title.Text = fmt.Sprintf("Quiescence latency, no failures (figure 7; gossip: mean of %d runs, bars 5-95 %%)", d.Gossip)
		p.Y.Label.Text = fmt.Sprintf("time steps (L = %d, o = %d)", d.L, d.O)
	} else {
		p.Title.Text = fmt.Sprintf("Messages per process, no failures (figure 6; gossip: mean of %d runs)", d.Gossip)
		p.Y.Label.Text = "messages per process"
	}
	var trees []string
	for _, s := range d.Series {
		if t, _, _ := strings.Cut(s.Name, " "); t != "gossip" && (len(trees) == 0 || trees[len(trees)-1] != t) {
			trees = append(trees, t)
		}
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	minP, maxP := math.MaxInt, 0
	var drawn []drawnSeries
	for _, s := range d.Series {
		if quiescence && strings.Contains(s.Name, "optimized") {
			continue // the paper's figure 7 shows checked and ack trees
		}
		ys := s.Msgs
		if quiescence {
			ys = s.Quiescence
		}
		if len(ys) != len(s.P) {
			return fmt.Errorf("figures: %s: %d values for %d sizes", s.Name, len(ys), len(s.P))
		}
		xy := make(plotter.XYs, len(s.P))
		for k := range s.P {
			xy[k] = plotter.XY{X: float64(s.P[k]), Y: ys[k]}
			lo, hi = min(lo, ys[k]), max(hi, ys[k])
			minP, maxP = min(minP, s.P[k]), max(maxP, s.P[k])
		}
		l, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return fmt.Errorf("figures: %s: %w", s.Name, err)
		}
		c, glyph, dashes := schemeStyle(s.Name, trees)
		l.Color, l.Dashes, pts.Color, pts.Shape = c, dashes, c, glyph
		pts.Radius = vg.Points(2.5)
		p.Add(l, pts)
		if quiescence && len(s.Q5) == len(s.P) && len(s.Q95) == len(s.P) {
			errs := make(plotter.YErrors, len(s.P))
			for k := range s.P {
				errs[k].Low, errs[k].High = ys[k]-s.Q5[k], s.Q95[k]-ys[k]
				lo, hi = min(lo, s.Q5[k]), max(hi, s.Q95[k])
			}
			bars, err := plotter.NewYErrorBars(struct {
				plotter.XYer
				plotter.YErrorer
			}{xy, errs})
			if err != nil {
				return fmt.Errorf("figures: %s: %w", s.Name, err)
			}
			bars.Color = c
			p.Add(bars)
		}
		p.Legend.Add(s.Name+sameAs(drawn, s.P, ys), l, pts)
		drawn = append(drawn, drawnSeries{s.Name, s.P, ys})
	}
	if maxP == 0 {
		return fmt.Errorf("figures: %s: no series to draw", path)
	}
	p.X.Tick.Marker = powersOfTwo{kilo: true}
	p.X.Min, p.X.Max = float64(minP)/1.15, float64(maxP)*1.15
	step := plotstyle.NiceStep(hi - lo)
	p.Y.Min, p.Y.Max = step*math.Floor(lo/step), step*math.Ceil(hi/step)
	if p.Y.Max-hi < step/4 {
		p.Y.Max += step / 2
	}
	p.Y.Tick.Marker = plotstyle.StepTicks{Step: step}
	return saveLegendRight(p, path)
}

// drawnSeries is a series already in a figure: its name and points.
type drawnSeries struct {
	name string
	x    []int
	y    []float64
}

// sameAs is " (= name)" for the first of drawn whose points are those of
// (x, y) to two decimals, as docs/broadcast.md prints them, and "" when
// there is none: the legend says which lines lie on top of one another.
func sameAs(drawn []drawnSeries, x []int, y []float64) string {
	round := func(v float64) float64 { return math.Round(100 * v) }
	for _, d := range drawn {
		if slices.Equal(d.x, x) && slices.EqualFunc(d.y, y, func(a, b float64) bool { return round(a) == round(b) }) {
			return " (= " + d.name + ")"
		}
	}
	return ""
}

// drawFig10 draws figure 10 of corrected trees (Lemma 3) to path: every
// distinct (g_max, L_SCC) pair of each tree, the trees a little apart
// along x, with the lemma's bounds L_FF + g·o and L_FF + (2g+1)·o.
func drawFig10(d bcastData, path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Lemma 3: L_SCC against g_max, P = %d, %d runs (each distinct pair once)", d.Nodes, d.Runs)
	p.X.Label.Text = "g_max (longest run of processes the tree left uncolored)"
	p.Y.Label.Text = fmt.Sprintf("L_SCC (time steps, L = %d, o = %d)", d.L, d.O)
	var trees []string
	byTree := map[string]plotter.XYs{}
	maxG, maxL := 0.0, d.LFF
	for _, q := range d.Fig10 {
		if _, ok := byTree[q.Tree]; !ok {
			trees = append(trees, q.Tree)
		}
		byTree[q.Tree] = append(byTree[q.Tree], plotter.XY{X: float64(q.GMax), Y: float64(q.LSCC)})
		maxG, maxL = max(maxG, float64(q.GMax)), max(maxL, float64(q.LSCC))
	}
	o := float64(max(d.O, 1))
	bounds := []struct {
		label  string
		at     func(g float64) float64
		dashes []vg.Length
	}{
		{fmt.Sprintf("lower bound L_FF + g·o (L_FF = %g)", d.LFF), func(g float64) float64 { return d.LFF + g*o }, []vg.Length{vg.Points(6), vg.Points(3)}},
		{"upper bound L_FF + (2g+1)·o", func(g float64) float64 { return d.LFF + (2*g+1)*o }, []vg.Length{vg.Points(1.5), vg.Points(2.5)}},
	}
	xStep := plotstyle.NiceStep(maxG)
	p.X.Min, p.X.Max = 0, xStep*math.Ceil((maxG+0.5)/xStep)
	for _, b := range bounds {
		l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: b.at(0)}, {X: p.X.Max, Y: b.at(p.X.Max)}})
		if err != nil {
			return fmt.Errorf("figures: %w", err)
		}
		l.Color, l.Dashes, l.Width = color.Black, b.dashes, vg.Points(1.2)
		p.Add(l)
		p.Legend.Add(b.label, l)
	}
	for i, tree := range trees {
		xy := byTree[tree]
		for k := range xy {
			xy[k].X += 0.15 * (float64(i) - float64(len(trees)-1)/2)
		}
		sc, err := plotter.NewScatter(xy)
		if err != nil {
			return fmt.Errorf("figures: %s: %w", tree, err)
		}
		sc.Color = plotstyle.Color(i)
		sc.Shape = treeGlyphs[min(i, len(treeGlyphs)-2)]
		sc.Radius = vg.Points(2.5)
		p.Add(sc)
		p.Legend.Add(strings.TrimPrefix(tree, "tree:"), sc)
	}
	// The upper bound at the largest g_max is in the picture; the top
	// fifth above the data is left to the legend.
	top := max(maxL, bounds[1].at(maxG))
	yStep := plotstyle.NiceStep(top)
	p.Y.Min, p.Y.Max = 0, yStep*math.Ceil(top*1.25/yStep)
	p.X.Tick.Marker = plotstyle.StepTicks{Step: xStep}
	p.Y.Tick.Marker = plotstyle.StepTicks{Step: yStep}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.ThumbnailWidth = vg.Points(30)
	return savePlot(p, path)
}

// saveLegendRight writes p to path at the size of the other figures with
// its legend beside the plot, on the right, rather than over the data: for
// figures with many series.
func saveLegendRight(p *plot.Plot, path string) error {
	w, h := 8*vg.Inch, 5*vg.Inch
	c, err := draw.NewFormattedCanvas(w, h, strings.TrimPrefix(filepath.Ext(path), "."))
	if err != nil {
		return fmt.Errorf("figures: %s: %w", path, err)
	}
	dc := draw.New(c)
	l := p.Legend
	l.Top, l.Left = true, true
	p.Legend = plot.NewLegend()
	r := l.Rectangle(dc)
	lw := r.Max.X - r.Min.X + vg.Points(12)
	p.Draw(draw.Crop(dc, 0, -lw, 0, 0))
	l.Draw(draw.Crop(dc, w-lw+vg.Points(6), 0, 0, -vg.Points(24)))
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("figures: %w", err)
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("figures: %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("figures: %w", err)
	}
	return nil
}

// savePlot writes p to path at the size of the other figures.
func savePlot(p *plot.Plot, path string) error {
	if err := p.Save(8*vg.Inch, 5*vg.Inch, path); err != nil {
		return fmt.Errorf("figures: %s: %w", path, err)
	}
	return nil
}
