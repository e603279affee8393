package aggregate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSharedIdleGrowsWithMembersPerCore(t *testing.T) {
	const def = 4 * time.Millisecond
	assert.Equal(t, def, sharedIdle(def, 1, 2, 1), "one member keeps the default")
	assert.Equal(t, def, sharedIdle(def, 16, 2, 1), "16 members on 2 cores: 0.96 ms, below the default")
	// 120 µs per member per core: 256 members on 2 cores give 15.36 ms.
	assert.Equal(t, 15360*time.Microsecond, sharedIdle(def, 256, 2, 1))
	assert.Equal(t, 120*time.Millisecond, sharedIdle(def, 2000, 2, 1))
	assert.Equal(t, def, sharedIdle(def, 0, 0, 1), "no cores reported: taken as one")
}

// Long vectors lengthen the idle period by 100 ns per component for each
// member per core, and by no less than that for a member alone on a core.
func TestSharedIdleGrowsWithVectors(t *testing.T) {
	const def = 4 * time.Millisecond
	assert.Equal(t, def, sharedIdle(def, 16, 2, 1000), "1,000 components: 0.8 ms")
	assert.Equal(t, 80*time.Millisecond, sharedIdle(def, 16, 2, 100_000))
	assert.Equal(t, 10*time.Millisecond, sharedIdle(def, 1, 2, 100_000), "alone on a core")
	assert.Equal(t, 100*time.Millisecond, sharedIdle(def, 2, 2, 1_000_000))
}

// A given Idle is kept however many members share the process; the
// default grows with them.
func TestOpIdle(t *testing.T) {
	given, err := Config{Group: "g", Nodes: 4, Idle: 2 * time.Millisecond}.resolve()
	assert.NoError(t, err)
	auto, err := Config{Group: "g", Nodes: 4}.resolve()
	assert.NoError(t, err)
	assert.Equal(t, 2*time.Millisecond, given.opIdle(1))
	assert.GreaterOrEqual(t, auto.opIdle(1), 4*time.Millisecond)
}
