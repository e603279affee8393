package aggregate_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/gossipreduce/gossipreduce/transport/natsserver"
)

// reduceAll runs Reduce on every member given, member i with reqs[i].
func reduceAll(ctx context.Context, nodes map[int]*aggregate.Node, reqs func(i int) aggregate.Request) (map[int]aggregate.Result, map[int]error) {
	var mu sync.Mutex
	res := map[int]aggregate.Result{}
	errs := map[int]error{}
	var wg sync.WaitGroup
	for i, nd := range nodes {
		wg.Go(func() {
			r, err := nd.Reduce(ctx, reqs(i))
			mu.Lock()
			res[i], errs[i] = r, err
			mu.Unlock()
		})
	}
	wg.Wait()
	return res, errs
}

// Extremes are maximised beside the average, by the certificate with a
// gossip algorithm and by the machine itself with exchange; vectors of
// another length end the operation at every member.
func TestExtremes(t *testing.T) {
	for _, alg := range []string{"pfcc", "exchange"} {
		tr := memory(t, 0, 1)
		nodes := group(t, tr, 10, aggregate.Config{Group: "ext-" + alg, Epsilon: 1e-9, Algorithm: alg})
		m := map[int]*aggregate.Node{}
		for i, nd := range nodes {
			m[i] = nd
		}
		res, errs := reduceAll(timeout(t, 20*time.Second), m, func(i int) aggregate.Request {
			x := float64((i*7)%10) - 3 // -3 … 6, a permutation
			return aggregate.Request{Values: []float64{x}, Extremes: []float64{x, -x}}
		})
		for i := range 10 {
			require.NoError(t, errs[i], "%s member %d", alg, i)
			assert.Equal(t, []float64{6, 3}, res[i].Extremes, "%s: max 6, min -3 (negated)", alg)
			assert.InDelta(t, 1.5, res[i].Value[0], 1.5e-9, alg)
		}
		// A member with three extremes where the others have two: the group
		// notices and nobody returns a result.
		_, errs = reduceAll(timeout(t, 5*time.Second), m, func(i int) aggregate.Request {
			ext := []float64{1, 2}
			if i == 0 {
				ext = append(ext, 3)
			}
			return aggregate.Request{Values: []float64{1}, Extremes: ext}
		})
		mismatched := 0
		for i := range 10 {
			require.Error(t, errs[i], "%s member %d", alg, i)
			if errors.Is(errs[i], aggregate.ErrGroupMismatch) {
				mismatched++
			}
		}
		assert.Positive(t, mismatched, alg)
	}
}

func TestExtremesNeedGossip(t *testing.T) {
	tr := memory(t, 0, 1)
	for _, alg := range []string{"rdb", "ring", "rhd", "central"} {
		nd := joinOne(t, tr, aggregate.Config{Group: "ext-" + alg, ID: 0, Nodes: 2, Algorithm: alg})
		_, err := nd.Reduce(timeout(t, time.Second), aggregate.Request{Values: []float64{1}, Extremes: []float64{1}})
		assert.ErrorIs(t, err, gossip.ErrInvalidConfig, alg)
	}
}

func TestExplicitEpochs(t *testing.T) {
	tr := memory(t, 0, 1)
	nodes := group(t, tr, 4, aggregate.Config{Group: "ep", Epsilon: 1e-9})
	m := map[int]*aggregate.Node{0: nodes[0], 1: nodes[1], 2: nodes[2], 3: nodes[3]}
	ctx := timeout(t, 20*time.Second)
	for _, e := range []uint64{10, 20} {
		res, errs := reduceAll(ctx, m, func(i int) aggregate.Request {
			return aggregate.Request{Epoch: e, Values: []float64{float64(i)}}
		})
		for i := range 4 {
			require.NoError(t, errs[i])
			assert.Equal(t, e, res[i].Epoch)
		}
	}
	_, err := nodes[0].Reduce(ctx, aggregate.Request{Epoch: 15, Values: []float64{1}})
	assert.ErrorIs(t, err, gossip.ErrInvalidConfig, "an epoch must come after the last")
}

