package exchange_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/exchange"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
	"github.com/gossipreduce/gossipreduce/rdb"
)

func build(t *testing.T, n int, seed uint64) ([]gossip.Machine, [][]float64) {
	t.Helper()
	inputs := gossiptest.Inputs(n, 3, seed)
	ms, err := gossiptest.Build(gossiptest.Complete(n), inputs, gossip.Average, seed,
		func(c gossip.Config) (gossip.Machine, error) { return exchange.New(c) })
	require.NoError(t, err)
	return ms, inputs
}

// run drives the network to the end: messages in a random order, every
// machine ticked whenever nothing is in flight (a timeout). It returns
// every machine's final estimate, bit for bit.
func run(t *testing.T, net *gossiptest.Net) [][]uint64 {
	t.Helper()
	return drive(t, net, func(int) {})
}

// drive is run with a fault injected before every delivery d by inject.
func drive(t *testing.T, net *gossiptest.Net, inject func(d int)) [][]uint64 {
	t.Helper()
	net.Start()
	for d := 0; d < 100000 && !allDone(net); d++ {
		inject(d)
		ok, err := net.DeliverOne()
		require.NoError(t, err)
		if !ok {
			for i := range net.Machines {
				net.Tick(gossip.NodeID(i))
			}
		}
	}
	require.True(t, allDone(net), "not every node finished")
	out := make([][]uint64, len(net.Machines))
	for i, m := range net.Machines {
		for _, v := range m.Estimate(nil) {
			out[i] = append(out[i], math.Float64bits(v))
		}
	}
	return out
}

func allDone(net *gossiptest.Net) bool {
	for _, m := range net.Machines {
		if !m.(*exchange.Machine).Done() {
			return false
		}
	}
	return true
}

// reference is recursive doubling's result for the same inputs: the same
// schedule adds the same partials in the same order, so the bits must be
// the same.
func reference(t *testing.T, n int, seed uint64) []uint64 {
	t.Helper()
	return referenceOf(t, n, 3, seed, func(c gossip.Config) (gossip.Machine, error) { return rdb.New(c) })
}

// referenceOf is the result of the fault-free algorithm mk for n inputs of
// k components drawn from seed.
func referenceOf(t *testing.T, n, k int, seed uint64, mk func(gossip.Config) (gossip.Machine, error)) []uint64 {
	t.Helper()
	inputs := gossiptest.Inputs(n, k, seed)
	ms, err := gossiptest.Build(gossiptest.Complete(n), inputs, gossip.Average, seed, mk)
	require.NoError(t, err)
	net := gossiptest.NewNet(ms, seed)
	net.Start()
	for {
		ok, err := net.DeliverOne()
		require.NoError(t, err)
		if !ok {
			break
		}
	}
	var out []uint64
	for _, v := range ms[0].Estimate(nil) {
		out = append(out, math.Float64bits(v))
	}
	return out
}

func exact(t *testing.T, inputs [][]float64) []float64 {
	t.Helper()
	w := make([]float64, len(inputs))
	for i := range w {
		w[i] = 1
	}
	e, err := gossip.Aggregate(inputs, w)
	require.NoError(t, err)
	return e
}

// TestIdenticalAtEveryNode: for every N from 1 to 70 (powers of two and
// the folded ranks between), in a random delivery order, every node ends
// with recursive doubling's bits, within rounding of the exact average.
func TestIdenticalAtEveryNode(t *testing.T) {
	for n := 1; n <= 70; n++ {
		ms, inputs := build(t, n, uint64(n))
		net := gossiptest.NewNet(ms, uint64(n))
		got := run(t, net)
		want := reference(t, n, uint64(n))
		for i := range got {
			require.Equal(t, want, got[i], "N=%d node %d", n, i)
		}
		// 1e-14: log2 N additions of values in [0, 1), a few ulps each.
		assert.LessOrEqual(t, net.MaxError(exact(t, inputs)), 1e-14, "N=%d", n)
		// Fault-free, with a timeout only when nothing is in flight: no
		// message beyond the schedule's two passes of ⌊log2 N⌋ (+1 folded).
		for i, s := range net.Sent {
			assert.LessOrEqual(t, s, 2*bitsLen(n)-1, "N=%d node %d sent %d", n, i, s)
		}
	}
}

