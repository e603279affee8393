package aggregate_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
)

// Members with a state file write their votes there; a member started
// again with the file refuses an operation earlier than the one it voted
// in (ErrRestarted) instead of voting in it with no memory; a file held
// by a running member, a file that is not a state file, and a state file
// for a member joined by name are refused by Join.
func TestStateFileKeepsVotes(t *testing.T) {
	const n = 4
	ctx, tr, cfg, nodes := stateGroup(t, n, "pfcc")
	dir := filepath.Dir(cfg(0).StateFile)
	for range 2 { // two operations: the files hold the second's votes
		var wg sync.WaitGroup
		res := make([]aggregate.Result, n)
		errs := make([]error, n)
		for i, nd := range nodes {
			wg.Go(func() { res[i], errs[i] = nd.Average(ctx, []float64{float64(i + 1)}) })
		}
		wg.Wait()
		for i := range nodes {
			require.NoError(t, errs[i], "member %d", i)
			assert.InEpsilon(t, 2.5, res[i].Value[0], 1e-9) // the default ε
			assert.Equal(t, res[0].Value, res[i].Value, "member %d: the same bits", i)
		}
	}
	for _, nd := range nodes {
		require.NoError(t, nd.Close())
	}
	for i := range n {
		b, err := os.ReadFile(cfg(i).StateFile)
		require.NoError(t, err, "member %d wrote its votes", i)
		assert.Greater(t, len(b), 8+5*8+4, "member %d: a proposal accepted (more than the header and checksum)", i)
	}

	// Member 1 started again: operation 1 comes before operation 2, in
	// which it voted. While it runs, nobody else can take its file.
	again, err := aggregate.Join(ctx, tr, cfg(1))
	require.NoError(t, err)
	other := cfg(2)
	other.StateFile = cfg(1).StateFile
	_, err = aggregate.Join(ctx, tr, other)
	require.ErrorIs(t, err, aggregate.ErrStateInUse)
	_, err = again.Average(ctx, []float64{2})
	require.ErrorIs(t, err, aggregate.ErrRestarted)
	require.NoError(t, again.Close())

	bad := cfg(1)
	require.NoError(t, os.WriteFile(bad.StateFile, []byte("not a state file at all, but long enough to read"), 0o600))
	_, err = aggregate.Join(ctx, tr, bad)
	require.ErrorContains(t, err, "malformed state file")

	_, err = aggregate.Join(ctx, tr, aggregate.Config{Group: "state", Name: "a", StateFile: filepath.Join(dir, "named")})
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
}

// A Push-Sum member started again with its state file sits out the first
// operation it is asked for (member.HardState: Push-Sum would count its
// input twice), where a member without one would take part and could make
// the group return a wrong average.
func TestStateFileSitsOutPushSum(t *testing.T) {
	const n = 4
	ctx, tr, cfg, nodes := stateGroup(t, n, "ps")
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, nd := range nodes {
		wg.Go(func() { _, errs[i] = nd.Average(ctx, []float64{float64(i + 1)}) })
	}
	wg.Wait()
	for i, nd := range nodes {
		require.NoError(t, errs[i], "member %d", i)
		require.NoError(t, nd.Close())
	}
	again, err := aggregate.Join(ctx, tr, cfg(1))
	require.NoError(t, err)
	_, err = again.Average(ctx, []float64{2})
	require.ErrorIs(t, err, aggregate.ErrRestarted)
	require.NoError(t, again.Close())
}

// stateGroup joins n founding members of algorithm with a state file each
// over an in-memory transport: the test's context (20 s), the transport,
// each member's configuration, and the members.
func stateGroup(t *testing.T, n int, algorithm string) (context.Context, *transport.Memory, func(int) aggregate.Config, []*aggregate.Node) {
	t.Helper()
	tr, err := transport.NewMemory(transport.MemoryOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { tr.Close() })
	dir := t.TempDir()
	cfg := func(id int) aggregate.Config {
		return aggregate.Config{Group: "state", Nodes: n, ID: gossip.NodeID(id), Algorithm: algorithm, Founding: true,
			StateFile: filepath.Join(dir, "member"+string(rune('0'+id)))}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	nodes := make([]*aggregate.Node, n)
	for i := range nodes {
		nodes[i], err = aggregate.Join(ctx, tr, cfg(i))
		require.NoError(t, err)
	}
	return ctx, tr, cfg, nodes
}
