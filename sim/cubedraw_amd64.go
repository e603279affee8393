package sim

import "golang.org/x/sys/cpu"

// haveCubeAVX512 reports whether cubeTargets may use cubeTargetsAVX512.
var haveCubeAVX512 = cpu.X86.HasAVX512F

// cubeTargetsAVX512 is cubeTargets' vector loop, eight nodes at a time;
// see cubedraw_amd64.s.
//
//go:noescape
func cubeTargetsAVX512(tg *uint32, n int, lane *[8]uint64, ids *[8]uint64, dim uint64)

// cubeTargetsVector runs cubeTargetsAVX512 over the longest prefix of tg
// whose length is a multiple of 8 and returns that length, or 0 when the
// CPU lacks AVX-512.
func cubeTargetsVector(tg []uint32, lo int, rk, dim uint64) int {
	n := len(tg) &^ 7
	if !haveCubeAVX512 || n == 0 {
		return 0
	}
	var lane, ids [8]uint64
	for j := range lane {
		lane[j] = rk + wyInc*uint64(lo+j+1)
		ids[j] = uint64(lo + j)
	}
	cubeTargetsAVX512(&tg[0], n, &lane, &ids, dim)
	return n
}

// haveGaussSeidelAsm reports whether gaussSeidel may use gaussSeidelSSE
// (SSE2 is part of amd64).
const haveGaussSeidelAsm = true

// gaussSeidelSSE is gaussSeidel's loop in assembly with prefetching; see
// cubedraw_amd64.s.
//
//go:noescape
func gaussSeidelSSE(a *xwPair, tg *uint32, n int, all *xwPair, nall int, k int, alpha, lim float64) int

// gaussSeidelFrom runs gaussSeidelSSE from node k and returns the first
// node it left for gaussSeidel.
func gaussSeidelFrom(a []xwPair, tg []uint32, all []xwPair, k int, m runningMaxErr) int {
	n := min(len(a), len(tg))
	if k >= n || len(all) == 0 {
		return k
	}
	return gaussSeidelSSE(&a[0], &tg[0], n, &all[0], len(all), k, m.alpha, m.lim)
}
