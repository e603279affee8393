package aggregate_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/gossipreduce/gossipreduce/transport/natsserver"
)

// joinNamed joins members by name at once, each over the transport tr
// returns for it, and returns them by name.
func joinNamed(t *testing.T, tr func() transport.Transport, cfg aggregate.Config, names ...string) map[string]*aggregate.Node {
	t.Helper()
	var mu sync.Mutex
	out := map[string]*aggregate.Node{}
	var wg sync.WaitGroup
	for _, name := range names {
		on := tr()
		wg.Go(func() {
			c := cfg
			c.Name = name
			n, err := aggregate.Join(timeout(t, 20*time.Second), on, c)
			if !assert.NoError(t, err, name) {
				return
			}
			t.Cleanup(func() { n.Stop() })
			mu.Lock()
			out[name] = n
			mu.Unlock()
		})
	}
	wg.Wait()
	require.Len(t, out, len(names))
	return out
}

// sameView waits until every node's current view holds exactly names.
func sameView(t *testing.T, nodes map[string]*aggregate.Node, names ...string) uint64 {
	t.Helper()
	var num uint64
	require.Eventually(t, func() bool {
		var first uint64
		for _, n := range nodes {
			v, got, ok := n.View()
			if !ok || fmt.Sprint(got) != fmt.Sprint(names) || (first != 0 && v != first) {
				return false
			}
			first = v
		}
		num = first
		return true
	}, 30*time.Second, 5*time.Millisecond, "every member in one view of %v", names)
	return num
}

