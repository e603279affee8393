package simnet

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/member"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of the trace files in testdata")

// TestTraces runs the scripted schedules in testdata/*.txt, in the manner
// of etcd-io/raft's datadriven tests: each block is a command, "----" and
// the output it must print. Commands:
//
//	net [algo=A] nodes=N [topology=T] [seed=S] [suspect=D] [loss=P] [latency=D] [jitter=D] [server=D]
//	crash ID at=D | pause ID at=D for=D | slow ID factor=F
//	restart ID at=D                 (killed and started again, see Net.Restart)
//	exit-on-result ID [keep=K]
//	partition SIDES at=D [heal=D]   (SIDES: one digit a member, "00110")
//	tell-excluded ID by=J epoch=E at=D (J tells ID it declared ID dead)
//	run epoch=E [time] [msgs] [fallbacks] [starts=A-B@D] (inputs: member i holds i+1)
//
// run prints each member's outcome and the invariant check, with time
// how long the operation took, with msgs the messages sent a member and with
// fallbacks how many members fell back from the exchange; starts=A-B@D
// has members A to B begin the operation D after the others. Run with
// -rewrite to regenerate the expected output after a deliberate change
// (comment lines, before any block or after the last, are kept).
func TestTraces(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { runTrace(t, f) })
	}
}

type traceBlock struct {
	// notes are the comment lines before the command ("" for a blank
	// line between two of them), kept so that -rewrite keeps them.
	notes     []string
	cmd, want string
}

// parseTrace splits a trace into its blocks, and returns the comment
// lines after the last one.
func parseTrace(t *testing.T, text string) (blocks []traceBlock, tail []string) {
	var notes []string
	trim := func() {
		for len(notes) > 0 && notes[len(notes)-1] == "" {
			notes = notes[:len(notes)-1]
		}
	}
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		switch {
		case l == "" && len(notes) > 0 && notes[len(notes)-1] != "":
			notes = append(notes, "")
			continue
		case l == "":
			continue
		case strings.HasPrefix(l, "#"):
			notes = append(notes, lines[i])
			continue
		}
		trim()
		b := traceBlock{notes: notes, cmd: l}
		notes = nil
		require.Less(t, i+1, len(lines), "command %q without ----", l)
		require.Equal(t, "----", strings.TrimSpace(lines[i+1]), "after %q", l)
		i += 2
		var want []string
		for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			want = append(want, lines[i])
		}
		b.want = strings.Join(want, "\n")
		blocks = append(blocks, b)
	}
	trim()
	return blocks, notes
}

func runTrace(t *testing.T, path string) {
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	blocks, tail := parseTrace(t, string(raw))
	var net *Net
	var n int
	var out strings.Builder
	writeNotes := func(notes []string) {
		if out.Len() > 0 {
			out.WriteString("\n")
		}
		for _, l := range notes {
			out.WriteString(l + "\n")
		}
	}
	for _, b := range blocks {
		got := traceStep(t, &net, &n, b.cmd)
		if !*rewrite {
			assert.Equal(t, b.want, got, "%s: %s", path, b.cmd)
		}
		if len(b.notes) > 0 {
			writeNotes(b.notes)
		}
		fmt.Fprintf(&out, "\n%s\n----\n%s\n", b.cmd, got)
	}
	if len(tail) > 0 {
		writeNotes(tail)
	}
	if *rewrite {
		require.NoError(t, os.WriteFile(path, []byte(out.String()), 0o644))
	}
}

