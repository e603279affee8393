package plotstyle

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNiceStep(t *testing.T) {
	// The least of 1, 2, 5 or 10 times a power of ten that is at least a
	// fifth of the span: five intervals or a few fewer.
	for span, want := range map[float64]float64{50: 10, 473: 100, 1: 0.2, 3e-16: 1e-16, 0: 1, 96: 20} {
		assert.InEpsilon(t, want, NiceStep(span), 1e-12, "span %g", span)
	}
}

func TestStepTicks(t *testing.T) {
	ts := StepTicks{Step: 10}.Ticks(3, 31)
	var labels []string
	var values []float64
	for _, tk := range ts {
		values = append(values, tk.Value)
		labels = append(labels, tk.Label)
	}
	assert.Equal(t, []float64{5, 10, 15, 20, 25, 30}, values)
	assert.Equal(t, []string{"", "10", "", "20", "", "30"}, labels, "multiples of the step labelled, halves not")
	// Span 110: a fifth is 22, so the step is 50, with minor ticks at 25s.
	ts = RoundTicks{}.Ticks(20, 130)
	require.Len(t, ts, 5)
	assert.Equal(t, 25.0, ts[0].Value)
	assert.Equal(t, "50", ts[1].Label)
	assert.Equal(t, "100", ts[3].Label)
}

func TestDistinctStyles(t *testing.T) {
	seen := map[string]int{}
	for i := range 14 {
		key := fmt.Sprint(Dashes(i))
		if j, ok := seen[key]; ok {
			t.Fatalf("series %d and %d share the dash pattern %s", j, i, key)
		}
		seen[key] = i
	}
	assert.Nil(t, Dashes(0), "the first series is solid")
	assert.NotEqual(t, Color(0), Color(7), "the palette's second round is lighter")
}
