package bsim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/broadcast"
	"github.com/gossipreduce/gossipreduce/broadcast/internal/pick"
	"github.com/gossipreduce/gossipreduce/broadcast/internal/plantest"
)

var treeSchemes = []string{"tree:binomial", "tree:kary:2", "tree:kary:4", "tree:lame:2", "tree:lame:3", "tree:optimal"}

// ceilDiv is ⌈a/b⌉ for positive b.
func ceilDiv(a, b int) int { return (a + b - 1) / b }

// Lemma 2 and Corollary 1: without failures synchronized checked
// correction takes L_FF = 4o + L + ⌊L/o⌋o and every process sends
// 3 + ⌊L/o⌋ messages. In our timing model a send is decided when it starts,
// so a process sends at every multiple of o before the second neighbour's
// message has been received at 3o + L: ⌈(3o+L)/o⌉ = 3 + ⌈L/o⌉ messages,
// the last arriving and received L + 2o after it started. That is the
// paper's value whenever o divides L, as in all its experiments.
func TestLemma2Corollary1(t *testing.T) {
	ctx := context.Background()
	for _, m := range []broadcast.LogP{{L: 2, O: 1}, {L: 1, O: 1}, {L: 0, O: 1}, {L: 5, O: 1}, {L: 4, O: 2}, {L: 6, O: 3}, {L: 1, O: 2}, {L: 3, O: 2}} {
		msgs := 3 + ceilDiv(m.L, m.O)
		lff := int64(4*m.O + m.L + ceilDiv(m.L, m.O)*m.O)
		if m.L%m.O == 0 {
			// The paper's formulas, verbatim.
			require.Equal(t, 3+m.L/m.O, msgs)
			require.Equal(t, int64(4*m.O+m.L+(m.L/m.O)*m.O), lff)
		}
		for _, scheme := range treeSchemes {
			for _, n := range []int{16, 100, 1000} {
				p := plantest.MustPlan(t, scheme, "checked", n, m)
				for _, engine := range []string{"machines", "fast"} {
					var r Result
					var err error
					if engine == "fast" {
						sim, err2 := NewSimulator(p)
						require.NoError(t, err2)
						r, err = sim.Run(ctx, nil, 1, false)
					} else {
						if n > 100 {
							continue
						}
						r, err = SimulateMachines(ctx, p, Failures{}, 1, false)
					}
					require.NoError(t, err)
					name := fmt.Sprintf("%s P=%d %+v %s", scheme, n, m, engine)
					assert.Equal(t, lff, r.CorrectionLatency, name)
					assert.Equal(t, int64(msgs*n), r.CorrectionMsgs, name)
					assert.Equal(t, n, r.Participants, name)
					assert.Equal(t, 0, r.GMax, name)
					assert.Equal(t, 0, r.Uncolored, name)
					// Without failures the tree colors everyone by its
					// deadline, where correction starts.
					assert.Equal(t, r.CorrectionStart, r.ColoringLatency, name)
					assert.Equal(t, p.Tree().Deadline(m), r.CorrectionStart, name)
				}
			}
		}
	}
}

// Lemma 3: with failures, L_FF + g_max·o ≤ L_SCC ≤ L_FF + (2g_max+1)·o.
// Here over 1600 fast-engine runs at P = 1024 with 0.1 % … 10 % failed; the
// 10⁴-run check at 64K is in the experiments (TestExperimentLemma3).
func TestLemma3(t *testing.T) {
	ctx := context.Background()
	runs := 100
	if testing.Short() {
		runs = 25
	}
	for _, m := range []broadcast.LogP{{L: 2, O: 1}, {L: 4, O: 2}} {
		lff := int64(4*m.O + m.L + ceilDiv(m.L, m.O)*m.O)
		o := int64(m.O)
		for _, scheme := range []string{"tree:binomial", "tree:kary:4", "tree:lame:2", "tree:optimal"} {
			p := plantest.MustPlan(t, scheme, "checked", 1024, m)
			for _, faults := range []int{1, 10, 41, 102} {
				s, err := Campaign{Plan: p, Faults: faults, Runs: runs, Seed: 11, Keep: true, Workers: 1}.Run(ctx)
				require.NoError(t, err)
				for _, r := range s.Results {
					g := int64(r.GMax)
					assert.LessOrEqual(t, lff+g*o, r.CorrectionLatency, "%s %+v seed %d", scheme, m, r.Seed)
					assert.LessOrEqual(t, r.CorrectionLatency, lff+(2*g+1)*o, "%s %+v seed %d", scheme, m, r.Seed)
					assert.Zero(t, r.Uncolored)
				}
			}
		}
	}
}