func traceStep(t *testing.T, netp **Net, np *int, cmd string) string {
	f := strings.Fields(cmd)
	args := map[string]string{}
	var pos []string
	for _, a := range f[1:] {
		if k, v, ok := strings.Cut(a, "="); ok {
			args[k] = v
		} else {
			pos = append(pos, a)
		}
	}
	dur := func(k string) time.Duration {
		d, err := time.ParseDuration(args[k])
		require.NoError(t, err, "%s: %s", cmd, k)
		return d
	}
	id := func() gossip.NodeID {
		require.NotEmpty(t, pos, cmd)
		v, err := strconv.Atoi(pos[0])
		require.NoError(t, err, cmd)
		return gossip.NodeID(v)
	}
	// members reads the first argument as one member's id or "all".
	members := func() []gossip.NodeID {
		if len(pos) > 0 && pos[0] == "all" {
			ids := make([]gossip.NodeID, *np)
			for i := range ids {
				ids[i] = gossip.NodeID(i)
			}
			return ids
		}
		return []gossip.NodeID{id()}
	}
	net := *netp
	switch f[0] {
	case "net":
		cfg := Config{Topology: args["topology"], Algorithm: args["algo"]}
		cfg.Nodes, _ = strconv.Atoi(args["nodes"])
		if s, ok := args["seed"]; ok {
			cfg.Seed, _ = strconv.ParseUint(s, 10, 64)
		}
		if _, ok := args["suspect"]; ok {
			cfg.Suspect = dur("suspect")
		}
		if s, ok := args["loss"]; ok {
			cfg.Loss, _ = strconv.ParseFloat(s, 64)
		}
		if _, ok := args["latency"]; ok {
			cfg.Latency = dur("latency")
		}
		if _, ok := args["jitter"]; ok {
			cfg.Jitter = dur("jitter")
		}
		if _, ok := args["server"]; ok {
			cfg.Server = dur("server")
		}
		var err error
		*netp, err = New(cfg)
		require.NoError(t, err)
		*np = cfg.Nodes
		return "ok"
	case "crash":
		net.Crash(id(), net.Now()+dur("at"))
	case "restart":
		net.Restart(id(), net.Now()+dur("at"), args["durable"] == "true")
	case "pause":
		net.Pause(id(), net.Now()+dur("at"), dur("for"))
	case "late":
		// late <id>|all by=<duration>
		for _, i := range members() {
			net.Late(i, dur("by"))
		}
	case "hold":
		// hold <id>[,<id>…] at=<duration> for=<duration>: what they send
		// meanwhile leaves at the end (Net.Hold)
		for _, v := range strings.Split(pos[0], ",") {
			i, err := strconv.Atoi(v)
			require.NoError(t, err, cmd)
			net.Hold(gossip.NodeID(i), net.Now()+dur("at"), dur("for"))
		}
	case "slow":
		v, _ := strconv.ParseFloat(args["factor"], 64)
		net.Slow(id(), v)
	case "tell-excluded":
		// tell-excluded <id> by=<member> epoch=<E> at=<duration>: the
		// member hears that it was declared dead, as member by tells a
		// member it has declared (member's tagExcluded, ^uint64(0)-3).
		by, err := strconv.Atoi(args["by"])
		require.NoError(t, err, cmd)
		e, err := strconv.ParseUint(args["epoch"], 10, 64)
		require.NoError(t, err, cmd)
		net.Inject(gossip.Message{From: gossip.NodeID(by), To: id(), Kind: gossip.KindControl, Epoch: e, Tag: ^uint64(0) - 3}, net.Now()+dur("at"))
	case "misconfigure":
		net.Misconfigure(id())
	case "leave-on-result":
		// leave-on-result <id>|all: it leaves the group on its result
		// (Net.LeaveOnResult)
		for _, i := range members() {
			net.LeaveOnResult(i)
		}
	case "exit-on-result":
		k, _ := strconv.Atoi(args["keep"])
		net.ExitOnResult(id(), k)
	case "partition":
		side := make([]int, *np)
		for i, c := range pos[0] {
			side[i] = int(c - '0')
		}
		heal := time.Duration(0)
		if _, ok := args["heal"]; ok {
			heal = net.Now() + dur("heal")
		}
		net.Partition(side, net.Now()+dur("at"), heal)
	case "run":
		e, _ := strconv.ParseUint(args["epoch"], 10, 64)
		in := make([][]float64, *np)
		for i := range in {
			in[i] = []float64{float64(i + 1)}
		}
		if v, ok := args["inputs"]; ok {
			// inputs=a,b,…: member i's input is the i-th number, not i+1
			// (components separated by colons: inputs=1:0.5,2:0.25).
			vals := strings.Split(v, ",")
			require.Len(t, vals, *np, "%s: one input a member", cmd)
			for i, val := range vals {
				in[i] = in[i][:0]
				for _, c := range strings.Split(val, ":") {
					x, err := strconv.ParseFloat(c, 64)
					require.NoError(t, err, cmd)
					in[i] = append(in[i], x)
				}
			}
		}
		t0, m0, fb0 := net.Now(), net.Messages, fallbacks(net, *np)
		var starts []time.Duration
		if v, ok := args["starts"]; ok {
			// starts=A-B@D: members A to B begin D after the others, as
			// processes launched one after another on a busy machine do.
			span, d, ok := strings.Cut(v, "@")
			require.True(t, ok, "%s: starts=A-B@D", cmd)
			a, b, ok := strings.Cut(span, "-")
			require.True(t, ok, "%s: starts=A-B@D", cmd)
			lo, err1 := strconv.Atoi(a)
			hi, err2 := strconv.Atoi(b)
			late, err3 := time.ParseDuration(d)
			require.NoError(t, errors.Join(err1, err2, err3), cmd)
			starts = make([]time.Duration, *np)
			for i := lo; i <= hi && i < *np; i++ {
				starts[i] = late
			}
		}
		limit := 10 * time.Second
		if _, ok := args["limit"]; ok { // run … limit=D: the operation's deadline
			limit = dur("limit")
		}
		outs := net.Run(e, in, starts, limit)
		var lines []string
		if slices.Contains(pos, "time") { // run … time: how long it ran, simulated
			lines = append(lines, fmt.Sprintf("took %v", (net.Now()-t0).Round(time.Millisecond)))
		}
		if slices.Contains(pos, "fallbacks") { // run … fallbacks: members that fell back from the exchange
			lines = append(lines, fmt.Sprintf("fallbacks %d", fallbacks(net, *np)-fb0))
		}
		if slices.Contains(pos, "msgs") {
			lines = append(lines, fmt.Sprintf("messages a member %.1f", float64(net.Messages-m0)/float64(*np)))
		}
		for i := range *np {
			o, ok := outs[gossip.NodeID(i)]
			switch {
			case !ok && net.Crashed(gossip.NodeID(i)):
				lines = append(lines, fmt.Sprintf("m%d: crashed", i))
			case !ok:
				lines = append(lines, fmt.Sprintf("m%d: no outcome", i))
			case o.Err != nil:
				lines = append(lines, fmt.Sprintf("m%d: error %s", i, errKind(o.Err)))
			default:
				lines = append(lines, fmt.Sprintf("m%d: ok value=%.6g live=%d absent=%v", i, o.Result.Value[0], o.Result.Live, o.Result.Absent))
			}
		}
		vs := member.Check(*np, e, in, outs, 1e-9)
		if len(vs) == 0 {
			lines = append(lines, "invariant: ok")
		}
		for _, v := range vs {
			lines = append(lines, "violation: "+v.String())
		}
		return strings.Join(lines, "\n")
	default:
		t.Fatalf("unknown trace command %q", f[0])
	}
	return "ok"
}

