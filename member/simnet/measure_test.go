package simnet

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// TestMeasureUnderFaults runs the runtime at a scale the unit tests do not
// reach, with every kind of fault Measure draws, and checks what issue 10
// asks of it: no wrong result, no live member declared dead, no failure.
// The simulation is deterministic, so this is a fixed set of schedules,
// not a flaky one.
func TestMeasureUnderFaults(t *testing.T) {
	rep, err := Measure(context.Background(), MeasureConfig{
		Net:  Config{Nodes: 64, Topology: "hypercube", Algorithm: "pfcc", Loss: 0.01, Seed: 11},
		Runs: 3, Crash: 0.05, Slow: 0.1,
	})
	require.NoError(t, err)
	assert.Equal(t, 3, rep.Runs)
	assert.Equal(t, 9, rep.Crashed, "5 % of 64 rounds to 3 per run")
	assert.Equal(t, 18, rep.SlowMembers, "10 % of 64 rounds to 6 per run")
	assert.Zero(t, rep.Wrong)
	assert.Zero(t, rep.FalseDeaths)
	assert.Zero(t, rep.Failed)
	assert.Positive(t, rep.MsgsPerNode)
	assert.GreaterOrEqual(t, float64(rep.MaxMsgs), rep.MsgsPerNode)
	// A crashed root is detected after Suspect (1 s) at the earliest.
	assert.Greater(t, rep.TimeMS, 1000.0)
	assert.InDelta(t, rep.TimeMS*1e3/50, rep.TimeL, 1e-6*rep.TimeL, "L is 50 µs")
}

// TestMeasureCountsFalseDeaths makes a slow member's pause longer than
// Suspect, so that its neighbours rightly (by their rule) declare it dead:
// Measure must count that as a false death, since it never crashed.
func TestMeasureCountsFalseDeaths(t *testing.T) {
	rep, err := Measure(context.Background(), MeasureConfig{
		Net:  Config{Nodes: 16, Topology: "hypercube", Algorithm: "pfcc", Suspect: 100 * time.Millisecond, Seed: 2},
		Slow: 0.07, Pause: 2 * time.Second, Window: time.Millisecond,
	})
	require.NoError(t, err)
	assert.Equal(t, 1, rep.SlowMembers)
	assert.Equal(t, 1, rep.FalseDeaths)
	assert.Zero(t, rep.Wrong)
}

func TestMeasureRefusesBadConfig(t *testing.T) {
	for _, cfg := range []MeasureConfig{
		{Net: Config{Nodes: 8}, Runs: -1},
		{Net: Config{Nodes: 8}, Crash: 1},
		{Net: Config{Nodes: 8}, Slow: -0.1},
		{Net: Config{Nodes: 8}, SlowFactor: 0.5},
		{Net: Config{Nodes: 8}, Pause: -time.Second},
		{Net: Config{Nodes: 8}, Crash: 0.5, Slow: 0.5},
	} {
		_, err := Measure(context.Background(), cfg)
		assert.ErrorIs(t, err, gossip.ErrInvalidConfig, "%+v", cfg)
	}
}

