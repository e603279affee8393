package main

import (
	"bytes"
	"flag"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flagUse is one verb's flag of a name.
type flagUse struct {
	verb   string
	family family
	def    string
	usage  string
	value  flag.Value
}

// allFlags returns every verb's flags by name, deprecated aliases left
// out.
func allFlags() map[string][]flagUse {
	uses := map[string][]flagUse{}
	for name, v := range verbs {
		fs := newFlags(name, &stdio{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}})
		v.new().flags(fs)
		fs.VisitAll(func(f *flag.Flag) {
			if !isAlias(f) {
				uses[f.Name] = append(uses[f.Name], flagUse{verb: name, family: v.family, def: f.DefValue, usage: f.Usage, value: f.Value})
			}
		})
	}
	for _, us := range uses {
		sort.Slice(us, func(i, j int) bool { return us[i].verb < us[j].verb })
	}
	return uses
}

// TestOneDefaultPerIdea walks every verb's flags: a flag that several
// verbs take has one help text everywhere and one default in each family,
// and every exception is one of flagDifferences, each of which is one in
// fact.
func TestOneDefaultPerIdea(t *testing.T) {
	used := map[string]bool{} // "flag verb" of the differences that hold
	for name, us := range allFlags() {
		if len(us) < 2 {
			continue
		}
		families := map[family]flagUse{} // the family's own: no exception
		var exceptions []flagUse
		for _, u := range us {
			if documented(name, u.verb) != nil {
				exceptions = append(exceptions, u)
				continue
			}
			f, ok := families[u.family]
			if !ok {
				families[u.family] = u
				continue
			}
			assert.Equal(t, f.def, u.def, "--%s: %s and %s are both %s verbs, and have different defaults", name, f.verb, u.verb, u.family)
			assert.Equal(t, f.usage, u.usage, "--%s: %s and %s are both %s verbs, and have different help", name, f.verb, u.verb, u.family)
		}
		for _, u := range exceptions {
			f, ok := families[u.family]
			require.True(t, ok, "--%s of %s: no other %s verb to differ from", name, u.verb, u.family)
			assert.NotEqual(t, f.def, u.def, "--%s of %s is documented as an exception, and has its family's default", name, u.verb)
			assert.Equal(t, f.usage, u.usage, "--%s of %s: the help is the same everywhere", name, u.verb)
			used[name+" "+u.verb] = true
		}
		defs, usages := map[string]bool{}, map[string]bool{}
		for _, f := range families {
			defs[f.def], usages[f.usage] = true, true
		}
		if d := documented(name, ""); d != nil {
			assert.True(t, len(defs) > 1 || len(usages) > 1, "--%s is documented as differing between families, and does not", name)
			assert.Equal(t, d.help, len(usages) > 1, "--%s: the help differs between families exactly when documented so", name)
			used[name+" "] = true
			continue
		}
		assert.Len(t, defs, 1, "--%s: the families' defaults differ, undocumented: %v", name, us)
		assert.Len(t, usages, 1, "--%s: the help differs between families, undocumented", name)
	}
	for _, d := range flagDifferences {
		for _, name := range d.flags {
			assert.True(t, used[name+" "+d.verb], "flagDifferences: --%s %s is not a difference (any more)", name, d.verb)
		}
	}
}

// documented returns the documented difference of the flag of verb (verb
// empty: between families), or nil.
func documented(name, verb string) *flagDifference {
	for i, d := range flagDifferences {
		if d.verb == verb && slices.Contains(d.flags, name) {
			return &flagDifferences[i]
		}
	}
	return nil
}

// TestFamilyDefaults: the defaults the families share are those of
// familyDefaults (the library's for live verbs, the thesis's for the
// simulated ones).
func TestFamilyDefaults(t *testing.T) {
	for name, us := range allFlags() {
		for _, u := range us {
			d, ok := familyDefaults[u.family]
			if !ok || documented(name, u.verb) != nil {
				continue
			}
			want, ok := map[string]string{"algo": d.algo, "topology": d.topology, "nodes": fmt.Sprint(d.nodes), "eps": fmt.Sprint(d.eps),
				"flip-bit": d.flipBit, "flip-target": d.flipTarget, "flip-after": fmt.Sprint(d.flipAfter)}[name]
			if ok {
				assert.Equal(t, want, u.def, "--%s of %s", name, u.verb)
			}
		}
	}
}

