//go:build race

package simnet

// raceEnabled makes the chaos test shorter under the race detector, which
// slows the simulation about tenfold; the campaign without it (and the
// long one, `gossipreduce chaos`) covers the schedules.
const raceEnabled = true