func bitsLen(n int) int {
	d := 0
	for 1<<(d+1) <= n {
		d++
	}
	return d + 1
}

// TestLossIsRepaired: with 30 % of the messages lost (resends and answers
// included), every node still ends with the fault-free bits, plain or
// chunked.
func TestLossIsRepaired(t *testing.T) {
	for _, chunked := range []bool{false, true} {
		for _, n := range []int{5, 7, 16, 48, 64} {
			seed := uint64(100 + n)
			want := reference(t, n, seed)
			ms, _ := build(t, n, seed)
			if chunked {
				want = rhdReference(t, n, chunkedK(n), seed)
				ms, _ = buildChunked(t, n, chunkedK(n), seed)
			}
			net := gossiptest.NewNet(ms, seed)
			r := rand.New(rand.NewPCG(seed, 1))
			net.Drop = func(gossip.Message) bool { return r.Float64() < 0.3 }
			got := run(t, net)
			for i := range got {
				require.Equal(t, want, got[i], "chunked %v N=%d node %d (seed %d)", chunked, n, i, seed)
			}
			require.Positive(t, net.Lost, "N=%d: nothing was lost", n)
			resends := 0
			for _, m := range ms {
				resends += m.(*exchange.Machine).Counters().Resends
			}
			assert.Positive(t, resends, "chunked %v N=%d", chunked, n)
		}
	}
}

// TestFlippedMessagesAreNeverAdded: a bit flipped in a message (any word:
// value, weight, either hash word; any bit) is detected, the message
// dropped and asked for again: every node ends with the fault-free bits.
func TestFlippedMessagesAreNeverAdded(t *testing.T) {
	const n, seed = 16, 7
	want := reference(t, n, seed)
	for bit := range 64 {
		ms, _ := build(t, n, seed)
		net := gossiptest.NewNet(ms, seed+uint64(bit))
		r := rand.New(rand.NewPCG(seed, uint64(bit)))
		flips := 0
		got := drive(t, net, func(int) {
			// Flip one word of a message in flight, now and then.
			if p := net.Pending(); len(p) > 0 && r.Float64() < 0.2 {
				m := &p[r.IntN(len(p))]
				w := r.IntN(len(m.Payload))
				m.Payload[w] = math.Float64frombits(math.Float64bits(m.Payload[w]) ^ 1<<bit)
				flips++
			}
		})
		corrupt := 0
		for i, m := range ms {
			require.Equal(t, want, got[i], "bit %d node %d", bit, i)
			corrupt += m.(*exchange.Machine).Counters().Corrupt
		}
		require.Positive(t, flips)
		assert.Positive(t, corrupt, "bit %d: %d flips, none detected", bit, flips)
	}
}

// TestFlippedStateIsRepaired: a bit flipped in a node's partial sums (the
// words an injector reaches) between steps is caught by the state hash
// and rebuilt before it is sent or returned.
func TestFlippedStateIsRepaired(t *testing.T) {
	const n, seed = 13, 3
	want := reference(t, n, seed)
	for bit := 0; bit < 64; bit += 7 {
		ms, _ := build(t, n, seed)
		net := gossiptest.NewNet(ms, seed)
		r := rand.New(rand.NewPCG(seed, uint64(bit)))
		got := drive(t, net, func(d int) {
			if d%5 == 0 {
				m := ms[r.IntN(n)]
				var words []gossip.Word
				for w := range m.Words() {
					words = append(words, w)
				}
				w := words[r.IntN(len(words))]
				*w.Ptr = math.Float64frombits(math.Float64bits(*w.Ptr) ^ 1<<bit)
			}
		})
		repairs := 0
		for i, m := range ms {
			require.Equal(t, want, got[i], "bit %d node %d", bit, i)
			repairs += m.(*exchange.Machine).Counters().Repairs
		}
		assert.Positive(t, repairs, "bit %d", bit)
	}
}

