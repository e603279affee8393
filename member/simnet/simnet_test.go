package simnet

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/member"
)

func inputs(n int) [][]float64 {
	in := make([][]float64, n)
	for i := range in {
		in[i] = []float64{float64(i + 1), float64(i * i)}
	}
	return in
}

// runAgreed runs operation epoch of net's n members with inputs in and
// requires every member to return a result that passes member.Check.
func runAgreed(t *testing.T, net *Net, n int, epoch uint64, in [][]float64, limit time.Duration) {
	t.Helper()
	outs := net.Run(epoch, in, nil, limit)
	require.Len(t, outs, n)
	for id, o := range outs {
		require.NoError(t, o.Err, "member %d of %d, epoch %d", id, n, epoch)
	}
	require.Empty(t, member.Check(n, epoch, in, outs, 1e-9))
}

func TestFaultFreeGroupsAgree(t *testing.T) {
	for _, tc := range []struct {
		topo string
		n    int
	}{{"complete", 16}, {"hypercube", 32}, {"complete", 5}, {"torus", 27}} {
		net, err := New(Config{Nodes: tc.n, Topology: tc.topo, Seed: 1})
		require.NoError(t, err)
		in := inputs(tc.n)
		for e := uint64(1); e <= 3; e++ {
			runAgreed(t, net, tc.n, e, in, 10*time.Second)
		}
	}
}

// Messages slower than Idle must not multiply: every idle push used to add
// a message that circulated for good, and with a one-way delay of 30±30 ms
// (a starved process, a loaded broker) a 16-member hypercube sent 18,000
// messages per member and took 11 s (with 50±50 ms it never decided).
// Asks for answers that are slow, not lost, must not multiply either: with
// the same push asked about every Idle this test sent 1,499 messages per
// member; with repeated asks spaced out (member.Machine's idle backoff),
// 699.
func TestSlowMessagesDoNotMultiply(t *testing.T) {
	const n = 16
	net, err := New(Config{Nodes: n, Topology: "hypercube", Seed: 1, Latency: 30 * time.Millisecond, Jitter: 30 * time.Millisecond, Overhead: 100 * time.Microsecond})
	require.NoError(t, err)
	net.MaxEvents = 2_000_000
	in := inputs(n)
	runAgreed(t, net, n, 1, in, 30*time.Second)
	assert.Less(t, net.Messages/n, 1000, "messages per member")
	assert.Less(t, net.Now(), 6*time.Second)
}

// The root's last breath: member 0 returns the result it decided and exits
// before anything it sends gets out. Every other member must return the
// same value (the successor adopts it), or an error.
func TestRootExitsOnItsResult(t *testing.T) {
	const n = 9
	net, err := New(Config{Nodes: n, Seed: 3, Suspect: 200 * time.Millisecond})
	require.NoError(t, err)
	net.ExitOnResult(0, 0)
	in := inputs(n)
	outs := net.Run(1, in, nil, 4*time.Second)
	require.NoError(t, outs[0].Err)
	assert.Empty(t, member.Check(n, 1, in, outs, 1e-9))
	ok := 0
	for id, o := range outs {
		if o.Err == nil {
			ok++
			assert.Equal(t, outs[0].Result.Value, o.Result.Value, "member %d", id)
			assert.Equal(t, n, o.Result.Live, "the dead root's input stays in: it was chosen with it")
		}
	}
	assert.Equal(t, n, ok, "every member returns the chosen value")
}

// regressions are the chaos schedules that broke the invariant before the
// fix named, kept with their seeds so that they run for good.
var regressions = []struct {
	seed      uint64
	scenarios []string
	what      string
}{
	// A forged result (no group key) was taken as the group's: members
	// returned 409238.49 for an average of 525.54. Fixed by checking a
	// result against the member's own estimate.
	{1, []string{"loss", "dup", "reorder", "slow", "pause", "crash", "root-crash", "partition", "partition-heal", "forge"}, "forged result"},
	// Members took three different forged results in one epoch.
	{6, []string{"loss", "dup", "reorder", "slow", "pause", "crash", "root-crash", "partition", "partition-heal", "forge"}, "forged results differ"},
	// The root returned its value and exited before broadcasting; the
	// successor decided another (live 8 against 9). Fixed by deciding
	// with Paxos (commit.go).
	{2, []string{"root-exit", "loss"}, "root's last breath"},
	// A forged result within ε/4 of the truth passed the members' own
	// checks: members 2, 3, 5, 7, 8 and 9 returned 416.27272722583683,
	// member 0 the chosen 416.27272727272657 (32 violations in 300
	// operations, seeds 1, 3, 26, 30, ...). Fixed by taking a result a
	// member did not accept itself only from two sources.
	{1, []string{"forge-near"}, "forged result near the truth"},
	{3, []string{"forge-near"}, "forged result near the truth"},
	{30, []string{"forge-near"}, "forged result near the truth"},
	// The true average labelled as leaving a member out, from two forged
	// identities: members returned it as the average of inputs it was not
	// (violations at seeds 6, 30, 62, 69, 71 of 100 cases; found by a
	// real-process forger first). Fixed without a key by taking only an
	// absent set the member's own certificate confirms.
	{6, []string{"forge-absent"}, "forged absent set"},
	{30, []string{"forge-absent"}, "forged absent set"},
	{3, []string{"root-exit"}, "root's last breath"},
}

