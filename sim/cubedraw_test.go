package sim

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCubeTargetsMatchDraws(t *testing.T) {
	// The vector loop (where the CPU has it) and the Go loop must draw the
	// same targets as syncDraw and cubeBit, for every length (tails of 0
	// to 7 nodes), offset, dimension and key.
	const seed = 31
	t.Logf("seed %d, vector loop: %v", seed, haveCubeAVX512)
	rng := rand.New(rand.NewPCG(seed, 0))
	for range 200 {
		dim := uint64(1 + rng.IntN(31))
		n := rng.IntN(300)
		lo := rng.IntN(1<<min(dim, 20) + 1)
		rk := rng.Uint64()
		tg := make([]uint32, n)
		cubeTargets(tg, lo, rk, dim)
		for k := range tg {
			i := lo + k
			require.Equal(t, uint32(i^cubeBit(syncDraw(rk, i), dim)), tg[k], "dim %d lo %d k %d key %#x", dim, lo, k, rk)
		}
	}
	// Keys near the wrap of 2^64, where s = k + wyInc·(i+1) overflows.
	tg := make([]uint32, 64)
	cubeTargets(tg, 1<<30, ^uint64(0)-5, 31)
	for k := range tg {
		i := 1<<30 + k
		require.Equal(t, uint32(i^cubeBit(syncDraw(^uint64(0)-5, i), 31)), tg[k], "k %d", k)
	}
}

func TestGaussSeidelAsm(t *testing.T) {
	// gaussSeidel with its assembly loop against the same loop in plain
	// Go, on random pairs, targets and screens: the same bits in every
	// pair, the same running maximum. Lim values: -Inf (nothing clears the
	// screen, Go does every node), 0 (almost nothing), a middling one and
	// +Inf·0 = NaN-prone huge ones.
	const seed = 77
	t.Logf("seed %d, assembly: %v", seed, haveGaussSeidelAsm)
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, errAbs := range []float64{-1, 0, 1e-3, 0.3, 1e300} {
		for _, n := range []int{0, 1, 7, 64, 65, 1000} {
			all := make([]xwPair, n+5)
			for i := range all {
				all[i] = xwPair{rng.Float64(), 0.5 + rng.Float64()}
			}
			lo := rng.IntN(6)
			tg := make([]uint32, n)
			for k := range tg {
				tg[k] = uint32(rng.IntN(len(all)))
			}
			m := newRunningMaxErr(0.5)
			if errAbs >= 0 {
				m = m.add(errAbs)
			}
			want := append([]xwPair(nil), all...)
			wm := gaussSeidelGo(want[lo:lo+n], tg, want, m)
			gm := gaussSeidel(all[lo:lo+n], tg, all, m)
			require.Equal(t, -1, syncFirstDifference(want, all), "err %g n %d", errAbs, n)
			require.Equal(t, wm, gm, "err %g n %d", errAbs, n)
		}
	}
	if !haveGaussSeidelAsm {
		return
	}
	// The assembly does the nodes the screen clears and stops at one it
	// does not, or at a target out of range.
	fresh := func() []xwPair { return []xwPair{{1, 1}, {1, 1}, {1, 1}, {3, 1}, {1, 1}} }
	tg := []uint32{1, 0, 2, 2, 4}
	m := newRunningMaxErr(1).add(0.1) // clears estimates within about 0.1 of 1
	all := fresh()
	assert.Equal(t, 3, gaussSeidelFrom(all, tg, all, 0, m), "node 3's estimate 3 does not clear")
	assert.Equal(t, xwPair{3, 1}, all[3], "and is left untouched")
	all = fresh()
	assert.Equal(t, 4, gaussSeidelFrom(all, []uint32{0, 0, 0, 0, 9}, all, 4, m), "target 9 is out of range")
	all = fresh()
	assert.Equal(t, 0, gaussSeidelFrom(all, tg, all, 0, newRunningMaxErr(1)), "nothing clears before a first maximum")
}

// BenchmarkSequentialSweep times rounds of Algorithm 7 (Sequential mode) on
// a 2^20-node hypercube, round 1, 2, … from the inputs of seed 1, its two
// halves apart and together, with the assembly (asm) and in plain Go (go):
// drawing the neighbour choices (draw), the node-by-node loop (loop, on
// choices drawn with the timer stopped), and both (sweep). ns/node is per
// node and round. The first rounds cost the plain Go loop more than the
// average over a whole run (in which it takes about 6).
func BenchmarkSequentialSweep(b *testing.B) {
	const d = 20
	for _, c := range []struct {
		name       string
		draw, loop bool
		asm        bool
	}{
		{"draw/asm", true, false, true}, {"draw/go", true, false, false},
		{"loop/asm", false, true, true}, {"loop/go", false, true, false},
		{"sweep/asm", true, true, true}, {"sweep/go", true, true, false},
	} {
		b.Run(c.name, func(b *testing.B) {
			if c.asm && c.draw && !haveCubeAVX512 {
				b.Skip("no AVX-512: the asm draw is the go one")
			}
			s, err := newSyncRun(SyncConfig{Overlay: syncCube(d), Epsilon: 1e-13, Seed: 1, Sequential: true})
			require.NoError(b, err)
			s.init()
			tgAll := make([]uint32, s.n)
			r := 0
			for b.Loop() {
				r++
				rk := syncStreamKey(s.base, r)
				if !c.draw {
					b.StopTimer()
					cubeTargets(tgAll, 0, rk, d)
					b.StartTimer()
				}
				m := newRunningMaxErr(s.alpha)
				for ch := range s.chunkLo[1] {
					lo, hi := s.chunk(ch)
					tg := tgAll[lo:hi]
					switch {
					case c.draw && c.asm:
						cubeTargets(tg, lo, rk, d)
					case c.draw:
						cubeTargetsGo(tg, lo, rk, d)
					}
					switch {
					case c.loop && c.asm:
						m = gaussSeidel(s.cur[lo:hi], tg, s.cur, m)
					case c.loop:
						m = gaussSeidelGo(s.cur[lo:hi], tg, s.cur, m)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(s.n), "ns/node")
		})
	}
}

// gaussSeidelGo is gaussSeidel without its assembly: the loop as it was.
func gaussSeidelGo(a []xwPair, tg []uint32, all []xwPair, m runningMaxErr) runningMaxErr {
	for k, t := range tg {
		hx, hw := a[k][0]*0.5, a[k][1]*0.5
		a[k] = xwPair{hx, hw}
		all[t][0] += hx
		all[t][1] += hw
		if p := (xwPair{hx, hw}); !m.below(p) {
			m = m.add(m.err(p))
		}
	}
	return m
}

// cubeTargetsGo is cubeTargets without its assembly.
func cubeTargetsGo(tg []uint32, lo int, rk, dim uint64) {
	for k := range tg {
		tg[k] = uint32((lo + k) ^ cubeBit(syncDraw(rk, lo+k), dim))
	}
}