// Checked correction colors every live process whatever failed before
// the start (corrected gossip, Claim 3), after any tree, in order or
// interleaved, synchronized or overlapped, and after gossip.
func TestCheckedColorsEveryone(t *testing.T) {
	ctx := context.Background()
	for _, scheme := range append(treeSchemes, "gossip") {
		for _, corr := range []string{"checked", "checked-overlapped"} {
			if scheme == "gossip" && corr == "checked-overlapped" {
				continue
			}
			for _, order := range []broadcast.Order{broadcast.Interleaved, broadcast.InOrder} {
				if scheme == "gossip" && order == broadcast.InOrder {
					continue
				}
				s, err := broadcast.ParseScheme(scheme)
				require.NoError(t, err)
				s.Tree.Order = order
				c, err := broadcast.ParseCorrection(corr)
				require.NoError(t, err)
				p, err := broadcast.NewPlan(broadcast.Spec{Nodes: 500, Scheme: s, Correction: c, Model: broadcast.LogP{L: 2, O: 1}})
				require.NoError(t, err)
				for _, faults := range []int{5, 50, 150} {
					sum, err := Campaign{Plan: p, Faults: faults, Runs: 20, Seed: 5}.Run(ctx)
					require.NoError(t, err)
					assert.Zero(t, sum.UncoloredRuns, "%s %s %s %d failed", scheme, corr, order, faults)
				}
			}
		}
	}
}

// Opportunistic correction after a k-ary tree with d ≥ k colors everyone
// when fewer than k processes fail (corrected trees 3.2.1 and 4.2), even
// when they are the root's children; with all k of the root's children
// failed it cannot.
func TestOpportunisticKAryGuarantee(t *testing.T) {
	ctx := context.Background()
	for k := 2; k <= 5; k++ {
		n := 300
		for _, corr := range []string{"opportunistic", "optimized", "opportunistic-synchronized", "optimized-synchronized"} {
			p := plantest.MustPlan(t, fmt.Sprintf("tree:kary:%d", k), fmt.Sprintf("%s:%d", corr, k), n, broadcast.LogP{L: 2, O: 1})
			sim, err := NewSimulator(p)
			require.NoError(t, err)
			dead := make([]bool, n)
			for i := 1; i < k; i++ { // k-1 of the root's children
				dead[i] = true
			}
			r, err := sim.Run(ctx, dead, 1, false)
			require.NoError(t, err)
			assert.Zero(t, r.Uncolored, "k=%d %s, root's children failed", k, corr)
			src := rand.NewPCG(uint64(k), 3)
			for trial := 0; trial < 200; trial++ {
				d, err := drawDead(src, n, k-1, nil)
				require.NoError(t, err)
				r, err := sim.Run(ctx, d, 1, false)
				require.NoError(t, err)
				require.Zero(t, r.Uncolored, "k=%d %s trial %d", k, corr, trial)
			}
			dead[k] = true // all k children of the root
			r, err = sim.Run(ctx, dead, 1, false)
			require.NoError(t, err)
			if p.Spec().Correction.Synchronized {
				assert.Positive(t, r.Uncolored, "k=%d %s, all root's children failed", k, corr)
			} else {
				// Overlapped, a process colored early by correction still
				// sends its tree messages and corrects in turn (section
				// 3.3), so the root's correction colors the ring around
				// it like a wave.
				assert.Zero(t, r.Uncolored, "k=%d %s, all root's children failed", k, corr)
				assert.Equal(t, n-1-k, r.Participants-1, "k=%d %s: every live process but the root was colored by correction and corrected", k, corr)
			}
		}
	}
}

// Optimized opportunistic correction colors exactly the processes plain
// opportunistic correction colors (it only skips what others cover), in
// both modes, with d per direction or split between them, over many
// failure sets.
func TestOptimizedColorsWhatPlainColors(t *testing.T) {
	ctx := context.Background()
	src := rand.NewPCG(8, 8)
	for _, mode := range []string{"", "-synchronized"} {
		for _, scheme := range []string{"tree:binomial", "tree:lame:2", "gossip"} {
			for _, d := range []string{"1", "2", "4", "4/2", "5/2"} {
				plain := plantest.MustPlan(t, scheme, fmt.Sprintf("opportunistic%s:%s", mode, d), 600, broadcast.LogP{L: 2, O: 1})
				opt := plantest.MustPlan(t, scheme, fmt.Sprintf("optimized%s:%s", mode, d), 600, broadcast.LogP{L: 2, O: 1})
				a, err := NewSimulator(plain)
				require.NoError(t, err)
				b, err := NewSimulator(opt)
				require.NoError(t, err)
				for trial := 0; trial < 30; trial++ {
					fails, err := DrawFailures(src, 600, int(pick.Uniform(src, 120)))
					require.NoError(t, err)
					ra, err := a.Run(ctx, fails.Dead, 5, true)
					require.NoError(t, err)
					rb, err := b.Run(ctx, fails.Dead, 5, true)
					require.NoError(t, err)
					for v := range ra.ColorAt {
						require.Equal(t, ra.ColorAt[v] >= 0, rb.ColorAt[v] >= 0, "%s%s d=%s process %d", scheme, mode, d, v)
					}
					require.LessOrEqual(t, rb.CorrectionMsgs, ra.CorrectionMsgs)
				}
			}
		}
	}
}