func TestGracefulLeaveAndRejoin(t *testing.T) {
	tr := memory(t, 0, 1)
	const n = 8
	// A huge Suspect: if an operation after the leave completes in time, it
	// is the leave announcement that let it, not silence detection.
	cfg := aggregate.Config{Group: "leave", Nodes: n, Epsilon: 1e-9, Suspect: 30 * time.Second}
	nodes := map[int]*aggregate.Node{}
	for i := range n {
		c := cfg
		c.ID = gossip.NodeID(i)
		nd, err := aggregate.Join(context.Background(), tr, c)
		require.NoError(t, err)
		nodes[i] = nd
		t.Cleanup(func() { nd.Close() })
	}
	inputs := gossiptest.Inputs(n, 1, 9)
	op := func(epoch uint64) (map[int]aggregate.Result, map[int]error) {
		return reduceAll(timeout(t, 10*time.Second), nodes, func(i int) aggregate.Request {
			return aggregate.Request{Epoch: epoch, Values: inputs[i]}
		})
	}
	res, errs := op(1)
	for i := range n {
		require.NoError(t, errs[i])
		assert.Equal(t, n, res[i].Live)
	}

	require.NoError(t, nodes[3].Close())
	delete(nodes, 3)
	res, errs = op(2)
	var sum float64
	for i := range n {
		if i != 3 {
			sum += inputs[i][0]
		}
	}
	for i, r := range res {
		require.NoError(t, errs[i], "member %d", i)
		assert.Equal(t, n-1, r.Live)
		assert.Equal(t, []gossip.NodeID{3}, r.Absent)
		assert.InDelta(t, sum/(n-1), r.Value[0], 1e-9*sum/(n-1), "the average of the members that stayed")
	}

	// Member 3 comes back: its Join announces it to the seven others.
	c := cfg
	c.ID = 3
	joins := map[int]int{}
	for i, nd := range nodes {
		joins[i] = nd.Stats().Joins
	}
	back, err := aggregate.Join(context.Background(), tr, c)
	require.NoError(t, err)
	t.Cleanup(func() { back.Close() })
	require.Eventually(t, func() bool {
		for i, nd := range nodes {
			if nd.Stats().Joins <= joins[i] {
				return false
			}
		}
		return true
	}, 30*time.Second, time.Millisecond, "every member hears the announcement before the operation starts")
	nodes[3] = back
	res, errs = op(3)
	for i, r := range res {
		require.NoError(t, errs[i], "member %d", i)
		assert.Equal(t, n, r.Live, "member %d counts everyone again", i)
		assert.Empty(t, r.Absent)
	}
}

func TestCrashBetweenOperations(t *testing.T) {
	tr := memory(t, 0, 1)
	const n = 8
	cfg := aggregate.Config{Group: "between", Epsilon: 1e-9, Suspect: 200 * time.Millisecond}
	all := group(t, tr, n, cfg)
	nodes := map[int]*aggregate.Node{}
	for i, nd := range all {
		nodes[i] = nd
	}
	inputs := gossiptest.Inputs(n, 1, 2)
	op := func(epoch uint64) (map[int]aggregate.Result, map[int]error) {
		return reduceAll(timeout(t, 10*time.Second), nodes, func(i int) aggregate.Request {
			return aggregate.Request{Epoch: epoch, Values: inputs[i]}
		})
	}
	_, errs := op(1)
	for i := range n {
		require.NoError(t, errs[i])
	}
	// Member 5 dies without a word: its messages vanish.
	tr.Crash(transport.Group{Name: "between", ConfigHash: all[5].ConfigHash()}, 5)
	delete(nodes, 5)
	for _, epoch := range []uint64{2, 3} {
		res, errs := op(epoch)
		for i, r := range res {
			require.NoError(t, errs[i], "epoch %d member %d", epoch, i)
			assert.Equal(t, n-1, r.Live)
			assert.Equal(t, []gossip.NodeID{5}, r.Absent)
		}
	}
	excluded := 0
	for _, nd := range nodes {
		excluded += nd.Stats().Excluded
	}
	assert.Positive(t, excluded, "its neighbours in the fallback's overlay declared it dead")
}

