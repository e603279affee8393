package member_test

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/algo"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/member"
	"github.com/gossipreduce/gossipreduce/topology"
)

// newMember builds member id of a complete group of n running pfcc.
func newMember(t *testing.T, id, n int, authenticated bool) *member.Machine {
	t.Helper()
	cfg := testConfig(t, id, n, "pfcc")
	cfg.Authenticated = authenticated
	m, err := member.New(cfg)
	require.NoError(t, err)
	return m
}

// testConfig is the configuration of member id of a complete group of n
// running the algorithm called name, with the tests' timings.
func testConfig(t *testing.T, id, n int, name string) member.Config {
	t.Helper()
	g, err := topology.Parse("complete", n)
	require.NoError(t, err)
	spec, err := algo.Lookup(name)
	require.NoError(t, err)
	return member.Config{ID: gossip.NodeID(id), Graph: g, Algorithm: spec, Diameter: 1,
		Epsilon: 1e-9, Idle: time.Millisecond, Suspect: 100 * time.Millisecond, Tick: time.Millisecond}
}

// The machine's reserved control tags (member/machine.go), as the tests
// send them.
const (
	pingTag     = ^uint64(0) - 1
	pongTag     = ^uint64(0) - 2
	excludedTag = ^uint64(0) - 3
)

// toZero is a control message with tag from member from to member 0, in
// epoch 1.
func toZero(from int, tag uint64) gossip.Message {
	return gossip.Message{From: gossip.NodeID(from), To: 0, Kind: gossip.KindControl, Epoch: 1, Tag: tag}
}

// An error that blames a member names it plainly only when messages are
// authenticated; otherwise it says the sender is what the message claims.
func TestMismatchNamesTheSender(t *testing.T) {
	for _, auth := range []bool{false, true} {
		// Member 0 gossips to one of its neighbours (its first push, and
		// while nobody answers, asks for that push's answer): b is that one.
		a := newMember(t, 0, 4, auth)
		require.NoError(t, a.Begin(0, member.Op{Values: []float64{1, 2, 3}}))
		var first *gossip.Message
		for _, msg := range a.Outbox() {
			if msg.Kind != gossip.KindControl {
				first = &msg
				break
			}
		}
		require.NotNil(t, first, "member 0 gossips")
		b := newMember(t, int(first.To), 4, auth)
		require.NoError(t, b.Begin(0, member.Op{Values: []float64{1, 2}}))
		b.Step(time.Millisecond, *first)
		out, ok := b.TakeOutcome()
		require.True(t, ok, "a vector of another length ends the operation")
		require.ErrorIs(t, out.Err, member.ErrGroupMismatch)
		assert.Contains(t, out.Err.Error(), "node 0")
		if auth {
			assert.NotContains(t, out.Err.Error(), "not authenticated")
		} else {
			assert.Contains(t, out.Err.Error(), "not authenticated")
		}
	}
}

// nanEstimate is a machine whose estimate is not finite, as a machine's is
// when its weight is momentarily zero or its state corrupted.
type nanEstimate struct{ gossip.Machine }

func (nanEstimate) Estimate(dst []float64) []float64 { return append(dst, math.NaN()) }

