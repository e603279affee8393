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
	"strconv"
	"strings"
	"syscall"
)

// command is one verb: its flags, their check, and the run.
type command interface {
	// flags registers the verb's flags on fs: the shared groups it takes
	// (flags.go) and its own.
	flags(fs *flag.FlagSet)
	// check validates the flags once parsed; errors in how the verb was
	// called are usage errors (usagef).
	check() error
	// exec runs the verb and prints its report to out.Stdout, as text or,
	// with out.json, as JSON; progress and diagnostics go to out.Stderr.
	exec(ctx context.Context, out *stdio) error
}

// verb is one subcommand: "run", or a sub-verb such as "bcast tree".
type verb struct {
	name, summary string
	family        family
	new           func() command
}

// stdio is where a verb writes; tests substitute buffers.
type stdio struct {
	Stdout, Stderr io.Writer
	quiet          bool // --quiet: no progress reports (see newProgress)
	json           bool // --json: one JSON object instead of text
}

var verbs = map[string]verb{}

// register adds a verb; each verb's file calls it from init.
func register(name, summary string, fam family, new func() command) {
	if _, dup := verbs[name]; dup {
		panic("gossipreduce: verb registered twice: " + name)
	}
	verbs[name] = verb{name: name, summary: summary, family: fam, new: new}
}

// lookup finds the verb args start with, a sub-verb ("bcast tree") before
// its verb, and returns it with the arguments after its name.
func lookup(args []string) (verb, []string, bool) {
	if len(args) > 1 {
		if v, ok := verbs[args[0]+" "+args[1]]; ok {
			return v, args[2:], true
		}
	}
	v, ok := verbs[args[0]]
	return v, args[1:], ok
}

// call parses args into the verb's flags, checks them and runs it.
func (v verb) call(ctx context.Context, args []string, out *stdio) error {
	o := *out
	written := &countingWriter{w: out.Stdout}
	o.Stdout = written
	cmd := v.new()
	fs := newFlags(v.name, &o)
	fs.BoolVar(&o.json, "json", false, "print JSON instead of text: one object, with an error field when the verb fails (sim and bcast --per-run: one a line)")
	cmd.flags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := cmd.check(); err != nil {
		return err
	}
	err := cmd.exec(ctx, &o)
	if err != nil && o.json && written.n == 0 && !errors.Is(err, errUsage) {
		// A failure is a JSON object too, for scripts that read one: the
		// error, and no figure of the work that failed.
		err = errors.Join(err, writeJSON(out.Stdout, failure{Error: err.Error()}))
	}
	return err
}

// failure is the JSON of a verb that failed before it had a report.
type failure struct {
	Error string `json:"error"`
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	return n, err
}

// errUsage marks an error in how the command was called (exit status 2):
// errors.Is(err, errUsage) holds for a usageError.
var errUsage = errors.New("usage")

// usageError is an error in how the command was called. Its text is the
// problem alone ("--nodes 0 must be at least 1"): run puts the verb before
// it and the usage line after it.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }

func (e usageError) Unwrap() error { return e.err }

func (e usageError) Is(target error) bool { return target == errUsage }

// usagef returns a usage error of the formatted text.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// usageErr marks err, found in the flags' values, as a usage error.
func usageErr(err error) error { return usageError{err} }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], &stdio{Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	os.Exit(code)
}

