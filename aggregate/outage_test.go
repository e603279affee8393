package aggregate_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
	"github.com/gossipreduce/gossipreduce/transport"
)

// TestOutageLongerThanSuspect takes the whole network down mid-operation
// for three times Suspect, as a NATS server that restarts does: members
// that hear nobody because they cannot reach the network must not declare
// each other dead, and every member returns the average of all inputs once
// it is back. (Before endpoints reported Online, every member excluded
// every other.) It runs with the members ticked every Tick, as members
// that share a process are, and ticked only when NextTick says, as a
// member alone in its process is: polling the network while offline must
// not count as ticks taken, or the outage is not forgiven.
func TestOutageLongerThanSuspect(t *testing.T) {
	t.Run("every tick", outageLongerThanSuspect)
	t.Run("by NextTick", func(t *testing.T) {
		t.Cleanup(aggregate.SparseTicks())
		outageLongerThanSuspect(t)
	})
}

func outageLongerThanSuspect(t *testing.T) {
	const n, suspect = 8, 200 * time.Millisecond
	var tr *transport.Memory
	var armed atomic.Bool
	var sent atomic.Int64
	down := make(chan struct{})
	var once sync.Once
	tr, err := transport.NewMemory(transport.MemoryOptions{Tap: func(string, []byte) {
		// The outage starts inside the operation, at its 20th message, not
		// after some wall-clock delay that a busy machine would stretch.
		if armed.Load() && sent.Add(1) == 20 {
			once.Do(func() { tr.Outage(true); close(down) })
		}
	}})
	require.NoError(t, err)
	t.Cleanup(func() { tr.Close() })
	nodes := group(t, tr, n, aggregate.Config{Group: "outage", Topology: "hypercube", Epsilon: 1e-9, Suspect: suspect})
	armed.Store(true)
	var restored atomic.Bool
	go func() {
		<-down
		time.Sleep(3 * suspect) // the length of the outage, not a synchronisation
		restored.Store(true)
		tr.Outage(false)
	}()
	inputs := gossiptest.Inputs(n, 2, 11)
	o := averageAll(timeout(t, 30*time.Second), nodes, inputs)
	requireOK(t, o, 1e-9)
	assert.Equal(t, n, o.Results[0].Live)
	// The premise: the operation spanned the whole outage. (Counting the
	// messages lost in it would not do: an offline member is not ticked,
	// so it may well send nothing until the network is back.)
	assert.True(t, restored.Load(), "the operation ended before the network came back")
	// Nor is the outage taken for the exchange's silence: a member that
	// could not reach the network does not fall back to PFCC for it.
	for i, nd := range nodes {
		assert.Zero(t, nd.Stats().Fallbacks, "member %d fell back", i)
	}
}