// TestListFlags: exactly the verbs listVerbs names take a comma list of a
// flag; the others take one value, and say so when given a list.
func TestListFlags(t *testing.T) {
	for name, us := range allFlags() {
		var lists []string
		for _, u := range us {
			if l, ok := u.value.(interface{ kind() string }); ok && l.kind() == "list" {
				lists = append(lists, u.verb)
			}
		}
		assert.ElementsMatch(t, listVerbs[name], lists, "--%s", name)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--algo", "pfcc,ps"}, "run takes one --algo; bench and sdc take a list"},
		{[]string{"node", "--algo", "pfcc,ps", "--id", "0", "--nodes", "2", "--value", "1"}, "node takes one --algo; bench and sdc take a list"},
		{[]string{"chaos", "--algo", "pf,pfcc"}, "chaos takes one --algo; bench and sdc take a list"},
		{[]string{"sim", "--algo", "ps,pf"}, "sim takes one --algo; bench and sdc take a list"},
		{[]string{"sim", "--loss", "0,0.1"}, "sim takes one --loss; sdc takes a list"},
		{[]string{"run", "--loss", "0,0.1"}, "run takes one --loss; sdc takes a list"},
		{[]string{"run", "--flip-bit", "0-63"}, "run takes one --flip-bit; sdc takes a list"},
		{[]string{"run", "--flip-bit", "3,5"}, "run takes one --flip-bit; sdc takes a list"},
		{[]string{"run", "--flip-target", "flow,value"}, "run takes one --flip-target; sdc takes a list"},
	} {
		code, stdout, stderr := runCLI(t, c.args...)
		assert.Equal(t, 2, code, "%v: %s", c.args, stderr)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, c.want, c.args)
	}
	// One value of a list flag, and the lists themselves, are taken.
	code, _, stderr := runCLI(t, "run", "--flip-bit", "5-5", "--nodes", "2", "--seed", "1", "--timeout", "5s")
	assert.NotEqual(t, 2, code, stderr)
	code, _, stderr = runCLI(t, "sdc", "--algo", "ps,pfcc", "--flip-bit", "0,60-61", "--flip-target", "value,flow", "--runs", "1", "--nodes", "4", "--seed", "1")
	assert.Equal(t, 0, code, stderr)
}

// TestAlgoListRepeats: bench and sdc compare each algorithm once; a list
// that names one twice is a usage error that names it, before any run,
// also through the deprecated --algos.
func TestAlgoListRepeats(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "--algo", "rdb,ring,rdb"},
		{"bench", "--algos", "rdb, ring ,rdb"},
		{"sdc", "--algo", "rdb,pfcc,rdb", "--runs", "1", "--nodes", "4"},
	} {
		code, stdout, stderr := runCLI(t, args...)
		assert.Equal(t, 2, code, "%v: %s", args, stderr)
		assert.Empty(t, stdout, "%v: nothing ran", args)
		assert.Contains(t, stderr, "rdb is listed twice", args)
	}
	var l listFlag[string]
	registerAlgo(flag.NewFlagSet("t", flag.ContinueOnError), &l, "bench", "rdb,ring")
	assert.Equal(t, []string{"rdb", "ring"}, l.vals, "distinct names are taken")
}

// TestLossListRepeats: an sdc sweep takes each loss rate once; 0 and 0.0
// are one rate.
func TestLossListRepeats(t *testing.T) {
	code, stdout, stderr := runCLI(t, "sdc", "--loss", "0,0.1,0.0", "--runs", "1", "--nodes", "4")
	assert.Equal(t, 2, code, stderr)
	assert.Empty(t, stdout, "nothing ran")
	assert.Contains(t, stderr, "--loss: 0 is listed twice")
}

// TestDeprecatedNames: bench's --algos still works, saying once that it is
// deprecated; no verb's help teaches a deprecated name.
func TestDeprecatedNames(t *testing.T) {
	obj := jsonObject(t, "bench", "--algos", "rdb,central", "--nodes", "4", "--runs", "1", "--seed", "1", "--json")
	require.Len(t, obj["algorithms"], 2)
	assert.Equal(t, "rdb", obj["algorithms"].([]any)[0].(map[string]any)["algo"])
	code, _, stderr := runCLI(t, "bench", "--algos", "rdb", "--nodes", "2", "--runs", "1", "--seed", "1")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "gossipreduce: --algos is deprecated; use --algo\n", stderr)

	for name, v := range verbs {
		code, _, help := runCLI(t, append(strings.Fields(name), "-h")...)
		require.Equal(t, 0, code, name)
		fs := newFlags(name, &stdio{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}})
		v.new().flags(fs)
		fs.VisitAll(func(f *flag.Flag) {
			if isAlias(f) {
				assert.NotContains(t, help, "--"+f.Name+" ", "%s's help teaches the deprecated --%s", name, f.Name)
			} else {
				assert.Contains(t, help, "\n  --"+f.Name, "%s's help leaves out --%s", name, f.Name)
			}
		})
	}
}