// TestFinishedNodeAnswersFromItsStore: the fold-out to a folded rank is
// lost after its sender finished; the folded rank's ask is answered from
// the stored copy.
func TestFinishedNodeAnswersFromItsStore(t *testing.T) {
	ms, _ := build(t, 3, 1) // ranks 0 and 1 fold: 0 sends to 1, 1 sends back
	net := gossiptest.NewNet(ms, 1)
	dropped := false
	net.Drop = func(m gossip.Message) bool {
		if !dropped && m.From == 1 && m.To == 0 {
			dropped = true
			return true
		}
		return false
	}
	got := run(t, net)
	require.True(t, dropped)
	assert.Equal(t, got[1], got[0])
	assert.Equal(t, 1, ms[1].(*exchange.Machine).Counters().Answers)
	assert.Equal(t, 1, ms[0].(*exchange.Machine).Counters().Resends)
}

// TestIdleAsksThenBacksOff: the second idle step spent waiting asks, the
// next asks wait 4, 8 and 16.
func TestIdleAsksThenBacksOff(t *testing.T) {
	ms, _ := build(t, 2, 1)
	m := ms[0].(*exchange.Machine)
	require.Len(t, m.Tick(nil), 1) // the step's own message
	var asked []int
	for i := 1; i <= 30; i++ {
		if out := m.Idle(nil); len(out) > 0 {
			require.Len(t, out, 1)
			asked = append(asked, i)
		}
	}
	assert.Equal(t, []int{2, 6, 14, 30}, asked)
}

// TestRejectsWhatIsNotInTheSchedule: a partner that is not this node's in
// the step the tag names, a tag with unknown bits, or an empty message
// without an ask is refused with an error and changes nothing.
func TestRejectsWhatIsNotInTheSchedule(t *testing.T) {
	ms, _ := build(t, 4, 1)
	m0 := ms[0].(*exchange.Machine)
	out := m0.Tick(nil)
	require.Len(t, out, 1)
	// Node 1 is 0's partner in step 1; node 2 in step 2.
	msgs, err := ms[1].Step(out[0], nil) // node 1 sends its own step 1, then step 2 to node 3
	require.NoError(t, err)
	require.Len(t, msgs, 2)
	base := msgs[0]
	require.Equal(t, gossip.NodeID(0), base.To)
	for name, edit := range map[string]func(*gossip.Message){
		"wrong step":   func(m *gossip.Message) { m.Tag = 2 },
		"unknown bits": func(m *gossip.Message) { m.Tag |= 1 << 50 },
		"empty no ask": func(m *gossip.Message) { m.Tag |= 1 << 41 },
	} {
		msg := base.Clone()
		edit(&msg)
		before := m0.Estimate(nil)
		out, err := m0.Step(msg, nil)
		assert.ErrorIs(t, err, gossip.ErrForeignMessage, name)
		assert.Empty(t, out, name)
		assert.Equal(t, before, m0.Estimate(nil), name)
	}
}

// crashRun drives an exchange in which node c dies once it has sent after
// messages: what it sent before arrives, nothing reaches it or leaves it
// later. It ticks the live nodes whenever nothing is in flight, up to
// maxTicks times, and reports how many live nodes finished.
func crashRun(t *testing.T, net *gossiptest.Net, c gossip.NodeID, after, maxTicks int) int {
	t.Helper()
	return crashesRun(t, net, map[gossip.NodeID]int{c: after}, maxTicks)
}

// crashesRun is crashRun with several nodes dying, each after its own
// number of sends.
func crashesRun(t *testing.T, net *gossiptest.Net, after map[gossip.NodeID]int, maxTicks int) int {
	t.Helper()
	net.Dead = map[gossip.NodeID]bool{}
	for c, a := range after {
		net.Dead[c] = a == 0
	}
	net.Start()
	for ticks := 0; ticks < maxTicks && !liveDone(net); {
		for c, a := range after {
			if net.Sent[c] >= a {
				net.Dead[c] = true
			}
		}
		ok, err := net.DeliverOne()
		require.NoError(t, err)
		if !ok {
			ticks++
			for i := range net.Machines {
				if !net.Dead[gossip.NodeID(i)] {
					net.Tick(gossip.NodeID(i))
				}
			}
		}
	}
	done := 0
	for i, m := range net.Machines {
		if !net.Dead[gossip.NodeID(i)] && m.(*exchange.Machine).Done() {
			done++
		}
	}
	return done
}