func TestChaosRegressions(t *testing.T) {
	for _, r := range regressions {
		c, err := ChaosCase(r.seed, ChaosConfig{Scenarios: r.scenarios})
		require.NoError(t, err)
		assert.Empty(t, c.Violations, "%s: seed %d: %s", r.what, r.seed, c.Schedule)
	}
}

func TestChaosFindsNoViolation(t *testing.T) {
	ops := 60
	if testing.Short() || raceEnabled {
		ops = 15
	}
	campaign(t, ops, 1, "")
}

// TestChaosExchange: dimension exchange under every fault, falling back to
// PFCC when it cannot finish, never returns two results for one operation
// nor one that is not the aggregate of the inputs it names, forged results
// included (an exchange under way takes none; see member.deliver).
func TestChaosExchange(t *testing.T) {
	ops := 60
	if testing.Short() || raceEnabled {
		ops = 15
	}
	campaign(t, ops, 7, "exchange")
}

// TestChaosChunkedExchange: the chunked exchange under every fault, with
// inputs of 24 components (25 words, more than the 16 ranks of the
// largest group drawn, so every group cuts its vectors), keeps the same
// promise: a member that dies mid-pass stalls the first pass, and the
// fallback ends it.
func TestChaosChunkedExchange(t *testing.T) {
	ops := 60
	if testing.Short() || raceEnabled {
		ops = 15
	}
	campaignOf(t, ChaosConfig{Ops: ops, Seed: 11, Algorithm: "exchange-chunked", Components: 24})
}

// campaign runs a chaos campaign and fails the test on every violation.
func campaign(t *testing.T, ops int, seed uint64, algorithm string) {
	campaignOf(t, ChaosConfig{Ops: ops, Seed: seed, Algorithm: algorithm})
}

// campaignOf is campaign with any configuration.
func campaignOf(t *testing.T, cfg ChaosConfig) {
	t.Logf("chaos seed %d, %d operations of %q, %d components (replay a case with ChaosCase(seed, ChaosConfig{Scenarios: Scenarios, Algorithm: %[3]q, Components: %[4]d}))",
		cfg.Seed, cfg.Ops, cfg.Algorithm, cfg.Components)
	rep, err := Chaos(context.Background(), cfg)
	require.NoError(t, err)
	for _, c := range rep.Cases {
		t.Errorf("case seed %d: %s", c.Seed, c.Schedule)
		for _, v := range c.Violations {
			t.Errorf("  %v", v)
		}
	}
	assert.GreaterOrEqual(t, rep.Operations, cfg.Ops)
	t.Logf("operations %d, member operations failed %d, truncated %d, violations %d", rep.Operations, rep.Failed, rep.Truncated, rep.Violations)
}

// Once its certificate is complete a member is quiet (pushflow's Quiet): it
// answers each push with its flow and starts none, so the group stops
// exchanging while the root commits. Before, the exchanges went on at full
// speed while the root took in its commit's replies one by one, and the
// share of gossip sent in that wait grew with N (37 % at 4,096 members):
// here, 1,024 members sent 14.1 % of their gossip after the root had begun
// its commit, and now send 0.04 to 1.3 % (seeds 1 to 6; 1.3 % with this
// seed).
func TestCompleteMembersGoQuiet(t *testing.T) {
	const n = 1024
	net, err := New(Config{Nodes: n, Topology: "hypercube", Algorithm: "pfcc", Seed: 1})
	require.NoError(t, err)
	net.Record(true)
	in := inputs(n)
	runAgreed(t, net, n, 1, in, 10*time.Second)
	// The commit's first message: member 0's prepare, or its proposal on
	// the fast ballot (member.tagPrepare, member.tagPropose).
	const prepare, propose = ^uint64(0) - 6, ^uint64(0) - 8
	before, after, begun := 0, 0, false
	for _, msg := range net.Recorded() {
		switch {
		case msg.Kind == gossip.KindControl && msg.From == 0 && (msg.Tag == prepare || msg.Tag == propose):
			begun = true
		case msg.Kind == gossip.KindCheckedFlow && begun:
			after++
		case msg.Kind == gossip.KindCheckedFlow:
			before++
		}
	}
	require.True(t, begun, "the root commits")
	t.Logf("gossip before the commit %d, after %d (%.1f %%)", before, after, 100*float64(after)/float64(before+after))
	assert.Less(t, float64(after), 0.03*float64(before+after), "gossip after the root began its commit")
}

