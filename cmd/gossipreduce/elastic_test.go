package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// run --elastic: members come and go between rounds, and every result is
// checked against the exact average of the inputs of the view it names.
func TestRunElastic(t *testing.T) {
	obj := jsonObject(t, "run", "--elastic", "--nodes", "4", "--runs", "12", "--churn", "0.7", "--suspect", "300ms", "--seed", "3", "--json")
	assert.Equal(t, 12.0, obj["rounds"])
	assert.Zero(t, obj["wrong"], "every result is the exact average of the view it names")
	assert.GreaterOrEqual(t, obj["member_ops"].(float64), 12*2.0)
	assert.Positive(t, obj["views"])
	assert.Positive(t, obj["joins"].(float64)+obj["leaves"].(float64)+obj["kills"].(float64), "churn happened")
	for _, f := range []string{"failed", "no_view", "min_members", "max_members", "max_rel_error", "seconds", "seed", "nats"} {
		assert.Contains(t, obj, f)
	}
}

func TestRunElasticBadFlags(t *testing.T) {
	for name, args := range map[string][]string{
		"churn alone":    {"run", "--churn", "0.5"},
		"duration alone": {"run", "--duration", "1m"},
		"crash":          {"run", "--elastic", "--crash", "1"},
		"churn range":    {"run", "--elastic", "--churn", "2"},
		"hypercube":      {"run", "--elastic", "--topology", "hypercube"},
	} {
		code, _, stderr := runCLI(t, args...)
		assert.Equal(t, 2, code, "%s: %s", name, stderr)
	}
}