// Optimized opportunistic correction sends at most as many messages as
// the plain one (corrected trees 4.1) and colors the same processes here.
func TestOptimizedSendsFewer(t *testing.T) {
	ctx := context.Background()
	for _, scheme := range treeSchemes {
		plain := plantest.MustPlan(t, scheme, "opportunistic:4", 2000, broadcast.LogP{L: 2, O: 1})
		opt := plantest.MustPlan(t, scheme, "optimized:4", 2000, broadcast.LogP{L: 2, O: 1})
		a, err := Campaign{Plan: plain, Faults: 20, Runs: 10, Seed: 9, Keep: true}.Run(ctx)
		require.NoError(t, err)
		b, err := Campaign{Plan: opt, Faults: 20, Runs: 10, Seed: 9, Keep: true}.Run(ctx)
		require.NoError(t, err)
		for i := range a.Results { // the same seeds fail the same processes
			assert.LessOrEqual(t, b.Results[i].CorrectionMsgs, a.Results[i].CorrectionMsgs, scheme)
		}
		assert.Less(t, b.CorrectionMsgs.Mean, a.CorrectionMsgs.Mean, scheme)
		assert.Zero(t, a.UncoloredRuns+b.UncoloredRuns, scheme)
		// Without failures plain opportunistic sends exactly 2d per
		// process.
		f, err := Campaign{Plan: plain, Runs: 1, Seed: 1}.Run(ctx)
		require.NoError(t, err)
		assert.Equal(t, 8.0, f.CorrectionMsgs.Max, scheme)
	}
}

// The binomial graph has node connectivity δ, so flooding reaches every
// live process with any δ-1 failures (revoke paper 3.2): exhaustively for
// N = 12 and 16, at random for larger N.
func TestBMGDeltaMinusOne(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{12, 16} {
		p := plantest.MustPlan(t, "bmg", "none", n, broadcast.LogP{L: 2, O: 1})
		delta := p.BMGDegree()
		require.Positive(t, delta)
		count := 0
		subsets(n-1, delta-1, func(pick []int) {
			dead := make([]bool, n)
			for _, i := range pick {
				dead[i+1] = true
			}
			r, err := SimulateMachines(ctx, p, Failures{Dead: dead}, 1, false)
			require.NoError(t, err)
			require.Zero(t, r.Uncolored, "N=%d dead %v", n, pick)
			require.Equal(t, int64(delta*(n-len(pick))), r.Msgs, "every live process forwards to all δ neighbours once")
			count++
		})
		assert.Equal(t, binomial(n-1, delta-1), count)
	}
	for _, n := range []int{100, 1000} {
		p := plantest.MustPlan(t, "bmg", "none", n, broadcast.LogP{L: 2, O: 1})
		delta := p.BMGDegree()
		s, err := Campaign{Plan: p, Faults: delta - 1, Runs: 30, Seed: 2}.Run(ctx)
		require.NoError(t, err)
		assert.Zero(t, s.UncoloredRuns, "N=%d δ=%d", n, delta)
	}
	// δ is the number of distinct v ± 2^k: 2⌈log2 N⌉ less the coincidences.
	for n, want := range map[int]int{2: 1, 3: 2, 4: 3, 12: 6, 16: 7, 100: 14, 1000: 20, 1024: 19} {
		assert.Equal(t, want, plantest.MustPlan(t, "bmg", "none", n, broadcast.LogP{L: 2, O: 1}).BMGDegree(), "N=%d", n)
	}
}

func subsets(n, k int, f func([]int)) {
	pick := make([]int, 0, k)
	var rec func(start int)
	rec = func(start int) {
		if len(pick) == k {
			f(pick)
			return
		}
		for i := start; i <= n-(k-len(pick)); i++ {
			pick = append(pick, i)
			rec(i + 1)
			pick = pick[:len(pick)-1]
		}
	}
	rec(0)
}

func binomial(n, k int) int {
	r := 1
	for i := 1; i <= k; i++ {
		r = r * (n - k + i) / i
	}
	return r
}

