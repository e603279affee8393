package gossip

import (
	"fmt"
	"strconv"
)

// NodeID names a participant. Nodes of a group of N are numbered 0 … N-1.
type NodeID uint32

// String returns the decimal id.
func (id NodeID) String() string { return strconv.FormatUint(uint64(id), 10) }

// Kind says what a message carries. Each algorithm uses its own kinds, so a
// machine recognises (and rejects) messages meant for another algorithm.
type Kind uint8

// Message kinds. The numbering is part of the wire format; append only.
const (
	KindInvalid     Kind = iota // the zero Kind; never sent
	KindPush                    // Push-Sum mass: payload x…, w
	KindFlow                    // Push-Flow flow: payload f(x)…, f(w)
	KindCheckedFlow             // PFLC/PFCC flow: payload f(x)…, f(w), f(c)
	KindCancelFlow              // Push-Cancel-Flow: payload f0…, f1…; Tag packs c and r
	KindRDB                     // recursive doubling partial: payload x…, w; Tag is the step
	KindBroadcast               // result broadcast (package broadcast); Tag is scheme specific
	KindControl                 // runtime control traffic (termination, membership)
	KindCentral                 // central gather-and-publish baseline: payload x…, w; Tag 0 = value, 1 = result
	KindExchange                // dimension exchange (package exchange): payload x…, w, h, h (chunked: a range of x…, w, then h, h); Tag is the step, flags and (chunked) the vector length
	KindRing                    // ring all-reduce (package ring): payload one slice of x…, w; Tag is the step and the vector's length
	KindRHD                     // recursive halving and doubling (package rhd): payload a range of x…, w; Tag is the step and the vector's length
	kindLimit
)

var kindNames = [...]string{
	KindInvalid:     "invalid",
	KindPush:        "push",
	KindFlow:        "flow",
	KindCheckedFlow: "checked-flow",
	KindCancelFlow:  "cancel-flow",
	KindRDB:         "rdb",
	KindBroadcast:   "broadcast",
	KindControl:     "control",
	KindCentral:     "central",
	KindExchange:    "exchange",
	KindRing:        "ring",
	KindRHD:         "rhd",
}

// String returns the kind's name, or "kind(N)" for an unknown number.
func (k Kind) String() string {
	if k < kindLimit {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Valid reports whether k is a kind this version knows.
func (k Kind) Valid() bool { return k > KindInvalid && k < kindLimit }

// Message is what one node sends another. The payload layout depends on the
// kind (see the Kind constants). A driver hands a Message to exactly one
// [Machine.Step]; Step does not keep a reference to Payload after it returns,
// so a driver may reuse the slice.
type Message struct {
	From, To NodeID
	Kind     Kind
	Epoch    uint64    // which all-reduce of a group the message belongs to
	Tag      uint64    // algorithm-specific integer metadata (RDB step, PCF c and r)
	Payload  []float64 // value components, weight, checksum, …
	// Attach is opaque data a driver piggybacks on the message (the live
	// runtime's convergence certificate). Machines never read or set it.
	Attach []byte
}

// String formats the message for logs and test failures.
func (m Message) String() string {
	return fmt.Sprintf("%s %d->%d epoch=%d tag=%d %v", m.Kind, m.From, m.To, m.Epoch, m.Tag, m.Payload)
}

// Clone returns a copy of m that shares no memory with it.
func (m Message) Clone() Message {
	m.Payload = append([]float64(nil), m.Payload...)
	if m.Attach != nil {
		m.Attach = append([]byte(nil), m.Attach...)
	}
	return m
}