// TestDeadSubcubeResultFromAnyone: of 8 nodes, 2 and 3 die: 2 after its
// steps 1 and 2 (so node 0 has the partial of {2, 3}), 3 after its step 1
// only (so node 1, waiting for that partial, finds nobody in {2, 3} to
// ask). Node 1 asks around for the result, which node 0 has, and every
// live node ends with the fault-free bits.
func TestDeadSubcubeResultFromAnyone(t *testing.T) {
	const n, seed = 8, 17
	want := reference(t, n, seed)
	ms, _ := build(t, n, seed)
	net := gossiptest.NewNet(ms, seed)
	require.Equal(t, n-2, crashesRun(t, net, map[gossip.NodeID]int{2: 2, 3: 1}, 1000))
	for i, m := range ms {
		if i == 2 || i == 3 {
			continue
		}
		var got []uint64
		for _, v := range m.Estimate(nil) {
			got = append(got, math.Float64bits(v))
		}
		require.Equal(t, want, got, "node %d", i)
	}
}

func liveDone(net *gossiptest.Net) bool {
	for i, m := range net.Machines {
		if !net.Dead[gossip.NodeID(i)] && !m.(*exchange.Machine).Done() {
			return false
		}
	}
	return true
}

// TestCrashAfterContributing: a node that dies at any point after its
// first send (every node, every point, N with and without folded ranks)
// leaves every other node that accepted a result with recursive
// doubling's fault-free bits, its own input included: the partials it
// would have sent are asked for from the members of its subcube that hold
// the same bits, and a folded rank whose partner died gets the result
// from any node that has it. The second pass ends (every live node Done)
// unless the node died before it vouched and the hypercube's other nodes
// are no majority of the group (N = 6: 3 of 6); then no node ends, and
// the runtime falls back on the nodes that accepted.
func TestCrashAfterContributing(t *testing.T) {
	for _, n := range []int{4, 6, 8, 13, 16} {
		seed := uint64(300 + n)
		want := reference(t, n, seed)
		core := 1 << (bitsLen(n) - 1)
		for c := range n {
			sends := 0
			for _, s := range rdb.Schedule(c, n) {
				if s.SendTo >= 0 {
					sends++
				}
			}
			firstPass := sends
			if rdb.Rank(c, n) >= 0 {
				sends += bitsLen(n) - 1 // the vouches
			}
			for after := 1; after <= sends; after++ {
				ms, _ := build(t, n, seed)
				net := gossiptest.NewNet(ms, seed+uint64(c*10+after))
				done := crashRun(t, net, gossip.NodeID(c), after, 1000)
				mustEnd := rdb.Rank(c, n) < 0 || core-1 >= n/2+1 || after > firstPass
				if mustEnd {
					require.Equal(t, n-1, done, "N=%d node %d dead after %d sends: live nodes finished", n, c, after)
				} else {
					require.Contains(t, []int{0, n - 1}, done, "N=%d node %d dead after %d sends: some live nodes finished, not all", n, c, after)
				}
				accepted := 0
				for i, m := range ms {
					if i == c || !m.(*exchange.Machine).Accepted() && !m.(*exchange.Machine).Done() {
						continue
					}
					accepted++
					var got []uint64
					for _, v := range m.Estimate(nil) {
						got = append(got, math.Float64bits(v))
					}
					require.Equal(t, want, got, "N=%d node %d dead after %d sends: node %d", n, c, after, i)
				}
				assert.GreaterOrEqual(t, accepted, core-1, "N=%d node %d dead after %d sends: nodes that accepted", n, c, after)
			}
		}
	}
}

// TestCrashBeforeContributingStalls: the input of a node that dies before
// its first send is nowhere to be asked for; no node finishes (the
// runtime turns that into an error), none with a result that leaves it out.
func TestCrashBeforeContributingStalls(t *testing.T) {
	for _, n := range []int{6, 8} {
		for c := range n {
			ms, _ := build(t, n, 9)
			net := gossiptest.NewNet(ms, 9)
			assert.Zero(t, crashRun(t, net, gossip.NodeID(c), 0, 200), "N=%d node %d", n, c)
		}
	}
}

