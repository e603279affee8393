package gossip

import (
	"fmt"
	"iter"
	"strconv"
	"strings"
)

// Place says which structure of an algorithm a Word lives in.
type Place uint8

// Places of a word.
const (
	// PlaceState is the running state of Push-Sum and recursive doubling
	// (the value-weight pair that is halved and sent).
	PlaceState Place = iota
	// PlaceInput is the initial data (x_i, w_i, c_i) the flow algorithms
	// keep unchanged for the whole run.
	PlaceInput
	// PlaceFlow is a flow variable f_{i,j} towards Word.Peer. Push-Cancel-
	// Flow has two per peer, told apart by Word.Slot.
	PlaceFlow
	// PlaceAccumulator is Push-Cancel-Flow's running sum φ_i.
	PlaceAccumulator
)

var placeNames = [...]string{"state", "input", "flow", "accumulator"}

// String returns the place's name.
func (p Place) String() string {
	if int(p) < len(placeNames) {
		return placeNames[p]
	}
	return "place(" + strconv.Itoa(int(p)) + ")"
}

// Part says which component of a (value, weight, checksum) triple a word is.
type Part uint8

// Parts of a word.
const (
	PartValue    Part = iota // one of the k value components
	PartWeight               // the weight
	PartChecksum             // the checksum c = Σx + w of PFLC and PFCC
)

var partNames = [...]string{"value", "weight", "checksum"}

// String returns the part's name.
func (p Part) String() string {
	if int(p) < len(partNames) {
		return partNames[p]
	}
	return "part(" + strconv.Itoa(int(p)) + ")"
}

// Word is one float64 of a machine's state, named so an experiment can say
// exactly what it corrupted.
type Word struct {
	Place     Place
	Part      Part
	Peer      NodeID // the flow's neighbour, for PlaceFlow
	Slot      int    // which of several flows per peer (Push-Cancel-Flow)
	Component int    // the value component, for PartValue
	Ptr       *float64
}

// Name returns a stable, readable name such as "value[0]", "input.weight",
// "flow[3].checksum" or "flow[3]#1.value[2]".
func (w Word) Name() string {
	var b strings.Builder
	switch w.Place {
	case PlaceState:
	case PlaceFlow:
		fmt.Fprintf(&b, "flow[%d]", w.Peer)
		if w.Slot != 0 {
			fmt.Fprintf(&b, "#%d", w.Slot)
		}
		b.WriteByte('.')
	default:
		b.WriteString(w.Place.String())
		b.WriteByte('.')
	}
	b.WriteString(w.Part.String())
	if w.Part == PartValue {
		fmt.Fprintf(&b, "[%d]", w.Component)
	}
	return b.String()
}

// PayloadPart tells which part of a message of kind k with n value
// components the payload word at index i is. The layouts are: x…, w for
// push, flow and rdb; x…, w, c for checked flows; x…, w and two words of
// hash (both checksum parts) for exchange; two flows x…, w one after the
// other for cancel flows. ok is false for an index outside the layout
// or a kind without one.
func PayloadPart(k Kind, n, i int) (part Part, component int, ok bool) {
	if n < 1 || i < 0 {
		return 0, 0, false
	}
	switch k {
	case KindPush, KindFlow, KindRDB:
		if i >= n+1 {
			return 0, 0, false
		}
	case KindCheckedFlow:
		if i == n+1 {
			return PartChecksum, 0, true
		}
		if i > n+1 {
			return 0, 0, false
		}
	case KindExchange:
		if i == n+1 || i == n+2 {
			return PartChecksum, 0, true
		}
		if i > n+2 {
			return 0, 0, false
		}
	case KindCancelFlow:
		if i >= 2*(n+1) {
			return 0, 0, false
		}
		i %= n + 1
	default:
		return 0, 0, false
	}
	if i == n {
		return PartWeight, 0, true
	}
	return PartValue, i, true
}

// SumWords yields the words of a state held as partial sums y = x…, w (the
// value components, then the weight), as the deterministic algorithms
// (rdb, exchange, ring, central) keep it: value[c] and weight, in place.
func SumWords(y []float64) iter.Seq[Word] {
	return func(yield func(Word) bool) {
		k := len(y) - 1
		for c := range k {
			if !yield(Word{Place: PlaceState, Part: PartValue, Component: c, Ptr: &y[c]}) {
				return
			}
		}
		yield(Word{Place: PlaceState, Part: PartWeight, Ptr: &y[k]})
	}
}

// AppendRatios appends the estimate x[c]/w of the partial sums y = x…, w
// to dst[:0] and returns it.
func AppendRatios(dst, y []float64) []float64 {
	dst = dst[:0]
	k := len(y) - 1
	for _, v := range y[:k] {
		dst = append(dst, v/y[k])
	}
	return dst
}
