package transport

import "time"

// WithSessionTiming returns o with the session layer's intervals replaced:
// a probe to a still unknown peer at most every probeEvery (0: at every
// Send), an answer to a peer at most every answerEvery.
func WithSessionTiming(o Options, probeEvery, answerEvery time.Duration) Options {
	o.timing = &sessionTiming{probeEvery: probeEvery, answerEvery: answerEvery}
	return o
}

// WithClaimWait returns o with the time NATS Open waits for an answer to
// its claim fixed at d (d > 0) instead of derived from the round trip.
func WithClaimWait(o Options, d time.Duration) Options {
	t := sessionTiming{probeEvery: defaultProbeEvery, answerEvery: defaultAnswerEvery}
	if o.timing != nil {
		t = *o.timing
	}
	t.claimWait = d
	o.timing = &t
	return o
}

// IncarnationOf returns the incarnation of an endpoint of this package.
func IncarnationOf(ep Endpoint) uint64 { return ep.(*endpoint).inc }

// RetryFlush is retryFlush, for tests of a flush the server's departure
// interrupts (which a real server cannot be made to do on cue).
var RetryFlush = retryFlush