// TestAsksTurnToThePartnersSubcube: node 0 of 4, waiting in step 2 for
// node 2, asks node 2 twice, then alternates with node 3, which holds the
// same partial.
func TestAsksTurnToThePartnersSubcube(t *testing.T) {
	ms, _ := build(t, 4, 1)
	m0 := ms[0].(*exchange.Machine)
	out := m0.Tick(nil) // step 1 to node 1
	require.Len(t, out, 1)
	out, err := ms[1].Step(out[0], nil) // node 1 answers (and moves on to node 3)
	require.NoError(t, err)
	require.Equal(t, gossip.NodeID(0), out[0].To)
	sent, err := m0.Step(out[0], nil) // node 0 moves on to step 2
	require.NoError(t, err)
	require.Len(t, sent, 1)
	require.Equal(t, gossip.NodeID(2), sent[0].To)
	var asked []string
	var toThree gossip.Message
	for range 150 {
		for _, msg := range m0.Idle(nil) {
			what := "step"
			if msg.Tag&(1<<20) != 0 {
				what = "result"
			}
			asked = append(asked, fmt.Sprint(msg.To, " ", what))
			if msg.To == 3 && what == "step" {
				toThree = msg
			}
		}
	}
	require.GreaterOrEqual(t, len(asked), 6)
	assert.Equal(t, []string{"2 step", "2 step", "3 step", "2 result", "2 step", "3 result"}, asked[:6])
	// Node 3 has not reached step 2: it takes node 0's partial (node 0 is
	// in its partner's subcube) but has nothing to answer with yet.
	ans, err := ms[3].Step(toThree, nil)
	require.NoError(t, err)
	for _, msg := range ans {
		assert.NotEqual(t, gossip.NodeID(0), msg.To, "answered before it had the partial")
	}
	// Once it has node 2's step 1 it sends its step 2 to node 1, and
	// answers node 0 with the same bits.
	two := ms[2].Tick(nil)
	require.Len(t, two, 1)
	toOne, err := ms[3].Step(two[0], nil)
	require.NoError(t, err)
	// (and, with node 0's step 2 in hand, its first vouch to node 2)
	require.Len(t, toOne, 2)
	require.Equal(t, gossip.NodeID(1), toOne[0].To)
	ans, err = ms[3].Step(toThree, nil)
	require.NoError(t, err)
	require.Len(t, ans, 1)
	assert.Equal(t, gossip.NodeID(0), ans[0].To)
	assert.Equal(t, toOne[0].Payload[:4], ans[0].Payload[:4], "x…, w as sent to node 1")
	// Node 0 takes it and ends its first pass without node 2.
	_, err = m0.Step(ans[0], nil)
	require.NoError(t, err)
	assert.True(t, m0.Accepted())
	assert.False(t, m0.Done(), "done before anybody vouched")
}

// TestAwaitingNamesThePartnerOfTheStep: a node waits for nobody before
// its first tick, for the partner of each step in turn while it runs, and
// for nobody once it is done or refused.
func TestAwaitingNamesThePartnerOfTheStep(t *testing.T) {
	ms, _ := build(t, 4, 1)
	m0 := ms[0].(*exchange.Machine)
	_, ok := m0.Awaiting()
	assert.False(t, ok, "before the first tick")
	m0.Tick(nil)
	j, ok := m0.Awaiting()
	require.True(t, ok)
	first := j
	// The partner's message of the step moves node 0 to the next partner.
	out := ms[first].Tick(nil)
	require.NotEmpty(t, out)
	for _, msg := range out {
		if msg.To == 0 {
			_, err := m0.Step(msg, nil)
			require.NoError(t, err)
		}
	}
	j, ok = m0.Awaiting()
	require.True(t, ok)
	assert.NotEqual(t, first, j, "the next step's partner")
	m0.Refuse()
	_, ok = m0.Awaiting()
	assert.False(t, ok, "refused")

	ms, _ = build(t, 4, 2)
	run(t, gossiptest.NewNet(ms, 2))
	for _, m := range ms {
		_, ok := m.(*exchange.Machine).Awaiting()
		assert.False(t, ok, "done")
	}
}