// Fail-proof correction (FCG) colors and delivers to every live process
// with F failures during the run, after gossip and after a tree, and with
// many g-nodes never needs SOS (Claim 5 needs F²+F+1).
func TestFailProofOnlineFailures(t *testing.T) {
	ctx := context.Background()
	runs := 40
	if testing.Short() {
		runs = 10
	}
	for _, scheme := range []string{"gossip", "tree:binomial", "tree:lame:2"} {
		for _, f := range []int{1, 2} {
			p := plantest.MustPlan(t, scheme, fmt.Sprintf("failproof:%d", f), 128, broadcast.LogP{L: 2, O: 1})
			s, err := Campaign{Plan: p, Faults: 6, OnlineFaults: f, Runs: runs, Seed: 21}.Run(ctx)
			require.NoError(t, err)
			assert.Equal(t, EngineMachines, s.Engine)
			assert.Zero(t, s.UncoloredRuns, "%s f=%d", scheme, f)
			assert.Zero(t, s.UndeliveredRuns, "%s f=%d", scheme, f)
			assert.Zero(t, s.SOSRuns, "%s f=%d", scheme, f)
		}
	}
}

// With fewer than F+1 g-nodes fail-proof correction must fall back to SOS,
// and SOS colors everyone.
func TestFailProofSOS(t *testing.T) {
	ctx := context.Background()
	p := plantest.MustPlan(t, "tree:kary:2", "failproof:3", 12, broadcast.LogP{L: 1, O: 1})
	dead := make([]bool, 12)
	dead[1], dead[2] = true, true // only the root is a g-node
	r, err := SimulateMachines(ctx, p, Failures{Dead: dead}, 1, false)
	require.NoError(t, err)
	assert.True(t, r.SOS)
	assert.Zero(t, r.Uncolored)
	assert.Zero(t, r.Undelivered)
}

// An acknowledged tree sends two messages per non-root process without
// failures, colors as fast as the bare tree, and with failures still
// reaches every live process by adopting the orphans of silent children,
// at the price of the timeout.
func TestAckTree(t *testing.T) {
	ctx := context.Background()
	for _, scheme := range []string{"ack:binomial", "ack:kary:3", "ack:lame:2", "ack:optimal"} {
		p := plantest.MustPlan(t, scheme, "none", 200, broadcast.LogP{L: 2, O: 1})
		r, err := SimulateMachines(ctx, p, Failures{}, 1, false)
		require.NoError(t, err)
		assert.Equal(t, int64(2*199), r.Msgs, scheme)
		assert.Equal(t, p.Tree().Deadline(broadcast.LogP{L: 2, O: 1}), r.ColoringLatency, scheme)
		assert.Equal(t, p.Tree().AckLatency(broadcast.LogP{L: 2, O: 1}), r.Quiescence, "%s: quiescence is when the root has every acknowledgment", scheme)
		s, err := Campaign{Plan: p, Faults: 10, Runs: 10, Seed: 4}.Run(ctx)
		require.NoError(t, err)
		assert.Zero(t, s.UncoloredRuns, scheme)
		assert.Greater(t, s.Coloring.Max, float64(p.Spec().AckTimeout), "%s: some orphan waits for a timeout", scheme)
	}
}

// A machine driven with local clocks that disagree with broadcast time
// (ClockFromMessages) behaves exactly as with the shared clock, as long as
// no process queues the message that colors it: here synchronized
// correction after a tree, where every process receives its one tree
// message before the correction starts.
func TestClockFromMessages(t *testing.T) {
	ctx := context.Background()
	for _, scheme := range []string{"tree:binomial", "tree:lame:2", "tree:kary:3"} {
		p := plantest.MustPlan(t, scheme, "checked", 300, broadcast.LogP{L: 2, O: 1})
		src := rand.NewPCG(3, 3)
		for trial := 0; trial < 5; trial++ {
			fails, err := DrawFailures(src, 300, 15)
			require.NoError(t, err)
			want, err := SimulateMachines(ctx, p, fails, 1, true)
			require.NoError(t, err)
			skew := make([]int64, 300)
			for v := range skew {
				skew[v] = int64(pick.Uniform(src, 1000)) - 500
			}
			got, err := simulateSkewed(ctx, p, fails, skew)
			require.NoError(t, err)
			assert.Equal(t, want, got, scheme)
		}
	}
}

// simulateSkewed is SimulateMachines with every process reading its own
// clock, broadcast time plus skew[v], and setting its broadcast clock from
// the messages (ClockFromMessages).
func simulateSkewed(ctx context.Context, plan *broadcast.Plan, fails Failures, skew []int64) (Result, error) {
	return simulate(ctx, plan, fails, 1, true, skew)
}
