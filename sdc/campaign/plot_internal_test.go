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