// TestStopEndsARun: a closed Stop ends Run at the end of the window in
// which Events passes the next multiple of 4,096, the members still at the
// operation giving up, and Measure
// reports its context's error rather than the figures of an operation cut
// short. (An operation of 65,536 simulated members runs for tens of
// minutes, and `sim --runtime` must still end on Ctrl-C.)
func TestStopEndsARun(t *testing.T) {
	const n = 256
	net, err := New(Config{Nodes: n, Topology: "hypercube", Algorithm: "pfcc", Seed: 1})
	require.NoError(t, err)
	stop := make(chan struct{})
	close(stop)
	net.Stop = stop
	// Stop is looked at between windows, once Events has passed another
	// multiple of 4,096: starting the count at 1 puts the first look 4,095
	// events or more into the operation, which takes tens of thousands
	// fault-free (a window of 256 members holds a few hundred).
	net.Events = 1
	outs := net.Run(1, inputs(n), nil, time.Minute)
	assert.Equal(t, 1, net.Truncated)
	assert.GreaterOrEqual(t, net.Events, 4096, "stopped at the first look")
	assert.Less(t, net.Events, 5000, "stopped at the first look")
	require.Len(t, outs, n, "every member begun, and ended")
	for id, o := range outs {
		require.ErrorIs(t, o.Err, context.DeadlineExceeded, "member %d", id)
	}

	_, err = Measure(&cancelledLater{}, MeasureConfig{Net: Config{Nodes: n, Topology: "hypercube", Algorithm: "pfcc", Seed: 1}})
	require.ErrorIs(t, err, context.Canceled)
}

// cancelledLater is a context whose Done channel is closed from the start
// but whose Err is nil the first time it is asked: Measure begins a run,
// and only the run's Stop can end it.
type cancelledLater struct {
	context.Context
	asked bool
}

func (c *cancelledLater) Done() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

func (c *cancelledLater) Err() error {
	if !c.asked {
		c.asked = true
		return nil
	}
	return context.Canceled
}

// TestServerForwardsOneMessageAtATime: with Config.Server every message
// passes through one queue that forwards one per Server. Recursive
// doubling among 16 members sends 16 messages in each of its 4 rounds,
// and every member needs its last one, so all 64 pass the server: the
// operation takes at least 64 ms at 1 ms a message, against well under a
// millisecond without the server.
func TestServerForwardsOneMessageAtATime(t *testing.T) {
	const n = 16
	took := func(server time.Duration) (time.Duration, int) {
		net, err := New(Config{Nodes: n, Topology: "hypercube", Algorithm: "rdb", Seed: 1, Server: server})
		require.NoError(t, err)
		runAgreed(t, net, n, 1, inputs(n), 10*time.Second)
		return net.Now(), net.Messages
	}
	fast, msgs := took(0)
	require.Equal(t, 64, msgs)
	assert.Less(t, fast, time.Millisecond)
	slow, msgs := took(time.Millisecond)
	assert.Equal(t, 64, msgs)
	assert.GreaterOrEqual(t, slow, 64*time.Millisecond)
	assert.Less(t, slow, 80*time.Millisecond, "a message waits for the ones ahead of it, not longer")

	_, err := New(Config{Nodes: n, Server: -time.Millisecond})
	assert.ErrorIs(t, err, gossip.ErrInvalidConfig)
}

// TestBlockedMembersAskForTheEstimate: a member that would be stable but
// for a neighbour whose latest estimate disagreed asks that neighbour for
// its current one (member's askBlocking) rather than wait for it to send;
// the group still returns one result, the exact aggregate within ε. At
// 16,384 simulated members under 1 % loss, waiting instead cost 563.5
// messages a member against 443.8 (docs/live.md, "The certificate on a
// slow network").
func TestBlockedMembersAskForTheEstimate(t *testing.T) {
	const n = 64
	net, err := New(Config{Nodes: n, Topology: "hypercube", Algorithm: "pfcc", Seed: 1, Loss: 0.05})
	require.NoError(t, err)
	runAgreed(t, net, n, 1, inputs(n), 30*time.Second)
	asks := 0
	for i := range n {
		asks += net.Machine(gossip.NodeID(i)).Stats().EstimateAsks
	}
	assert.Positive(t, asks, "members held up by a neighbour asked it")
}