// TestMeasureExchange: dimension exchange through the member machine, as
// the live runtime runs it. Under 20 % loss every member ends with the same
// bits (Measure's member.Check), repaired by resends that finished members
// answer from their stored messages; slow members only make it slower.
// Members that crash within the exchange (Window 0.4 ms: a fault-free
// operation of 64 members takes about 0.4 ms) after their first send are
// asked around: every other member ends with the result, their inputs in
// it. A member that dies before it sent anything (here two of 12 at once,
// member 0 and another: an odd folded rank sends only after its even
// neighbour's input arrived) takes its input with it, and its neighbour's:
// the exchange stalls, the members fall back to PFCC after Suspect (1 s)
// and end with its result, which leaves the dead out. With less time than
// that, they end with an error, never a result without them.
func TestMeasureExchange(t *testing.T) {
	rep, err := Measure(context.Background(), MeasureConfig{
		Net:  Config{Nodes: 64, Algorithm: "exchange", Loss: 0.2, Seed: 5},
		Runs: 5, Slow: 0.1, Window: 200 * time.Microsecond,
	})
	require.NoError(t, err)
	assert.Zero(t, rep.Wrong)
	assert.Zero(t, rep.Failed)
	// Fault-free each member sends 6; a lost message costs its resend and
	// the answer.
	assert.Greater(t, rep.MsgsPerNode, 6.0)

	rep, err = Measure(context.Background(), MeasureConfig{
		Net:  Config{Nodes: 64, Algorithm: "exchange", Seed: 5},
		Runs: 3, Crash: 0.05, Window: 400 * time.Microsecond,
	})
	require.NoError(t, err)
	assert.Equal(t, 9, rep.Crashed)
	assert.Zero(t, rep.Wrong)
	assert.Zero(t, rep.Failed, "crashes after contributing are asked around")

	rep, err = Measure(context.Background(), MeasureConfig{
		Net:  Config{Nodes: 12, Algorithm: "exchange", Seed: 1},
		Runs: 6, Crash: 0.2, Window: time.Microsecond, Limit: time.Second,
	})
	require.NoError(t, err)
	assert.Zero(t, rep.Wrong)
	assert.Positive(t, rep.Failed, "an input that never left its member is nowhere to be asked for, and Suspect is the whole limit")
	assert.Less(t, rep.Failed, rep.Runs, "the other crashes are asked around")

	rep, err = Measure(context.Background(), MeasureConfig{
		Net:  Config{Nodes: 12, Algorithm: "exchange", Seed: 1},
		Runs: 6, Crash: 0.2, Window: time.Microsecond, Limit: 20 * time.Second,
	})
	require.NoError(t, err)
	assert.Zero(t, rep.Wrong)
	assert.Zero(t, rep.Failed, "the fallback to PFCC ends what the exchange could not")
}

// TestFallbackVotesForTheExchangesResult: 13 members run the exchange,
// 3 crash within its first 100 µs, 5 % of messages are lost. Where some
// live members accepted the exchange's result R and the others fell back
// without it, the new root must propose R (it may have been chosen), and
// the members that fell back, whose own estimates leave out inputs that R
// covers, must vote for it. They refused it as implausible, round after
// round until the deadline (10 live members not converged after 60 s), in
// 5 of these 47 runs, or 7 (seeds 4, 13, 15, 22, 34, 38 and 40) with the
// simulator's order of events at equal times since it runs in windows;
// now they take R from a member that accepted it (exchange.Machine.Offered).
func TestFallbackVotesForTheExchangesResult(t *testing.T) {
	const runs = 47
	t.Logf("seeds 1 to %d", runs)
	rep, err := Measure(context.Background(), MeasureConfig{
		Net:  Config{Nodes: 13, Algorithm: "exchange", Loss: 0.05, Seed: 1},
		Runs: runs, Crash: 0.2, Window: 100 * time.Microsecond,
	})
	require.NoError(t, err)
	assert.Equal(t, runs*3, rep.Crashed)
	assert.Zero(t, rep.Wrong)
	assert.Zero(t, rep.Failed, "runs with a member that did not end with the result")
}

// Extremes under faults, with exchange (crashes before and after
// contributing, so fallbacks too) and with PFCC: every result's extremes
// pass member.CheckExtremes and every member returns the same bits.
func TestMeasureExtremesUnderFaults(t *testing.T) {
	for _, tc := range []struct {
		alg    string
		window time.Duration
	}{{"exchange", 100 * time.Microsecond}, {"pfcc", 5 * time.Millisecond}} {
		rep, err := Measure(context.Background(), MeasureConfig{
			Net:  Config{Nodes: 13, Algorithm: tc.alg, Loss: 0.05, Seed: 3, Extremes: true},
			Runs: 8, Crash: 0.2, Window: tc.window,
		})
		require.NoError(t, err)
		assert.Equal(t, 8*3, rep.Crashed, tc.alg)
		assert.Zero(t, rep.Wrong, tc.alg)
		assert.Zero(t, rep.Failed, tc.alg)
	}
}

