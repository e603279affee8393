package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/gossipreduce/gossipreduce/transport"
)

// dropCounts are the messages a transport dropped on arrival, by reason
// (field names are a contract of the node and run JSON, which embed them).
type dropCounts struct {
	Forged    uint64 `json:"forged"`    // failed authentication under the group key
	Replayed  uint64 `json:"replayed"`  // bound to another incarnation, or a duplicate
	Malformed uint64 `json:"malformed"` // failed to decode
	Foreign   uint64 `json:"foreign"`   // another wire version, configuration or addressee
	Overflow  uint64 `json:"overflow"`  // arrived at a full receive buffer
	// Incomplete are fragmented messages given up before all their
	// fragments arrived (a fragment lost, or the reassembly bound hit).
	Incomplete uint64 `json:"incomplete"`
}

func dropsOf(s transport.Stats) dropCounts {
	return dropCounts{Forged: s.Forged, Replayed: s.Replayed, Malformed: s.Malformed, Foreign: s.Foreign, Overflow: s.Overflow, Incomplete: s.Incomplete}
}

func (d dropCounts) any() bool { return d != dropCounts{} }

func (d dropCounts) String() string {
	return fmt.Sprintf("%d forged, %d replayed, %d malformed, %d foreign, %d overflow, %d incomplete", d.Forged, d.Replayed, d.Malformed, d.Foreign, d.Overflow, d.Incomplete)
}

// warnings are the cautions of one verb: each is printed on stderr when it
// is found and repeated in the verb's JSON.
type warnings struct {
	verb string
	w    io.Writer
	list []string
}

func newWarnings(verb string, out *stdio) *warnings {
	return &warnings{verb: verb, w: out.Stderr, list: []string{}}
}

func (ws *warnings) add(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	ws.list = append(ws.list, msg)
	fmt.Fprintf(ws.w, "gossipreduce %s: warning: %s\n", ws.verb, msg)
}

// notFaultTolerant names the algorithm called name if a lost or
// duplicated message changes its result without an error: Push-Sum
// ("ps", "ps-iter", …) and Push-Cancel-Flow ("pcf"; gossipreduce chaos
// --algo pcf --scenario loss and dup: 22 and 25 violations in 200
// operations, 2026-11-24).
func notFaultTolerant(name string) (string, bool) {
	switch {
	case name == "ps" || strings.HasPrefix(name, "ps-"):
		return "Push-Sum", true
	case name == "pcf":
		return "Push-Cancel-Flow", true
	}
	return "", false
}

// warnPushSum warns that Push-Sum or Push-Cancel-Flow does not survive the
// faults it is run with (faults says which; empty for the node verb, which
// injects none but runs in a real network).
func (ws *warnings) warnPushSum(name string, faults []string) {
	label, ok := notFaultTolerant(name)
	if !ok {
		return
	}
	with := ""
	if len(faults) > 0 {
		with = " (requested: " + strings.Join(faults, ", ") + ")"
	}
	ws.add("%s (%s) is not fault-tolerant%s: a lost, duplicated or corrupted message or a crashed member changes the result, without an error; use the default, exchange, or pfcc", label, name, with)
}

// warnNoKey warns that a group on an external NATS server has no group key
// (subjects is the pattern of the group's subjects). The embedded server of
// run and bench lives in the process, on loopback, and is not warned about.
func (ws *warnings) warnNoKey(nf *natsFlags, subjects string) {
	if nf.keyFile != "" {
		return
	}
	ws.add("no group key: any client that can publish on %s at this NATS server can forge messages and results; give every member the same --key-file (a file of at least 16 secret bytes)", subjects)
}

// subjectPrefix is the first token(s) of the group subjects for --prefix.
func subjectPrefix(prefix string) string {
	if prefix == "" {
		return transport.DefaultPrefix
	}
	return prefix
}