// A member that gives up returns its own estimate, but never a NaN one.
func TestGiveUpNeverReturnsNaN(t *testing.T) {
	g, err := topology.Parse("complete", 2)
	require.NoError(t, err)
	spec, err := algo.Lookup("pfcc")
	require.NoError(t, err)
	inner := spec.New
	spec.New = func(c gossip.Config) (gossip.Machine, error) {
		m, err := inner(c)
		return nanEstimate{m}, err
	}
	m, err := member.New(member.Config{ID: 0, Graph: g, Algorithm: spec, Diameter: 1,
		Epsilon: 1e-9, Idle: time.Millisecond, Suspect: 100 * time.Millisecond, Tick: time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, m.Begin(0, member.Op{Values: []float64{1}}))
	m.GiveUp(time.Second, context.DeadlineExceeded)
	out, ok := m.TakeOutcome()
	require.True(t, ok)
	require.ErrorIs(t, out.Err, member.ErrNotConverged)
	assert.Nil(t, out.Result.Value, "no estimate rather than NaN")
	assert.Equal(t, uint64(1), out.Result.Epoch)
}

// A finite algorithm that does not reduce extremes refuses them at Begin,
// rather than returning a result without them.
func TestFiniteWithoutExtremesRefusesThem(t *testing.T) {
	g, err := topology.Parse("complete", 2)
	require.NoError(t, err)
	for _, name := range []string{"rdb", "exchange"} {
		spec, err := algo.Lookup(name)
		require.NoError(t, err)
		m, err := member.New(member.Config{ID: 0, Graph: g, Algorithm: spec, Diameter: 1,
			Epsilon: 1e-9, Idle: time.Millisecond, Suspect: 100 * time.Millisecond, Tick: time.Millisecond})
		require.NoError(t, err)
		err = m.Begin(0, member.Op{Values: []float64{1}, Extremes: []float64{1}})
		if spec.Extremes {
			assert.NoError(t, err, name)
		} else {
			assert.ErrorIs(t, err, gossip.ErrInvalidConfig, name)
		}
	}
}

// CheckExtremes accepts maxima that are a member's own and no lower than
// the maximum over the members a result covers, and flags the others.
func TestCheckExtremes(t *testing.T) {
	ext := [][]float64{{1, -5}, {4, -2}, {9, -1}} // member 2 is left out below
	res := func(e ...float64) map[gossip.NodeID]member.Outcome {
		r := member.Result{Epoch: 1, Live: 2, Absent: []gossip.NodeID{2}, Extremes: e}
		return map[gossip.NodeID]member.Outcome{0: {Result: r}, 1: {Result: r}}
	}
	assert.Empty(t, member.CheckExtremes(3, 1, ext, res(4, -2)), "the maxima over the covered")
	assert.Empty(t, member.CheckExtremes(3, 1, ext, res(9, -1)), "a dead member's, heard before it died")
	assert.Len(t, member.CheckExtremes(3, 1, ext, res(1, -2)), 2, "below the covered maximum, at both members")
	assert.Len(t, member.CheckExtremes(3, 1, ext, res(5, -2)), 2, "nobody's")
	assert.Len(t, member.CheckExtremes(3, 1, ext, res(4)), 2, "too few")
	failed := res(0, 0)
	failed[0] = member.Outcome{Err: member.ErrNotConverged}
	assert.Len(t, member.CheckExtremes(3, 1, ext, failed), 2, "an error is not checked: only member 1's two")
}

// TestEveryoneLeftEndsTheOperation: a member whose every peer announced
// that it left (they had their result while this one was stopped, and
// their linger ran out) ends its operation at once with ErrNotConverged,
// instead of at its deadline; while one peer is still there, it waits.
func TestEveryoneLeftEndsTheOperation(t *testing.T) {
	a := newMember(t, 0, 3, true)
	require.NoError(t, a.Begin(0, member.Op{Epoch: 1, Values: []float64{1}}))
	for _, id := range []int{1, 2} {
		b := newMember(t, id, 3, true)
		b.Leave(time.Millisecond)
		for _, msg := range b.Outbox() {
			if msg.To == 0 {
				a.Step(2*time.Millisecond, msg)
				a.Step(3*time.Millisecond, msg) // a duplicate counts once
			}
		}
		if id == 1 {
			_, ok := a.TakeOutcome()
			assert.False(t, ok, "one of two left: the other may still answer")
		}
	}
	out, ok := a.TakeOutcome()
	require.True(t, ok, "both left: nobody can answer")
	require.ErrorIs(t, out.Err, member.ErrNotConverged)
	assert.Contains(t, out.Err.Error(), "every other member has left the group")
}

// TestIsolatedMemberIsNotTickedForNothing: a member cut off from every
// neighbour (a partition, or its neighbours all crashed) declares nobody
// dead and takes no idle step until it hears from one again, so NextTick
// names only its probes, one every Suspect/16 per silent neighbour, not
// every Tick. Before, the declarations and idle steps it was not going to
// take counted as due, in the past, and the simulator ticked such a member
// every millisecond for as long as it stayed cut off: here about 400 ticks
// from Suspect to 5·Suspect where about 64 are needed. Once a neighbour is
// heard again the silence of isolation is forgiven, and nobody is dead.
func TestIsolatedMemberIsNotTickedForNothing(t *testing.T) {
	const suspect = 100 * time.Millisecond // newMember's
	a := newMember(t, 0, 4, false)
	require.NoError(t, a.Begin(0, member.Op{Epoch: 1, Values: []float64{1}}))
	ping := func(from int) gossip.Message { // any message counts as hearing from its sender
		return toZero(from, pingTag)
	}
	for j := 1; j < 4; j++ {
		a.Step(time.Millisecond, ping(j))
	}
	a.Outbox()
	now, ticks, probes := time.Millisecond, 0, 0
	for now < 5*suspect {
		at, ok := a.NextTick(now)
		require.True(t, ok, "an active member")
		now = max(at, now+time.Millisecond) // the driver's tick is 1 ms
		a.Tick(now)
		if now > suspect+time.Millisecond {
			ticks++
			for _, msg := range a.Outbox() {
				if msg.Kind == gossip.KindControl {
					probes++
				}
			}
		} else {
			a.Outbox()
		}
	}
	t.Logf("%d ticks and %d probes from Suspect to 5·Suspect", ticks, probes)
	assert.Positive(t, probes, "an isolated member keeps probing")
	assert.LessOrEqual(t, ticks, 80, "ticked for nothing")
	assert.Zero(t, a.Stats().Excluded, "declared a neighbour dead while isolated")
	a.Step(now+time.Millisecond, ping(2))
	assert.Equal(t, 1, a.Stats().Isolations)
	for end := now + suspect/2; now < end; {
		at, _ := a.NextTick(now)
		now = max(at, now+time.Millisecond)
		a.Tick(now)
	}
	assert.Zero(t, a.Stats().Excluded, "the silence of the isolation was held against a neighbour")
	assert.True(t, a.Active())
}

// TestEarlyPongCountsAsHeard: a neighbour's start pong that arrives before
// this member begins the operation is not kept with the early messages
// (on a complete overlay of thousands those pongs would crowd out pushes)
// but noted, so the neighbour counts as heard from: if it then falls
// silent it is declared dead after Suspect, not after the 4 × Suspect a
// neighbour that may not have started yet gets.
func TestEarlyPongCountsAsHeard(t *testing.T) {
	const suspect = 100 * time.Millisecond // newMember's
	a := newMember(t, 0, 4, false)
	pong := toZero(1, pongTag)
	a.Step(0, pong)
	assert.Zero(t, a.Stats().Buffered, "a pong is noted, not buffered")
	require.NoError(t, a.Begin(time.Millisecond, member.Op{Epoch: 1, Values: []float64{1}}))
	now, declared, alive := time.Millisecond, time.Duration(0), time.Duration(0)
	for now < 5*suspect && declared == 0 {
		at, _ := a.NextTick(now)
		now = min(max(at, now+time.Millisecond), alive+10*time.Millisecond)
		if now-alive >= 10*time.Millisecond { // members 2 and 3 are alive
			alive = now
			for j := 2; j < 4; j++ {
				a.Step(now, toZero(j, pingTag))
			}
		}
		a.Tick(now)
		a.Outbox()
		if a.Stats().Excluded > 0 {
			declared = now
		}
	}
	require.NotZero(t, declared, "member 1 never declared dead")
	assert.Less(t, declared, 2*suspect, "declared after %v: as a neighbour never heard from", declared)
}

// TestNeighboursHearAtLeastEverySuspectFifth: a member sends every watched
// neighbour something at least every Suspect/5 while an operation is under
// way: what the algorithm sends, a probe, or a heartbeat (a pong nobody
// asked for) when nothing else went to that neighbour for Suspect/5; the
// heartbeats due on one tick take along every neighbour sent nothing for
// Suspect/10. Member 0 of 4 hears a pong from each neighbour every 10 ms
// (so none is probed) and answers none of their pushes: its own pushes
// are asked after with a backoff, to one neighbour at a time.
func TestNeighboursHearAtLeastEverySuspectFifth(t *testing.T) {
	const suspect = 100 * time.Millisecond // newMember's
	a := newMember(t, 0, 4, false)
	require.NoError(t, a.Begin(0, member.Op{Epoch: 1, Values: []float64{1}}))
	pong := func(from int) gossip.Message {
		return toZero(from, pongTag)
	}
	last := map[gossip.NodeID]time.Duration{1: 0, 2: 0, 3: 0}
	beats := 0
	note := func(now time.Duration) {
		for _, msg := range a.Outbox() {
			if _, ok := last[msg.To]; !ok {
				continue
			}
			if msg.Kind == gossip.KindControl && msg.Tag == pongTag && now > 0 {
				beats++
				assert.GreaterOrEqual(t, now-last[msg.To], suspect/10, "a heartbeat to %d at %v, %v after the last message to it", msg.To, now, now-last[msg.To])
			}
			last[msg.To] = now
		}
	}
	note(0)
	for now, heard := time.Duration(0), time.Duration(0); now < 2*suspect; {
		if now-heard >= 10*time.Millisecond {
			heard = now
			for j := 1; j < 4; j++ {
				a.Step(now, pong(j))
			}
			note(now)
		}
		at, ok := a.NextTick(now)
		require.True(t, ok)
		now = max(at, now+time.Millisecond)
		for j, at := range last {
			require.LessOrEqual(t, now-at, suspect/5+time.Millisecond, "neighbour %d sent nothing since %v, now %v", j, at, now)
		}
		a.Tick(now)
		note(now)
	}
	assert.Positive(t, beats)
	assert.Equal(t, beats, a.Stats().Heartbeats)
	assert.Zero(t, a.Stats().Probes, "a neighbour heard every 10 ms was probed")
	assert.True(t, a.Active())
}

// TestLiveSilencesWidenTheLimit: a neighbour heard again after a silence
// of s shows that s of silence is not death here (a starved process, a
// loaded broker), and every neighbour then gets at least 2s before it is
// declared dead, up to MaxSilence times Suspect. Neighbour 1 is heard
// again after silences of nine tenths of the limit each time, so the limit
// grows with the evidence, 100 ms to 180, 324, 583 and then the cap, 800;
// then it falls silent for good. Neighbours 2 and 3 speak every 10 ms.
func TestLiveSilencesWidenTheLimit(t *testing.T) {
	const suspect = 100 * time.Millisecond // newMember's
	a := newMember(t, 0, 4, false)
	require.NoError(t, a.Begin(0, member.Op{Epoch: 1, Values: []float64{1}}))
	ping := func(now time.Duration, from int) { a.Step(now, toZero(from, pingTag)) }
	now, alive := time.Duration(0), time.Duration(0)
	// run ticks the member until it declares a neighbour dead or until
	// end, with members 2 and 3 heard every 10 ms.
	run := func(end time.Duration) (declared time.Duration) {
		for now < end {
			at, ok := a.NextTick(now)
			require.True(t, ok)
			now = min(max(at, now+time.Millisecond), alive+10*time.Millisecond, end)
			if now-alive >= 10*time.Millisecond {
				alive = now
				ping(now, 2)
				ping(now, 3)
			}
			a.Tick(now)
			a.Outbox()
			if a.Stats().Excluded > 0 {
				return now
			}
		}
		return 0
	}
	ping(0, 1)
	limit, last := suspect, time.Duration(0)
	for _, want := range []time.Duration{180, 324, 583, 800} {
		silence := limit * 9 / 10
		require.Zero(t, run(last+silence), "a neighbour declared dead within the limit %v", limit)
		ping(now, 1)
		last = now
		assert.Equal(t, silence, a.Stats().Slowest)
		limit = max(suspect, min(2*silence, member.MaxSilence*suspect))
		assert.Equal(t, want*time.Millisecond, limit.Round(time.Millisecond))
	}
	declared := run(last + 2*limit)
	require.NotZero(t, declared, "neighbour 1 never declared dead")
	assert.InDelta(t, float64(last+limit), float64(declared), float64(2*time.Millisecond), "declared %v after it was last heard, limit %v", declared-last, limit)
}

// TestOutcastWaitsAsForASilentNeighbour: a member told that it was
// declared dead waits for the result as long as it would wait for a silent
// neighbour (Suspect, or twice the longest silence of a live one), then
// gives up with ErrExcluded. Neighbour 1 is heard again after 90 ms of
// silence (Suspect 100 ms), so the member waits 180 ms, not 100.
func TestOutcastWaitsAsForASilentNeighbour(t *testing.T) {
	const suspect = 100 * time.Millisecond // newMember's
	a := newMember(t, 0, 4, false)
	require.NoError(t, a.Begin(0, member.Op{Epoch: 1, Values: []float64{1}}))
	ping := func(now time.Duration, from int) { a.Step(now, toZero(from, pingTag)) }
	now := time.Duration(0)
	for j := 1; j < 4; j++ {
		ping(now, j)
	}
	for now < 90*time.Millisecond {
		now = tickOneSilent(a, now)
	}
	ping(now, 1)
	require.Equal(t, 90*time.Millisecond, a.Stats().Slowest)
	told := now
	a.Step(now, toZero(2, excludedTag))
	var out member.Outcome
	for done := false; !done && now < told+time.Second; {
		at, ok := a.NextTick(now)
		require.True(t, ok)
		now = max(at, now+time.Millisecond)
		a.Tick(now)
		a.Outbox()
		out, done = a.TakeOutcome()
	}
	require.ErrorIs(t, out.Err, member.ErrExcluded)
	assert.Greater(t, now-told, 2*90*time.Millisecond, "gave up %v after it was told, before the patience a live silence taught", now-told)
	assert.LessOrEqual(t, now-told, 2*90*time.Millisecond+2*time.Millisecond)
	assert.Greater(t, now-told, suspect)
}

// tickOneSilent moves member a of a group of four 1 ms on from now and
// ticks it; neighbours 2 and 3 ping it every 10 ms, neighbour 1 is silent.
// It returns the new time.
func tickOneSilent(a *member.Machine, now time.Duration) time.Duration {
	now += time.Millisecond
	if now%(10*time.Millisecond) == 0 {
		a.Step(now, toZero(2, pingTag))
		a.Step(now, toZero(3, pingTag))
	}
	a.Tick(now)
	a.Outbox()
	return now
}

// TestAStallTeachesPatience: a member that was itself not running for a
// while waits twice that long for a silent neighbour, as it does after a
// live neighbour's silence (limit). Suspect is 100 ms; the member stalls
// for 80 ms, so neighbour 1, silent all along, is declared 160 ms after
// the time it was last heard, moved forward by the stall (79 ms), not
// after 100.
func TestAStallTeachesPatience(t *testing.T) {
	const suspect = 100 * time.Millisecond // newMember's
	a := newMember(t, 0, 4, false)
	require.NoError(t, a.Begin(0, member.Op{Epoch: 1, Values: []float64{1}}))
	ping := func(now time.Duration, from int) { a.Step(now, toZero(from, pingTag)) }
	for j := 1; j < 4; j++ {
		ping(0, j)
	}
	now := time.Duration(0)
	for now < 10*time.Millisecond { // running: a tick every Tick
		now += time.Millisecond
		a.Tick(now)
		a.Outbox()
	}
	const stall = 80 * time.Millisecond
	now += stall
	a.Tick(now)
	a.Outbox()
	require.Equal(t, 1, a.Stats().Stalls)
	heard := stall - time.Millisecond // forgiven: the stall less one Tick
	declared := time.Duration(0)
	for now < heard+4*suspect && declared == 0 {
		now = tickOneSilent(a, now)
		if a.Stats().Excluded > 0 {
			declared = now
		}
	}
	require.NotZero(t, declared, "neighbour 1 never declared dead")
	assert.Greater(t, declared-heard, suspect+suspect/2, "declared after %v of silence: the stall taught nothing", declared-heard)
	assert.InDelta(t, float64(2*stall), float64(declared-heard), float64(3*time.Millisecond), "declared after %v of silence", declared-heard)
}

// TestNoHeartbeatsAfterAStall: a tick that comes far later than Tick
// means this member was not running (a starved process), and the silence
// of that stretch is forgiven both ways: its neighbours' is not held
// against them, and its own does not make every heartbeat due at once. In
// one process holding many members all stall together; a round of
// heartbeats after every stall raised the messages of 256 PFCC members
// beside six busy loops from about 250 a member to 295 to 336.
func TestNoHeartbeatsAfterAStall(t *testing.T) {
	const suspect = 100 * time.Millisecond // newMember's
	a := newMember(t, 0, 4, false)
	require.NoError(t, a.Begin(0, member.Op{Epoch: 1, Values: []float64{1}}))
	a.Tick(time.Millisecond)
	a.Outbox()
	stall := 2 * suspect / 5 // every heartbeat twice over due, counted in running time
	a.Tick(time.Millisecond + stall)
	require.Equal(t, 1, a.Stats().Stalls)
	assert.Zero(t, a.Stats().Heartbeats, "heartbeats right after a stall")
	for _, msg := range a.Outbox() {
		assert.False(t, msg.Kind == gossip.KindControl && msg.Tag == pongTag, "a pong to %d right after a stall", msg.To)
	}
}

// TestGiveUpNamesTheOperationsTime: a member that gives up says how long
// its operation ran, in words that do not pass for the caller's deadline,
// which may also have covered connecting and joining.
func TestGiveUpNamesTheOperationsTime(t *testing.T) {
	a := newMember(t, 0, 4, false)
	require.NoError(t, a.Begin(10*time.Second, member.Op{Epoch: 1, Values: []float64{1}}))
	a.GiveUp(10*time.Second+47*time.Millisecond, context.DeadlineExceeded)
	out, ok := a.TakeOutcome()
	require.True(t, ok)
	require.ErrorIs(t, out.Err, member.ErrNotConverged)
	require.ErrorIs(t, out.Err, context.DeadlineExceeded)
	assert.Contains(t, out.Err.Error(), "not converged 47ms into the operation (epoch 1,")
}

// TestGiveUpSaysItHeardNobody: a member that gives up after hearing from
// no neighbour for more than Suspect/2 (isolated: it declares nobody dead
// then) says so, since its causes are not a slow group's: a partition, or a
// group that finished while it was stopped (a helper's SIGSTOP of 3 s, the
// others gone when it came back). A member that heard from its neighbours
// recently does not.
func TestGiveUpSaysItHeardNobody(t *testing.T) {
	const suspect = 100 * time.Millisecond // newMember's
	a := newMember(t, 0, 4, false)
	require.NoError(t, a.Begin(0, member.Op{Epoch: 1, Values: []float64{1}}))
	a.GiveUp(3*suspect, context.DeadlineExceeded)
	out, ok := a.TakeOutcome()
	require.True(t, ok)
	require.ErrorIs(t, out.Err, member.ErrNotConverged)
	assert.Contains(t, out.Err.Error(), "nothing heard from any neighbour for 300ms")

	b := newMember(t, 0, 4, false)
	require.NoError(t, b.Begin(0, member.Op{Epoch: 1, Values: []float64{1}}))
	b.GiveUp(suspect/2, context.DeadlineExceeded)
	out, ok = b.TakeOutcome()
	require.True(t, ok)
	assert.NotContains(t, out.Err.Error(), "nothing heard", "Suspect/2 of silence is not isolation")
}

// TestIdleStepsRememberASlowAnswer: a PFCC member whose push is answered
// only after its idle steps have spaced out to Idle << k waits Idle <<
// (k-1), not Idle, before the next idle step, so that a network slower
// than Idle is not asked again every Idle for each new push (e1706d3).
func TestIdleStepsRememberASlowAnswer(t *testing.T) {
	const idle = time.Millisecond // newMember's
	a, b := newMember(t, 0, 2, false), newMember(t, 1, 2, false)
	require.NoError(t, a.Begin(0, member.Op{Epoch: 1, Values: []float64{1}}))
	require.NoError(t, b.Begin(0, member.Op{Epoch: 1, Values: []float64{3}}))
	b.Outbox()
	var held []gossip.Message // a's flows, not delivered yet: a slow network
	asks := 0
	now := time.Duration(0)
	for now < 20*idle {
		now += idle
		a.Tick(now)
		for _, msg := range a.Outbox() {
			if msg.Kind == gossip.KindCheckedFlow {
				if msg.Tag&(1<<62) != 0 {
					asks++
				}
				held = append(held, msg)
			}
		}
	}
	require.NotEmpty(t, held)
	require.Less(t, asks, 10, "asks every Idle: the idle steps did not space out")
	// b answers a's first push; a takes the answer.
	b.Step(now, held[0])
	for _, msg := range b.Outbox() {
		if msg.Kind == gossip.KindCheckedFlow {
			a.Step(now, msg)
		}
	}
	a.Outbox()
	next, ok := a.NextTick(now)
	require.True(t, ok)
	assert.GreaterOrEqual(t, next-now, 2*idle, "the next idle step is due after %v, as if the answer had come at once", next-now)
}

// TestSharedSilenceDoublesTheLimit: one neighbour silent for Suspect is
// declared dead then; two silent at once are declared only after twice
// Suspect, for several members falling silent together are more likely
// held up on the way (a starved server) than dead (see limit). Member 0
// of a complete group of 5 hears from all four neighbours once, and then
// every 10 ms only from those the case keeps talking.
func TestSharedSilenceDoublesTheLimit(t *testing.T) {
	const suspect = 100 * time.Millisecond // newMember's
	for _, c := range []struct {
		silent   []int
		from, to time.Duration // when the declarations come: after from, by to
	}{
		{silent: []int{4}, from: suspect, to: suspect + 5*time.Millisecond},
		{silent: []int{3, 4}, from: 2 * suspect, to: 2*suspect + 5*time.Millisecond},
	} {
		a := newMember(t, 0, 5, false)
		require.NoError(t, a.Begin(0, member.Op{Epoch: 1, Values: []float64{1}}))
		for j := 1; j < 5; j++ {
			a.Step(time.Millisecond, toZero(j, pingTag))
		}
		a.Outbox()
		var first, last time.Duration
		for now := 2 * time.Millisecond; now < 4*suspect; now += time.Millisecond {
			if now%(10*time.Millisecond) == 0 {
				for j := 1; j < 5; j++ {
					if !slices.Contains(c.silent, j) {
						a.Step(now, toZero(j, pingTag))
					}
				}
			}
			before := a.Stats().Excluded
			a.Tick(now)
			a.Outbox()
			if a.Stats().Excluded > before {
				if first == 0 {
					first = now
				}
				last = now
			}
		}
		assert.Equal(t, len(c.silent), a.Stats().Excluded, "silent %v: declared dead", c.silent)
		assert.Greater(t, first, c.from, "silent %v: declared too soon", c.silent)
		assert.LessOrEqual(t, last, c.to, "silent %v: declared too late", c.silent)
	}
}
