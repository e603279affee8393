package view

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sampleMsgs() []Msg {
	g := Genesis{Founder: Entry{"web-00", 7}, Seq: 1}
	v := &View{Num: 3, Genesis: g, Members: []Entry{{"a", 1}, {"b", 2}}, From: 9}
	return []Msg{
		{Kind: Beat, From: Entry{"a", 1}, Genesis: g, Num: 3, Size: 2, Epoch: 8},
		{Kind: Leave, From: Entry{"b", 2}},
		{Kind: Prepare, From: Entry{"a", 1}, Genesis: g, Num: 3, Ballot: Ballot{4, "a"}},
		{Kind: Promise, From: Entry{"b", 2}, Genesis: g, Num: 3, Ballot: Ballot{4, "a"}, Prev: Ballot{2, "b"}, Epoch: 8, Value: v},
		{Kind: Accept, From: Entry{"a", 1}, Genesis: g, Num: 3, Ballot: Ballot{4, "a"}, Value: v},
		{Kind: Install, From: Entry{"a", 1}, Genesis: g, Value: v},
	}
}

func TestWireRoundTrip(t *testing.T) {
	for _, msg := range sampleMsgs() {
		b := AppendEncode(nil, msg)
		got, err := Decode(b)
		require.NoError(t, err, "%v", msg.Kind)
		assert.Equal(t, msg, got)
	}
}

func TestWireRejects(t *testing.T) {
	good := AppendEncode(nil, sampleMsgs()[3])
	cases := map[string][]byte{
		"empty":     nil,
		"version":   append([]byte{9}, good[1:]...),
		"kind":      append([]byte{wireVersion, 0}, good[2:]...),
		"truncated": good[:len(good)-1],
		"trailing":  append(bytes.Clone(good), 0),
		"no sender": AppendEncode(nil, Msg{Kind: Beat}),
		"bad view": AppendEncode(nil, Msg{Kind: Install, From: Entry{"a", 1},
			Value: &View{Num: 1, Genesis: Genesis{Founder: Entry{"a", 1}}, Members: []Entry{{"b", 1}, {"a", 1}}}}),
		"huge count": AppendEncode(nil, Msg{Kind: Install, From: Entry{"a", 1}})[:0],
	}
	// A member count larger than the bytes left.
	b := AppendEncode(nil, Msg{Kind: Beat, From: Entry{"a", 1}})
	b = append(b[:len(b)-1], 1, 1, 1, 1, 0, 1, 0xff, 0xff, 0x03)
	cases["huge count"] = b
	for name, raw := range cases {
		_, err := Decode(raw)
		assert.ErrorIs(t, err, ErrMalformed, name)
	}
}

// FuzzDecode: Decode never panics, and what it accepts encodes back to the
// same bytes.
func FuzzDecode(f *testing.F) {
	for _, msg := range sampleMsgs() {
		f.Add(AppendEncode(nil, msg))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		msg, err := Decode(raw)
		if err != nil {
			return
		}
		if !bytes.Equal(AppendEncode(nil, msg), raw) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", raw, msg, AppendEncode(nil, msg))
		}
	})
}
