package gossip

import (
	"errors"
	"fmt"
)

// Error kinds. They are not messages of their own: the package that finds
// the problem wraps one with %w behind its own name and the details, as in
// "aggregate: invalid configuration: no group name", so callers test with
// errors.Is and read, once, where the error came from. (The rule for every
// package of the module: the package that detects a problem prefixes the
// message with its name; a package that passes on another one's error
// returns it as it is or adds context, never a second package name.)
var (
	// ErrInvalidConfig reports a configuration that cannot run: a missing
	// overlay, a node id out of range, a non-positive epsilon, and so on.
	ErrInvalidConfig = errors.New("invalid configuration")

	// ErrLength reports vectors whose lengths do not match: inputs of
	// different lengths, or a message payload of the wrong size.
	ErrLength = errors.New("mismatched vector length")

	// ErrNotFinite reports a NaN or an infinity where a finite number is
	// required, for example in the input values.
	ErrNotFinite = errors.New("value is NaN or infinite")

	// ErrUnknownPeer reports a message from or to a node that is not a
	// neighbour in the overlay (or has been excluded).
	ErrUnknownPeer = errors.New("unknown peer")

	// ErrForeignMessage reports a message that does not belong to this
	// machine: another epoch, another kind of algorithm, another recipient.
	// Drivers drop such messages and count them.
	ErrForeignMessage = errors.New("foreign message")

	// ErrUnknownAlgorithm reports an algorithm name no constructor knows.
	ErrUnknownAlgorithm = errors.New("unknown algorithm")
)

// CheckHeader reports whether msg is of the given kind and epoch and
// addressed to node to, with an error wrapping ErrForeignMessage that names
// the first field that differs (the caller adds its package's name).
func CheckHeader(msg Message, kind Kind, epoch uint64, to NodeID) error {
	switch {
	case msg.Kind != kind:
		return fmt.Errorf("%w: kind %s", ErrForeignMessage, msg.Kind)
	case msg.Epoch != epoch:
		return fmt.Errorf("%w: epoch %d, want %d", ErrForeignMessage, msg.Epoch, epoch)
	case msg.To != to:
		return fmt.Errorf("%w: addressed to %d, this is %d", ErrForeignMessage, msg.To, to)
	}
	return nil
}