// reduceNamed runs epoch at every node with input value(name) and checks
// that every member returns the same result, over view, equal to the exact
// average of the inputs it names.
func reduceNamed(t *testing.T, nodes map[string]*aggregate.Node, epoch uint64, value func(string) float64) aggregate.Result {
	t.Helper()
	var mu sync.Mutex
	res := map[string]aggregate.Result{}
	var wg sync.WaitGroup
	for name, n := range nodes {
		wg.Go(func() {
			r, err := n.Reduce(timeout(t, 20*time.Second), aggregate.Request{Epoch: epoch, Values: []float64{value(name)}})
			if assert.NoError(t, err, name) {
				mu.Lock()
				res[name] = r
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Len(t, res, len(nodes))
	var first aggregate.Result
	for name, r := range res {
		if first.Names == nil {
			first = r
		}
		assert.Equal(t, first.Value, r.Value, name)
		assert.Equal(t, first.View, r.View, name)
		assert.Equal(t, first.Names, r.Names, name)
	}
	absent := map[gossip.NodeID]bool{}
	for _, id := range first.Absent {
		absent[id] = true
	}
	var sum float64
	for i, name := range first.Names {
		if !absent[gossip.NodeID(i)] {
			sum += value(name)
		}
	}
	assert.InDelta(t, sum/float64(first.Live), first.Value[0], 1e-9*sum)
	return first
}

func TestElasticGroupGrowsAndShrinks(t *testing.T) {
	mem := memory(t, 0, 1)
	tr := func() transport.Transport { return mem }
	cfg := aggregate.Config{Group: "fleet", Suspect: 400 * time.Millisecond, MinMembers: 4}
	value := func(name string) float64 { return float64(len(name)) + float64(name[len(name)-1]) }
	nodes := joinNamed(t, tr, cfg, "web-a", "web-b", "web-c", "web-d")
	sameView(t, nodes, "web-a", "web-b", "web-c", "web-d")
	r := reduceNamed(t, nodes, 1, value)
	assert.Equal(t, 4, r.Live)

	// A fifth member joins: it enters at a later view.
	cfg.MinMembers = 0
	for name, n := range joinNamed(t, tr, cfg, "web-e") {
		nodes[name] = n
	}
	sameView(t, nodes, "web-a", "web-b", "web-c", "web-d", "web-e")
	r = reduceNamed(t, nodes, 2, value)
	assert.Equal(t, 5, r.Live)
	assert.Equal(t, []string{"web-a", "web-b", "web-c", "web-d", "web-e"}, r.Names)

	// One leaves, one dies: the view follows.
	require.NoError(t, nodes["web-b"].Close())
	delete(nodes, "web-b")
	require.NoError(t, nodes["web-d"].Stop())
	delete(nodes, "web-d")
	sameView(t, nodes, "web-a", "web-c", "web-e")
	r = reduceNamed(t, nodes, 3, value)
	assert.Equal(t, 3, r.Live)
}

func TestElasticDuplicateNameIsRefused(t *testing.T) {
	mem := memory(t, 0, 1)
	cfg := aggregate.Config{Group: "dup", Suspect: 400 * time.Millisecond}
	nodes := joinNamed(t, func() transport.Transport { return mem }, cfg, "a", "b")
	sameView(t, nodes, "a", "b")
	c := cfg
	c.Name = "b"
	start := time.Now()
	_, err := aggregate.Join(timeout(t, 10*time.Second), mem, c)
	require.ErrorIs(t, err, aggregate.ErrDuplicateName)
	t.Logf("refused after %v: %v", time.Since(start).Round(time.Millisecond), err)
}

func TestElasticConfigIsChecked(t *testing.T) {
	tr := memory(t, 0, 1)
	for _, c := range []aggregate.Config{
		{Group: "x", Name: "a", Nodes: 4},
		{Group: "x", Name: "a", ID: 2},
		{Group: "x", Name: "a", Topology: "hypercube"},
		{Group: "x", Name: "a", MinMembers: -1},
	} {
		_, err := aggregate.Join(context.Background(), tr, c)
		assert.ErrorIs(t, err, gossip.ErrInvalidConfig, "%+v", c)
	}
}

// Over NATS, each member on a connection of its own as separate processes
// would be, with a group key: the same growth and a kill.
func TestElasticOverNATS(t *testing.T) {
	ctx, srv := embedded(t, natsserver.EmbeddedOptions{})
	key := []byte("elastic-group-key-16+")
	conn := func() transport.Transport {
		tr, err := srv.Connect(ctx, transport.NATSOptions{Options: transport.Options{Key: key}})
		require.NoError(t, err)
		t.Cleanup(func() { tr.Close() })
		return tr
	}
	cfg := aggregate.Config{Group: "fleet", Suspect: 500 * time.Millisecond, MinMembers: 3}
	nodes := joinNamed(t, conn, cfg, "n1", "n2", "n3")
	value := func(name string) float64 { return float64(name[1]) }
	sameView(t, nodes, "n1", "n2", "n3")
	assert.Equal(t, 3, reduceNamed(t, nodes, 1, value).Live)
	cfg.MinMembers = 0
	for k, v := range joinNamed(t, conn, cfg, "n4") {
		nodes[k] = v
	}
	sameView(t, nodes, "n1", "n2", "n3", "n4")
	assert.Equal(t, 4, reduceNamed(t, nodes, 2, value).Live)
	require.NoError(t, nodes["n1"].Stop()) // the founder, without a word
	delete(nodes, "n1")
	sameView(t, nodes, "n2", "n3", "n4")
	assert.Equal(t, 3, reduceNamed(t, nodes, 3, value).Live)
}

// A member configured differently from the group it meets is told at Join,
// naming the difference, within about Suspect/2; the group goes on
// without it.
func TestElasticMisconfiguredMemberFailsAtJoin(t *testing.T) {
	mem := memory(t, 0, 1)
	tr := func() transport.Transport { return mem }
	cfg := aggregate.Config{Group: "mixed", Suspect: 400 * time.Millisecond}
	nodes := joinNamed(t, tr, cfg, "a", "b", "c")
	sameView(t, nodes, "a", "b", "c")
	for field, c := range map[string]aggregate.Config{
		"epsilon":   {Group: "mixed", Suspect: 400 * time.Millisecond, Epsilon: 1e-6, Name: "d"},
		"algorithm": {Group: "mixed", Suspect: 400 * time.Millisecond, Algorithm: "pfcc", Name: "e"},
	} {
		start := time.Now()
		_, err := aggregate.Join(timeout(t, 10*time.Second), mem, c)
		require.ErrorIs(t, err, aggregate.ErrGroupMismatch, field)
		assert.Contains(t, err.Error(), field+"=")
		assert.Contains(t, err.Error(), "3 members (a, b, c)")
		t.Logf("%s: refused after %v: %v", field, time.Since(start).Round(time.Millisecond), err)
	}
	r := reduceNamed(t, nodes, 1, func(name string) float64 { return float64(name[0]) })
	assert.Equal(t, []string{"a", "b", "c"}, r.Names)
}

// A misconfigured member that came first and founded a group of its own
// does not keep the others out: they form their group beside it, and once
// they outnumber it, its operations fail naming the difference.
func TestElasticMisconfiguredFounderGivesWay(t *testing.T) {
	mem := memory(t, 0, 1)
	tr := func() transport.Transport { return mem }
	odd := joinNamed(t, tr, aggregate.Config{Group: "first", Suspect: 400 * time.Millisecond, Epsilon: 1e-6}, "odd")["odd"]
	cfg := aggregate.Config{Group: "first", Suspect: 400 * time.Millisecond, MinMembers: 3}
	nodes := joinNamed(t, tr, cfg, "a", "b", "c")
	sameView(t, nodes, "a", "b", "c")
	r := reduceNamed(t, nodes, 1, func(name string) float64 { return float64(name[0]) })
	assert.Equal(t, 3, r.Live)
	require.Eventually(t, func() bool {
		_, err := odd.Reduce(timeout(t, time.Second), aggregate.Request{Epoch: uint64(time.Now().UnixNano()), Values: []float64{1}})
		return errors.Is(err, aggregate.ErrGroupMismatch)
	}, 10*time.Second, 50*time.Millisecond, "the odd member's operations fail")
}

// A Monitor over an elastic group: its snapshots follow the fleet as it
// grows and shrinks, with exact whole sums of a counter.
func TestElasticMonitorFollowsTheFleet(t *testing.T) {
	mem := memory(t, 0, 1)
	snaps := make(chan aggregate.Snapshot, 1024)
	start := func(name string, min int) *aggregate.Monitor {
		m, err := aggregate.StartMonitor(timeout(t, 20*time.Second), mem, aggregate.MonitorConfig{
			Config:     aggregate.Config{Group: "mon-elastic", Name: name, MinMembers: min, Suspect: 400 * time.Millisecond},
			Metrics:    []string{"up", "requests_total"},
			Integers:   []string{"up", "requests_total"},
			Interval:   200 * time.Millisecond,
			OnSnapshot: func(s aggregate.Snapshot) { snaps <- s },
		})
		require.NoError(t, err)
		require.NoError(t, m.Set("up", 1))
		require.NoError(t, m.Set("requests_total", float64(len(name)*100+int(name[len(name)-1]))))
		return m
	}
	var mu sync.Mutex
	mons := map[string]*aggregate.Monitor{}
	var wg sync.WaitGroup
	for _, name := range []string{"i-1", "i-2", "i-3"} {
		wg.Go(func() {
			m := start(name, 3)
			mu.Lock()
			mons[name] = m
			mu.Unlock()
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, m := range mons {
			m.Close()
		}
	})
	// waitFor waits for a snapshot over exactly names, and checks its sums.
	waitFor := func(names ...string) {
		t.Helper()
		want := 0.0
		for _, n := range names {
			want += float64(len(n)*100 + int(n[len(n)-1]))
		}
		deadline := time.After(20 * time.Second)
		for {
			select {
			case s := <-snaps:
				if fmt.Sprint(s.Names) != fmt.Sprint(names) || s.Live != len(names) {
					continue
				}
				assert.Equal(t, len(names), s.Members)
				assert.Equal(t, float64(len(names)), s.Metrics["up"].Sum)
				assert.Equal(t, want, s.Metrics["requests_total"].Sum)
				assert.True(t, s.Metrics["requests_total"].Exact)
				return
			case <-deadline:
				t.Fatalf("no snapshot over %v", names)
			}
		}
	}
	waitFor("i-1", "i-2", "i-3")
	mons["i-4"] = start("i-4", 0)
	waitFor("i-1", "i-2", "i-3", "i-4")
	require.NoError(t, mons["i-2"].Close())
	delete(mons, "i-2")
	waitFor("i-1", "i-3", "i-4")
}

// Recorded membership traffic played back again and again does not keep a
// dead member in the view: every member heard the recording already, and
// the views channel drops what it has taken before.
func TestElasticReplayedHeartbeatsDoNotKeepTheDeadIn(t *testing.T) {
	for _, key := range [][]byte{nil, []byte("elastic-group-key-16+")} {
		t.Run(fmt.Sprintf("key=%t", key != nil), func(t *testing.T) {
			subject := transport.Group{Name: "fleet"}.ChannelSubject("views")
			var mu sync.Mutex
			var recorded [][]byte
			mem, err := transport.NewMemory(transport.MemoryOptions{Options: transport.Options{Key: key},
				Tap: func(s string, raw []byte) {
					if s == subject {
						mu.Lock()
						recorded = append(recorded, raw)
						mu.Unlock()
					}
				}})
			require.NoError(t, err)
			t.Cleanup(func() { mem.Close() })
			cfg := aggregate.Config{Group: "fleet", Suspect: 400 * time.Millisecond, MinMembers: 3}
			nodes := joinNamed(t, func() transport.Transport { return mem }, cfg, "a", "b", "c")
			sameView(t, nodes, "a", "b", "c")
			require.NoError(t, nodes["c"].Stop())
			delete(nodes, "c")

			done := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				for {
					mu.Lock()
					tape := slices.Clone(recorded)
					mu.Unlock()
					for _, raw := range tape {
						mem.Inject(subject, raw)
					}
					select {
					case <-done:
						return
					case <-time.After(20 * time.Millisecond):
					}
				}
			})
			sameView(t, nodes, "a", "b")
			close(done)
			wg.Wait()
			assert.Equal(t, 2, reduceNamed(t, nodes, 1, func(name string) float64 { return float64(name[0]) }).Live)
		})
	}
}

// A member that waits for members who never come says what it waited for.
func TestElasticJoinSaysWhatItWaitedFor(t *testing.T) {
	mem := memory(t, 0, 1)
	_, err := aggregate.Join(timeout(t, 500*time.Millisecond), mem, aggregate.Config{Group: "lonely", Name: "solo", MinMembers: 3, Suspect: 200 * time.Millisecond})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "waiting for a view of at least 3 members (no view yet)")
}
