// Package plotstyle holds what the project's figures share: round tick
// steps, and a colour and a dash pattern of its own for every series, so
// that lines stay apart in print and in grey.
package plotstyle

import (
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// NiceStep is the round step (1, 2 or 5 times a power of ten) that splits
// span into about five intervals: the least such step that is at least a
// fifth of span. It is 1 for a span that is not positive and finite.
func NiceStep(span float64) float64 {
	if !(span > 0) || math.IsInf(span, 0) {
		return 1
	}
	raw := span / 5
	mag := math.Pow10(int(math.Floor(math.Log10(raw))))
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

// RoundTicks labels the multiples of NiceStep(max - min) on a linear axis,
// with a minor tick between each two.
type RoundTicks struct{}

// Ticks implements plot.Ticker.
func (RoundTicks) Ticks(lo, hi float64) []plot.Tick {
	return StepTicks{Step: NiceStep(hi - lo)}.Ticks(lo, hi)
}

// StepTicks labels the multiples of Step on a linear axis, with a minor
// tick between each two.
type StepTicks struct{ Step float64 }

// Ticks implements plot.Ticker.
func (t StepTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	half := t.Step / 2
	for k := math.Ceil(lo / half); k*half <= hi; k++ {
		v := k * half
		tk := plot.Tick{Value: v}
		if math.Mod(k, 2) == 0 {
			tk.Label = strconv.FormatFloat(v, 'g', 6, 64)
		}
		ts = append(ts, tk)
	}
	return ts
}

// Color is series i's colour: plotutil's dark palette, which repeats after
// seven colours, lightened on its second and later rounds.
func Color(i int) color.Color {
	pal := plotutil.DarkColors
	c := color.RGBAModel.Convert(pal[i%len(pal)]).(color.RGBA)
	for range i / len(pal) {
		c.R, c.G, c.B = c.R+(255-c.R)/2, c.G+(255-c.G)/2, c.B+(255-c.B)/2
	}
	return c
}

// Dashes gives every series a dash pattern of its own: solid for i = 0,
// then dashes, dots and dash-dots of growing lengths.
func Dashes(i int) []vg.Length {
	if i <= 0 {
		return nil
	}
	d := vg.Points(2 + float64((i-1)/3)*2)
	switch (i - 1) % 3 {
	case 0:
		return []vg.Length{2 * d, d}
	case 1:
		return []vg.Length{vg.Points(1), d}
	default:
		return []vg.Length{2 * d, d, vg.Points(1), d}
	}
}
