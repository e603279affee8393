package aggregate

import (
	"strconv"
	"strings"
	"unicode"

	"github.com/gossipreduce/gossipreduce/transport"
)

// describe returns the configuration descriptor this member's transport
// sends in configuration notices (transport.Group.Describe): what
// configHash covers, as "key=value" lines, so that a member configured
// differently can name the setting that differs. The group's name is left
// out: members of different groups never meet.
func (r *resolved) describe() string {
	var b strings.Builder
	for _, kv := range r.settings() {
		b.WriteString(kv[0])
		b.WriteByte('=')
		b.WriteString(kv[1])
		b.WriteByte('\n')
	}
	s := b.String()
	if len(s) > transport.MaxNotice {
		// (a Monitor with very many metrics) Still a descriptor: the
		// others name the difference "another configuration".
		s = s[:transport.MaxNotice]
	}
	return s
}

// settings lists what configHash covers, in order, values quoted where
// they could hold a line break. The topology is the one configured, not
// the overlay it resolves to (the complete overlay of an algorithm with a
// fallback is the binomial graph; see member.Overlay): the name the
// operator wrote is the one to report.
func (r *resolved) settings() [][2]string {
	kv := [][2]string{
		{"nodes", strconv.Itoa(r.Nodes)},
		{"topology", r.Topology},
		{"algorithm", r.Algorithm},
		{"epsilon", strconv.FormatFloat(r.Epsilon, 'g', -1, 64)},
		{"tau", strconv.FormatFloat(r.Tau, 'g', -1, 64)},
	}
	if r.hashExtra != "" {
		kv = append(kv, [2]string{"monitor", strconv.Quote(r.hashExtra)})
	}
	return kv
}

// foreignWhy says how peer f's configuration differs from this member's,
// for the error of a member that finds itself the odd one out (see
// member.Machine.Foreign): "a configuration with nodes=8 where this member
// has nodes=9". f.Describe comes from the network: it is parsed leniently
// and what is quoted of it is cut short and made printable.
func (r *resolved) foreignWhy(f transport.ForeignConfig) string {
	if f.Describe == "" {
		return "another configuration (hash " + strconv.FormatUint(f.Hash, 16) + ")"
	}
	theirs := map[string]string{}
	for line := range strings.SplitSeq(f.Describe, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			theirs[k] = v
		}
	}
	var them, us []string
	for _, kv := range r.settings() {
		v, ok := theirs[kv[0]]
		if !ok {
			v = "(none)"
		}
		if v != kv[1] {
			them = append(them, kv[0]+"="+printable(v))
			us = append(us, kv[0]+"="+printable(kv[1]))
		}
	}
	if len(them) == 0 {
		return "another configuration (hash " + strconv.FormatUint(f.Hash, 16) + ", the same settings as far as its description goes)"
	}
	return "a configuration with " + strings.Join(them, ", ") + " where this member has " + strings.Join(us, ", ")
}

// printable cuts s to 64 runes and replaces what is not printable.
func printable(s string) string {
	const most = 64
	var b strings.Builder
	n := 0
	for _, c := range s {
		if n == most {
			b.WriteString("…")
			break
		}
		if !unicode.IsPrint(c) {
			c = '?'
		}
		b.WriteRune(c)
		n++
	}
	return b.String()
}