// TestSlowCommitIsNotBidAgain: a root that takes in its commit's replies
// for longer than Suspect/2 is still making progress. At 65,536 simulated
// members with 1 % crashes the new root's N promises (5 µs each, behind
// the probes of a quiet group) took longer than that; timed from the
// start of its phase, it asked every member again after Suspect/8 and bid
// anew after Suspect/2, each time adding N replies to its own queue, and
// the operation never ended (its queue held 289,301 messages after 5.7
// simulated seconds). The same happens here with 1,024 members and a
// Suspect of 10 ms, against 5 ms of replies a phase: before the fix a
// live member was declared dead and the root sent 16,601 messages (16 N);
// now it sends 4.5 N (its prepares and proposals are 2 N).
func TestSlowCommitIsNotBidAgain(t *testing.T) {
	const n = 1024
	rep, err := Measure(context.Background(), MeasureConfig{
		Net:  Config{Nodes: n, Topology: "hypercube", Algorithm: "pfcc", Suspect: 10 * time.Millisecond, Seed: 3},
		Runs: 1, Limit: 4 * time.Second, Crash: 0.002, Window: time.Millisecond,
	})
	require.NoError(t, err)
	assert.Equal(t, 2, rep.Crashed, "the root among them: a take-over, with a prepare phase")
	assert.Zero(t, rep.Failed)
	assert.Zero(t, rep.FalseDeaths)
	assert.Zero(t, rep.Wrong)
	assert.Less(t, rep.MaxMsgs, 6*n, "the root asks again only when no new vote came")
}

// TestPausedMembersDoNotFloodTheGroup: members back from a pause answer
// the pushes that queued meanwhile without pushing them on (member's
// Backlog). 256 members, 5 % of them 10× slower and paused for 200 ms,
// seeds 1 to 3: before, each member sent 2,001, 714 and 2,088 messages
// (the pushes released at once circulated at full speed until the
// certificate completed); now 347, 331 and 382, against 248 to 255
// fault-free. The bound lies between; no slow member may be declared
// dead.
func TestPausedMembersDoNotFloodTheGroup(t *testing.T) {
	rep, err := Measure(context.Background(), MeasureConfig{
		Net:  Config{Nodes: 256, Topology: "hypercube", Algorithm: "pfcc", Seed: 1},
		Runs: 3, Slow: 0.05,
	})
	require.NoError(t, err)
	assert.Equal(t, 3*13, rep.SlowMembers, "5 % of 256 rounds to 13 per run")
	assert.Zero(t, rep.Failed)
	assert.Zero(t, rep.FalseDeaths)
	assert.Zero(t, rep.Wrong)
	assert.Less(t, rep.MsgsPerNode, 600.0, "messages a member")
}

// TestQuietMembersDoNotTickIdly: a take-over costs the group little once
// the certificate is complete. While a new root waited Suspect/2 before it
// bid, every other member was quiet (its certificate complete) with
// nothing to send; its idle steps were timed from its last send, so each
// was due at once and it took one on every tick: 256 members, the root
// crashed, 284,851 events; paced from the last idle step (idleFrom),
// 177,484; with heartbeats, 166,784. The new root no longer waits
// (checkDone), and the group's events are 158,411 with or without
// idleFrom's pacing: the bound now fails if the wait comes back.
func TestQuietMembersDoNotTickIdly(t *testing.T) {
	rep, err := Measure(context.Background(), MeasureConfig{
		Net:  Config{Nodes: 256, Topology: "hypercube", Algorithm: "pfcc", Seed: 1},
		Runs: 1, Crash: 0.004,
	})
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Crashed, "the root")
	assert.Zero(t, rep.Failed)
	assert.Zero(t, rep.FalseDeaths)
	assert.Zero(t, rep.Wrong)
	assert.Less(t, rep.Events, 162_000, "events")
}
