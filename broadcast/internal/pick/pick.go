// Package pick draws the random numbers of package broadcast and its
// simulators (broadcast/bsim). Both must draw exactly alike: the fast
// engine reproduces a machine's gossip targets from the same source, and a
// campaign's runs are replayable from their seeds, so the method is fixed
// here once rather than left to math/rand/v2, whose Uint64N takes a
// different path for powers of two.
package pick

import (
	"math/bits"
	"math/rand/v2"
)

// Uniform returns a uniformly distributed integer in [0, n), n > 0, from
// src by Lemire's multiply-and-reject method.
func Uniform(src rand.Source, n uint64) uint64 {
	hi, lo := bits.Mul64(src.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(src.Uint64(), n)
		}
	}
	return hi
}

// Other returns a process of 0 … n-1 other than self, uniformly, from one
// Uniform draw: the next target of a gossiping process.
func Other(src rand.Source, n, self int32) int32 {
	to := int32(Uniform(src, uint64(n-1)))
	if to >= self {
		to++
	}
	return to
}
