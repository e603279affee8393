package transport

import "time"

// WithSessionTiming returns o with the session layer's intervals replaced:
// a probe to a still unknown peer at most every probeEvery (0: at every
// Send), an answer to a peer at most every answerEvery.
func WithSessionTiming(o Options, probeEvery, answerEvery time.Duration) Options {
	o.timing = &sessionTiming{probeEvery: probeEvery, answerEvery: answerEvery}
	return o
}

// IncarnationOf returns the incarnation of an endpoint of this package.
func IncarnationOf(ep Endpoint) uint64 { return ep.(*endpoint).inc }
