package main

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// seedFlag is a --seed that remembers whether it was given; without it a
// fresh seed is drawn and printed so the run can be replayed.
type seedFlag struct {
	v   uint64
	set bool
}

func (s *seedFlag) String() string { return strconv.FormatUint(s.v, 10) }

func (s *seedFlag) kind() string { return "uint" }

func (s *seedFlag) Set(v string) error {
	n, err := strconv.ParseUint(v, 0, 64)
	if err != nil {
		return fmt.Errorf("seed %q: want an unsigned integer", v)
	}
	s.v, s.set = n, true
	return nil
}

// value returns the given seed, or a random one.
func (s *seedFlag) value() uint64 {
	if !s.set {
		var b [8]byte
		_, _ = rand.Read(b[:])
		// Keep seeds short enough to type: 1 … 2^31.
		s.v = uint64(binary.LittleEndian.Uint32(b[:])>>1) + 1
		s.set = true
	}
	return s.v
}

// checkEps validates a target accuracy ε.
func checkEps(eps float64) error {
	if !(eps > 0 && eps < 1) {
		return usagef("--eps %v must be in (0, 1)", eps)
	}
	return nil
}

// checkProb validates a probability in [0, limit).
func checkProb(name string, p, limit float64) error {
	if !(p >= 0 && p < limit) || math.IsNaN(p) {
		return usagef("--%s %v must be in [0, %v)", name, p, limit)
	}
	return nil
}

// writeJSON prints v as one indented JSON object.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// report is a verb's result, printed as text or as JSON.
type report interface {
	text(w io.Writer) error
}

// print prints r: as one JSON object with --json, else as text.
func (out *stdio) print(r report) error {
	if out.json {
		return writeJSON(out.Stdout, r)
	}
	return r.text(out.Stdout)
}

// writeJSONLine prints v as JSON on one line: for output read line by
// line (a stream of runs, a server's address).
func writeJSONLine(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}

// progress reports "done/total" of a long run on standard error: on a
// terminal as one line rewritten every second, elsewhere (a log file, CI)
// as a plain line every ten seconds, never with --quiet. A run that ends
// within the first interval says nothing.
type progress struct {
	mu       sync.Mutex
	w        io.Writer // nil: quiet
	label    string
	last     time.Time
	every    time.Duration
	terminal bool
	shown    bool
}

// newProgress returns the progress report of the verb that parsed out's
// flags, labelled label.
func newProgress(out *stdio, label string) *progress {
	p := &progress{label: label, last: time.Now(), every: 10 * time.Second}
	if out.quiet {
		return p
	}
	p.w = out.Stderr
	if isTerminal(out.Stderr) {
		p.terminal, p.every = true, time.Second
	}
	return p
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (p *progress) update(done, total int) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.last) < p.every && done < total {
		return
	}
	p.last = time.Now()
	if !p.shown && done == total {
		return // finished within the first interval: say nothing
	}
	p.shown = true
	if !p.terminal {
		fmt.Fprintf(p.w, "%s: %d/%d\n", p.label, done, total)
		return
	}
	fmt.Fprintf(p.w, "\r%s: %d/%d", p.label, done, total)
	if done == total {
		fmt.Fprintln(p.w)
	}
}

// parseIDs parses "3,17,40" into node ids below n.
func parseIDs(s string, n int) ([]uint32, error) {
	if s == "" {
		return nil, nil
	}
	var out []uint32
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(f), 10, 32)
		if err != nil || int(v) >= n {
			return nil, usagef("node id %q: want an integer in [0, %d)", f, n)
		}
		out = append(out, uint32(v))
	}
	return out, nil
}

// debugLogger writes every record, debug ones included, as text to w: the
// -v of server (the NATS server's messages) and of node (the member's
// protocol decisions).
func debugLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
