package view

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrMalformed reports bytes that are not a membership message.
var ErrMalformed = errors.New("view: malformed message")

// MaxMembers bounds the members of a view a message may carry.
const MaxMembers = 1 << 16

// wireVersion is the first byte of every encoded message.
const wireVersion = 1

// AppendEncode appends msg's wire form to b:
//
//	version, kind, from, genesis (founder, seq), num, size, epoch,
//	ballot, prev, has-value, [value: num, genesis, from, count, members]
//
// with an entry as (name length, name, incarnation), a ballot as (round,
// name length, name) and every integer a uvarint. It does not check msg;
// Decode does, on the other side.
func AppendEncode(b []byte, msg Msg) []byte {
	b = append(b, wireVersion, byte(msg.Kind))
	b = appendEntry(b, msg.From)
	b = appendGenesis(b, msg.Genesis)
	b = binary.AppendUvarint(b, msg.Num)
	b = binary.AppendUvarint(b, uint64(max(msg.Size, 0)))
	b = binary.AppendUvarint(b, msg.Epoch)
	b = appendBallot(b, msg.Ballot)
	b = appendBallot(b, msg.Prev)
	if msg.Value == nil {
		return append(b, 0)
	}
	v := msg.Value
	b = append(b, 1)
	b = binary.AppendUvarint(b, v.Num)
	b = appendGenesis(b, v.Genesis)
	b = binary.AppendUvarint(b, v.From)
	b = binary.AppendUvarint(b, uint64(len(v.Members)))
	for _, e := range v.Members {
		b = appendEntry(b, e)
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendEntry(b []byte, e Entry) []byte {
	return binary.AppendUvarint(appendString(b, e.Name), e.Inc)
}

func appendGenesis(b []byte, g Genesis) []byte {
	return binary.AppendUvarint(appendEntry(b, g.Founder), g.Seq)
}

func appendBallot(b []byte, x Ballot) []byte {
	return appendString(binary.AppendUvarint(b, x.Round), x.Name)
}

// decoder reads a message, remembering the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrMalformed, what)
	}
}

func (d *decoder) byte(what string) byte {
	if d.err != nil || len(d.b) == 0 {
		d.fail(what)
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Uvarint(d.b)
	if n <= 0 || (n > 1 && d.b[n-1] == 0) { // overflowing, truncated or not minimal
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *decoder) string(what string) string {
	n := d.uvarint(what)
	if d.err != nil || n > MaxName || n > uint64(len(d.b)) {
		d.fail(what)
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) entry(what string) Entry {
	return Entry{Name: d.string(what), Inc: d.uvarint(what)}
}

func (d *decoder) genesis(what string) Genesis {
	return Genesis{Founder: d.entry(what), Seq: d.uvarint(what)}
}

func (d *decoder) ballot(what string) Ballot {
	return Ballot{Round: d.uvarint(what), Name: d.string(what)}
}

// Decode parses a message that AppendEncode wrote. It fails, wrapping
// ErrMalformed, on anything else: another version, an unknown kind, a
// truncated or overlong field, trailing bytes, a sender without a name or
// incarnation, or a view that is not well formed (no members, names out of
// order or repeated).
func Decode(b []byte) (Msg, error) {
	d := decoder{b: b}
	if v := d.byte("version"); d.err == nil && v != wireVersion {
		return Msg{}, fmt.Errorf("%w: version %d", ErrMalformed, v)
	}
	var msg Msg
	msg.Kind = Kind(d.byte("kind"))
	if d.err == nil && (msg.Kind < Beat || msg.Kind > Install) {
		return Msg{}, fmt.Errorf("%w: kind %d", ErrMalformed, msg.Kind)
	}
	msg.From = d.entry("from")
	msg.Genesis = d.genesis("genesis")
	msg.Num = d.uvarint("num")
	size := d.uvarint("size")
	if size > MaxMembers {
		d.fail("size")
	}
	msg.Size = int(size)
	msg.Epoch = d.uvarint("epoch")
	msg.Ballot = d.ballot("ballot")
	msg.Prev = d.ballot("prev")
	switch d.byte("value flag") {
	case 0:
	case 1:
		v := &View{Num: d.uvarint("view num"), Genesis: d.genesis("view genesis"), From: d.uvarint("view from")}
		n := d.uvarint("view members")
		if d.err == nil && (n > MaxMembers || n > uint64(len(d.b))) {
			d.fail("view members")
		}
		if d.err == nil {
			v.Members = make([]Entry, 0, n)
			for range n {
				v.Members = append(v.Members, d.entry("view member"))
			}
		}
		if d.err == nil && !v.wellFormed() {
			d.fail("view not well formed")
		}
		msg.Value = v
	default:
		d.fail("value flag")
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	if d.err == nil && (msg.From.Name == "" || msg.From.Inc == 0) {
		d.fail("sender")
	}
	if d.err != nil {
		return Msg{}, d.err
	}
	return msg, nil
}
