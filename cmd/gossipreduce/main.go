// Command gossipreduce runs gossip-based all-reduce: simulated (sim,
// spectral, sdc, bcast) or live over NATS (run, node, server, bench).
//
// Usage:
//
//	gossipreduce <verb> [flags]
//
// Run "gossipreduce help" for the verbs and "gossipreduce help <verb>" for a
// verb's flags. Every verb accepts --json and then prints one JSON object
// instead of text. Every random run prints its seed; --seed replays it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"
)

// verb is one subcommand. run parses args itself (with newFlags) and writes
// results to out.Stdout, progress and diagnostics to out.Stderr.
type verb struct {
	name, summary string
	run           func(ctx context.Context, args []string, out *stdio) error
}

// stdio is where a verb writes; tests substitute buffers.
type stdio struct {
	Stdout, Stderr io.Writer
	quiet          bool // --quiet: no progress reports (see newProgress)
}

var verbs = map[string]verb{}

// register adds a verb; each verb's file calls it from init.
func register(name, summary string, run func(context.Context, []string, *stdio) error) {
	if _, dup := verbs[name]; dup {
		panic("gossipreduce: verb registered twice: " + name)
	}
	verbs[name] = verb{name: name, summary: summary, run: run}
}

// errUsage marks an error in how the command was called (exit status 2).
var errUsage = errors.New("usage")

func usagef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], &stdio{Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	os.Exit(code)
}

// run executes one command line and returns the process exit status: 0 on
// success, 1 when the work failed, 2 when the command line was wrong.
func run(ctx context.Context, args []string, out *stdio) int {
	if len(args) == 2 && args[0] == "help" {
		if _, ok := verbs[args[1]]; ok {
			args = []string{args[1], "-h"} // "help run" is "run -h"
		}
	}
	if len(args) > 0 && (args[0] == "version" || args[0] == "--version" || args[0] == "-version") {
		fmt.Fprintln(out.Stdout, version())
		return 0
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) == 2 {
			fmt.Fprintf(out.Stderr, "gossipreduce: unknown verb %q\n\n", args[1])
			printHelp(out.Stderr)
			return 2
		}
		printHelp(out.Stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	v, ok := verbs[args[0]]
	if !ok {
		fmt.Fprintf(out.Stderr, "gossipreduce: unknown verb %q\n\n", args[0])
		printHelp(out.Stderr)
		return 2
	}
	err := v.run(ctx, args[1:], out)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(out.Stderr, "gossipreduce %s: %v\n", v.name, err)
		return 2
	default:
		fmt.Fprintf(out.Stderr, "gossipreduce %s: %v\n", v.name, err)
		return 1
	}
}

// version names the build: the module version (or "(devel)" for a build
// from a work tree), the VCS revision when the build recorded one, and the
// Go release.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "gossipreduce (no build information) " + runtime.Version()
	}
	v := "gossipreduce " + bi.Main.Version
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+modified"
			}
		}
	}
	if rev != "" {
		v += " " + rev[:min(12, len(rev))] + modified
	}
	return v + " " + bi.GoVersion
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "usage: gossipreduce <verb> [flags]   (gossipreduce help <verb> for its flags; gossipreduce --version)")
	fmt.Fprintln(w, "\nverbs:")
	names := make([]string, 0, len(verbs))
	for n := range verbs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, verbs[n].summary)
	}
}

// newFlags returns a flag set for a verb that reports errors instead of
// exiting, and prints its usage to out.Stderr.
func newFlags(name string, out *stdio) *flag.FlagSet {
	fs := flag.NewFlagSet("gossipreduce "+name, flag.ContinueOnError)
	fs.SetOutput(out.Stderr)
	fs.Usage = func() { printFlags(fs, name, out.Stderr) }
	fs.BoolVar(&out.quiet, "quiet", false, "no progress reports on standard error (they appear only for long runs: on a terminal every second, elsewhere every ten seconds)")
	return fs
}

// printFlags is a verb's help: its flags as the README writes them
// (--name), in the layout of flag.PrintDefaults.
func printFlags(fs *flag.FlagSet, name string, w io.Writer) {
	summary := ""
	if v, ok := verbs[name]; ok {
		summary = ": " + v.summary
	}
	fmt.Fprintf(w, "usage: gossipreduce %s [flags]%s\n\nflags:\n", name, summary)
	fs.VisitAll(func(f *flag.Flag) {
		kind, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if kind != "" {
			line += " " + kind
		}
		line += "\n    \t" + strings.ReplaceAll(usage, "\n", "\n    \t")
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			line += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintln(w, line)
	})
}

// parseFlags parses args, turning flag errors into usage errors and
// rejecting stray positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", strings.Join(fs.Args(), " "))
	}
	return nil
}
