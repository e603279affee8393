package gossip

import "errors"

// Sentinel errors. Packages wrap them with %w and a prefix of their own, so
// callers test with errors.Is and read a message that says where it came from.
var (
	// ErrInvalidConfig reports a configuration that cannot run: a missing
	// overlay, a node id out of range, a non-positive epsilon, and so on.
	ErrInvalidConfig = errors.New("gossip: invalid configuration")

	// ErrLength reports vectors whose lengths do not match: inputs of
	// different lengths, or a message payload of the wrong size.
	ErrLength = errors.New("gossip: mismatched vector length")

	// ErrNotFinite reports a NaN or an infinity where a finite number is
	// required, for example in the input values.
	ErrNotFinite = errors.New("gossip: value is NaN or infinite")

	// ErrUnknownPeer reports a message from or to a node that is not a
	// neighbour in the overlay (or has been excluded).
	ErrUnknownPeer = errors.New("gossip: unknown peer")

	// ErrForeignMessage reports a message that does not belong to this
	// machine: another epoch, another kind of algorithm, another recipient.
	// Drivers drop such messages and count them.
	ErrForeignMessage = errors.New("gossip: foreign message")

	// ErrUnknownAlgorithm reports an algorithm name no constructor knows.
	ErrUnknownAlgorithm = errors.New("gossip: unknown algorithm")
)