// run executes one command line and returns the process exit status: 0 on
// success, 1 when the work failed, 2 when the command line was wrong.
func run(ctx context.Context, args []string, out *stdio) int {
	if len(args) >= 2 && args[0] == "help" {
		if _, ok := verbs[strings.Join(args[1:], " ")]; ok {
			args = append(args[1:len(args):len(args)], "-h") // "help run" is "run -h"
		}
	}
	if len(args) > 0 && (args[0] == "version" || args[0] == "--version" || args[0] == "-version") {
		fmt.Fprintln(out.Stdout, version())
		return 0
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) >= 2 {
			fmt.Fprintf(out.Stderr, "gossipreduce: unknown verb %q\n\n", strings.Join(args[1:], " "))
			printHelp(out.Stderr)
			return 2
		}
		printHelp(out.Stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	v, rest, ok := lookup(args)
	if !ok {
		fmt.Fprintf(out.Stderr, "gossipreduce: unknown verb %q\n\n", args[0])
		printHelp(out.Stderr)
		return 2
	}
	err := v.call(ctx, rest, out)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(out.Stderr, "gossipreduce %s: %v\n", v.name, err)
		fmt.Fprintf(out.Stderr, "usage: gossipreduce %s [flags] (gossipreduce help %s lists them)\n", v.name, v.name)
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
		if !strings.Contains(n, " ") { // sub-verbs are in their verb's help
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, verbs[n].summary)
		for _, sub := range subVerbs(n) {
			fmt.Fprintf(w, "  %-9s %s: %s\n", "", sub, verbs[sub].summary)
		}
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
	fmt.Fprintf(w, "usage: gossipreduce %s [flags]%s\n", name, summary)
	printSubVerbs(w, name)
	fmt.Fprintf(w, "\nflags:\n")
	fs.VisitAll(func(f *flag.Flag) {
		if isAlias(f) {
			return // deprecated names work, but are not taught
		}
		kind, usage := flag.UnquoteUsage(f)
		if k, ok := f.Value.(interface{ kind() string }); ok {
			kind = k.kind()
		}
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

// printSubVerbs lists the sub-verbs of the verb name, if it has any.
func printSubVerbs(w io.Writer, name string) {
	for _, n := range subVerbs(name) {
		fmt.Fprintf(w, "       gossipreduce %s [flags]: %s\n", n, verbs[n].summary)
	}
}

// subVerbs returns the names of the sub-verbs of name ("bcast tree"),
// sorted.
func subVerbs(name string) []string {
	var subs []string
	for n := range verbs {
		if strings.HasPrefix(n, name+" ") {
			subs = append(subs, n)
		}
	}
	sort.Strings(subs)
	return subs
}

// parseFlags parses args, turning flag errors into usage errors in the
// command's words (flagError) and rejecting stray positional arguments.
// The flag package's own report of an error (its text, then the whole
// help) is silenced: run prints the error once, with a usage line; -h
// still prints the help.
func parseFlags(fs *flag.FlagSet, args []string) error {
	help, w := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = help
	fs.SetOutput(w)
	if errors.Is(err, flag.ErrHelp) {
		help()
		return err
	}
	if err != nil {
		return usageErr(flagError(fs, err))
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", strings.Join(fs.Args(), " "))
	}
	return nil
}

// flagError rewrites an error of fs.Parse, which names a flag the Go way
// ("invalid value "x" for flag -nodes: parse error"), as the README and
// the help write flags: "--nodes: "x" is not a valid int". A value's own
// error that starts with the flag's name, as algo's does, drops it
// ("--algo: unknown algorithm …", not "--algo: algo: unknown …"). An
// error of another shape is returned as it is.
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return fmt.Errorf("unknown flag --%s", name)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Errorf("--%s needs a value", name)
	}
	rest, ok := strings.CutPrefix(msg, "invalid value ")
	if !ok {
		rest, ok = strings.CutPrefix(msg, "invalid boolean value ")
	}
	if !ok {
		return err
	}
	value, qerr := strconv.QuotedPrefix(rest)
	if qerr != nil {
		return err
	}
	rest = strings.TrimPrefix(rest[len(value):], " for ")
	rest = strings.TrimPrefix(rest, "flag ")
	name, why, ok := strings.Cut(strings.TrimPrefix(rest, "-"), ": ")
	f := fs.Lookup(name)
	if !ok || f == nil {
		return err
	}
	canonical := name
	if a, isAlias := f.Value.(*alias); isAlias {
		canonical = a.new
	}
	switch why {
	case "parse error": // the flag package's own types
		if kind, _ := flag.UnquoteUsage(f); kind != "" {
			why = fmt.Sprintf("%s is not a valid %s", value, kind)
		} else { // a bool
			why = fmt.Sprintf("%s is not true or false", value)
		}
	case "value out of range":
		why = fmt.Sprintf("%s is out of range", value)
	default:
		why = strings.TrimPrefix(why, canonical+": ")
	}
	return fmt.Errorf("--%s: %s", name, why)
}
