package gossiptest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gossipreduce/gossipreduce/gossip"
)

func TestPrefixCount(t *testing.T) {
	inner := fmt.Errorf("topology: %w: 6 nodes", gossip.ErrInvalidConfig)
	assert.Equal(t, 1, PrefixCount(inner))
	assert.Equal(t, 1, PrefixCount(fmt.Errorf("join g as 3: %w", inner)), "context is not a prefix")
	assert.Equal(t, 2, PrefixCount(fmt.Errorf("aggregate: %w", inner)))
	assert.Equal(t, 1, PrefixCount(errors.New("bsim: x")), "bsim is not also sim")
	assert.Equal(t, 2, PrefixCount(errors.New("sim: sim: x")))
	assert.Equal(t, 1, PrefixCount(errors.New(`invalid value for flag -algo: algo: unknown`)), "a flag is not a package")
	assert.Equal(t, 0, PrefixCount(errors.New("no prefix")))
}