// A second process that joins with a member's identity is refused (at
// Join, or at its first operation when the holder answered its claim late),
// and so is the member it collided with: the group would count one input
// for both. Over NATS the collision is found by the transport's claim at Open
// (package transport, "Claims").
func TestDuplicateIdentityRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := natsserver.StartEmbedded(ctx, natsserver.EmbeddedOptions{})
	require.NoError(t, err)
	defer srv.Shutdown()
	conn := func() transport.Transport {
		tr, err := srv.Connect(ctx, transport.NATSOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { tr.Close() })
		return tr
	}
	cfg := aggregate.Config{Group: "dup", Nodes: 3, Suspect: time.Second}
	first := conn()
	nodes := group(t, first, 3, cfg)
	twin := cfg
	twin.ID = 1
	second := conn()
	tw, err := aggregate.Join(ctx, second, twin)
	if err == nil {
		// The holder's answer came after Open's wait for it (at most 100
		// ms; a loaded machine): it marks the twin when it comes.
		defer tw.Close()
		require.Eventually(t, func() bool { return second.Stats().Duplicates > 0 }, 5*time.Second, time.Millisecond, "the twin is told")
		_, err = tw.Average(ctx, []float64{4})
	}
	require.ErrorIs(t, err, transport.ErrDuplicateID)
	// The holder learns of the collision from the twin's confirmation,
	// which may still be on its way when Join returns; an operation that
	// ends first (exchange takes milliseconds) is one the twin had no part
	// in, and is right.
	require.Eventually(t, func() bool { return first.Stats().Duplicates > 0 }, 5*time.Second, time.Millisecond, "the holder is told")

	opCtx, opCancel := context.WithTimeout(ctx, 5*time.Second)
	defer opCancel()
	errs := averageAll(opCtx, nodes, [][]float64{{1}, {2}, {3}}).Errs
	assert.ErrorIs(t, errs[1], transport.ErrDuplicateID, "the member whose identity was claimed")
}

// cancelAfter is a transport whose endpoints cancel a context once they
// have sent a given number of messages, as a deadline that falls in the
// middle of a member's announcement to a large group.
type cancelAfter struct {
	transport.Transport
	after  int
	cancel context.CancelFunc
	sent   *int
}

func (c cancelAfter) Open(ctx context.Context, g transport.Group, id gossip.NodeID) (transport.Endpoint, error) {
	ep, err := c.Transport.Open(ctx, g, id)
	return cancelEndpoint{ep, c}, err
}

type cancelEndpoint struct {
	transport.Endpoint
	c cancelAfter
}

func (e cancelEndpoint) Send(ctx context.Context, m gossip.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if *e.c.sent++; *e.c.sent == e.c.after {
		e.c.cancel()
	}
	return e.Endpoint.Send(ctx, m)
}

// Join announces the member to every other one, which takes long in a
// large group; a deadline that ends meanwhile ends Join with the context's
// error, and the rest of the announcement is not sent.
func TestJoinHonoursItsContextWhileAnnouncing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sent := 0
	tr := cancelAfter{Transport: memory(t, 0, 1), after: 10, cancel: cancel, sent: &sent}
	nd, err := aggregate.Join(ctx, tr, aggregate.Config{Group: "announce", ID: 0, Nodes: 1000})
	require.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, nd)
	assert.Contains(t, err.Error(), "announcing")
	assert.Equal(t, 10, sent, "no message after the deadline")
}

// TestFoundingAndStopStaySilent checks the two ways a whole group in one
// process avoids N² announcements: founding members do not announce
// themselves when they join, and members stopped together do not announce
// that they leave; an ordinary Join and Close do.
func TestFoundingAndStopStaySilent(t *testing.T) {
	const n = 4
	join := func(tr *transport.Memory, founding bool) []*aggregate.Node {
		nodes := make([]*aggregate.Node, n)
		for i := range nodes {
			nodes[i] = joinOne(t, tr, aggregate.Config{Group: "quiet", ID: gossip.NodeID(i), Nodes: n, Epsilon: 1e-9, Founding: founding})
		}
		return nodes
	}
	loud := memory(t, 0, 1)
	join(loud, false)
	assert.Positive(t, loud.Stats().Sent+loud.Stats().Probes, "ordinary members announce themselves")

	tr := memory(t, 0, 1)
	nodes := join(tr, true)
	assert.Zero(t, tr.Stats().Sent+tr.Stats().Probes, "founding members do not")
	o := averageAll(timeout(t, 20*time.Second), nodes, gossiptest.Inputs(n, 1, 3))
	for i, err := range o.Errs {
		require.NoError(t, err, "member %d", i)
		assert.Equal(t, n, o.Results[i].Live)
	}

	before := tr.Stats()
	require.NoError(t, nodes[3].Stop())
	assert.Equal(t, before.Sent+before.Probes+before.Unsent, tr.Stats().Sent+tr.Stats().Probes+tr.Stats().Unsent, "Stop tells nobody")
	require.NoError(t, nodes[2].Close())
	assert.Greater(t, tr.Stats().Sent+tr.Stats().Probes+tr.Stats().Unsent, before.Sent+before.Probes+before.Unsent, "Close tells the others")
}
