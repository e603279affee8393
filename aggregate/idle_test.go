package aggregate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSharedIdleGrowsWithMembersPerCore(t *testing.T) {
	const def = 4 * time.Millisecond
	assert.Equal(t, def, sharedIdle(def, 1, 2), "one member keeps the default")
	assert.Equal(t, def, sharedIdle(def, 16, 2), "16 members on 2 cores: 0.96 ms, below the default")
	// 120 µs per member per core: 256 members on 2 cores give 15.36 ms.
	assert.Equal(t, 15360*time.Microsecond, sharedIdle(def, 256, 2))
	assert.Equal(t, 120*time.Millisecond, sharedIdle(def, 2000, 2))
	assert.Equal(t, def, sharedIdle(def, 0, 0), "no cores reported: taken as one")
}

// A given Idle is kept however many members share the process; the
// default grows with them.
func TestOpIdle(t *testing.T) {
	given, err := Config{Group: "g", Nodes: 4, Idle: 2 * time.Millisecond}.resolve()
	assert.NoError(t, err)
	auto, err := Config{Group: "g", Nodes: 4}.resolve()
	assert.NoError(t, err)
	assert.Equal(t, 2*time.Millisecond, given.opIdle())
	assert.GreaterOrEqual(t, auto.opIdle(), 4*time.Millisecond)
}
