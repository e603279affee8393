package campaign

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"gonum.org/v1/plot/plotter"
)

func TestSameAs(t *testing.T) {
	lines := map[string]plotter.XYs{
		"pf":   {{X: 0, Y: 0}, {X: 10, Y: 62.7}},
		"pflc": {{X: 0, Y: 0}, {X: 10, Y: 62.7}},
		"pfcc": {{X: 0, Y: 0}, {X: 10, Y: 62.8}},
	}
	assert.Equal(t, "", sameAs(nil, lines, lines["pf"]))
	assert.Equal(t, " (= pf)", sameAs([]string{"pf"}, lines, lines["pflc"]))
	assert.Equal(t, "", sameAs([]string{"pf", "pflc"}, lines, lines["pfcc"]), "0.1 apart is not the same")
}

func TestNiceStep(t *testing.T) {
	// The least of 1, 2, 5 or 10 times a power of ten that is at least a
	// fifth of the span: five intervals or a few fewer.
	for span, want := range map[float64]float64{50: 10, 473: 100, 1: 0.2, 3e-16: 1e-16, 0: 1} {
		assert.InEpsilon(t, want, niceStep(span), 1e-12, "span %g", span)
	}
}