// fallbacks counts the operations the members of net handed from a finite
// algorithm to its fallback.
func fallbacks(net *Net, n int) int {
	f := 0
	for i := range n {
		f += net.Machine(gossip.NodeID(i)).Stats().Fallbacks
	}
	return f
}

// errKind names the runtime error an outcome wraps.
func errKind(err error) string {
	for _, k := range []struct {
		err  error
		name string
	}{{member.ErrExcluded, "excluded"}, {member.ErrNotConverged, "not-converged"}, {member.ErrGroupMismatch, "mismatch"}, {member.ErrClosed, "closed"}} {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return "other"
}

// TestParseTraceKeepsNotes: the comments before each block and after the
// last are parsed with the blocks, so that -rewrite writes them back (it
// kept only the file's header, and dropped a note of slow_network.txt).
func TestParseTraceKeepsNotes(t *testing.T) {
	blocks, tail := parseTrace(t, "# head\n\nnet nodes=2\n----\nok\n\n# one\n#\n# two\n\n# three\n\nrun epoch=1\n----\nm0: ok\n\n# end\n")
	require.Len(t, blocks, 2)
	assert.Equal(t, []string{"# head"}, blocks[0].notes)
	assert.Equal(t, []string{"# one", "#", "# two", "", "# three"}, blocks[1].notes)
	assert.Equal(t, "m0: ok", blocks[1].want)
	assert.Equal(t, []string{"# end"}, tail)
}
