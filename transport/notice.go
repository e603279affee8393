package transport

import (
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// Configuration notices tell a member that it and a peer run different
// configurations of the same group, and how they differ, without ever
// letting a message cross from one configuration to the other: the
// endpoint that drops a message of another configuration hash answers its
// sender with a notice carrying its own hash and descriptor (see the wire
// format), the sender answers the first notice from each peer with its
// own, and both ends report the peer, described, through
// [Endpoint.Foreign]. The
// layer above decides what to make of it (package aggregate fails the
// member that disagrees with most of those it hears, and the others stop
// waiting for it).

// maxForeign bounds the peers an endpoint remembers as running another
// configuration; sightings of further peers are dropped (they are still
// counted in Stats.Foreign).
const maxForeign = 1024

// ForeignConfig reports one peer found running another configuration of
// the endpoint's group, from a configuration notice it sent.
type ForeignConfig struct {
	// From is the peer.
	From gossip.NodeID
	// Hash is the peer's configuration hash.
	Hash uint64
	// Describe is the peer's configuration descriptor ([Group.Describe]).
	// It comes from the network: treat it as untrusted text.
	Describe string
}

// foreignSet holds the sightings not yet taken by Endpoint.Foreign and,
// bounded by maxForeign, when each peer was last sent a notice.
type foreignSet struct {
	mu       sync.Mutex
	pending  []ForeignConfig
	noticed  map[gossip.NodeID]time.Time // when a notice last went to each peer
	reported map[gossip.NodeID]ForeignConfig
}

// Foreign returns the peers seen running another configuration since the
// last call, at most one entry per peer (the latest); see [ForeignConfig].
func (e *endpoint) Foreign() []ForeignConfig {
	f := &e.foreign
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.pending
	f.pending = nil
	return out
}

// sawForeign records that node from runs configuration hash h, described
// by d. A sighting that repeats the last one reported for the peer is not
// reported again.
func (e *endpoint) sawForeign(from gossip.NodeID, h uint64, d string) {
	f := &e.foreign
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reported == nil {
		f.reported = map[gossip.NodeID]ForeignConfig{}
	}
	last, seen := f.reported[from]
	if seen && last.Hash == h && last.Describe == d {
		return
	}
	if !seen && len(f.reported) >= maxForeign {
		return
	}
	c := ForeignConfig{From: from, Hash: h, Describe: d}
	f.reported[from] = c
	f.pending = slices.DeleteFunc(f.pending, func(p ForeignConfig) bool { return p.From == from })
	f.pending = append(f.pending, c)
}

// dropForeign handles a decoded message of another configuration hash
// addressed to this node: it is dropped and counted and, if this endpoint
// has a descriptor, the sender's incarnation is sent a notice (at most one
// per peer per answer interval).
func (e *endpoint) dropForeign(h Header, m gossip.Message) {
	e.drop(cForeign, "configuration hash "+strconv.FormatUint(h.ConfigHash, 16)+" is not the group's")
	if m.From != e.id && h.Incarnation != 0 {
		e.notice(m.From, h.Incarnation, false)
	}
}

// notice sends this endpoint's configuration notice to incarnation inc of
// node to, if it has a descriptor and may (see mayNotice).
func (e *endpoint) notice(to gossip.NodeID, inc uint64, answer bool) {
	if e.group.Describe == "" || len(e.group.Describe) > MaxNotice || !e.mayNotice(to, answer) {
		return
	}
	n := Header{ConfigHash: e.group.ConfigHash, Incarnation: e.inc, PeerIncarnation: inc, Notice: true}
	msg := gossip.Message{From: e.id, To: to, Attach: []byte(e.group.Describe)}
	if err := e.publishCounted(n, msg, cNotices); err != nil {
		e.hub.opts.Logger.Debug("transport: configuration notice not sent", "subject", e.subject, "to", to, "err", err)
	}
}

// mayNotice reports whether a notice may go to node to now (and records
// it): not if one went less than the answer interval ago, nor, to answer
// a notice, if one ever went to it (so that two endpoints never trade
// notices back and forth), nor once maxForeign peers have been sent one.
func (e *endpoint) mayNotice(to gossip.NodeID, answer bool) bool {
	if e.isClosed() {
		return false
	}
	now := time.Now()
	f := &e.foreign
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noticed == nil {
		f.noticed = map[gossip.NodeID]time.Time{}
	}
	last, ok := f.noticed[to]
	if ok && (answer || now.Sub(last) < e.hub.answerEvery) {
		return false
	}
	if !ok && len(f.noticed) >= maxForeign {
		return false
	}
	f.noticed[to] = now
	return true
}

// receiveNotice handles a configuration notice addressed to this node.
func (e *endpoint) receiveNotice(h Header, m gossip.Message) {
	switch {
	case h.PeerIncarnation != e.inc:
		e.drop(cReplayed, "a configuration notice bound to incarnation "+strconv.FormatUint(h.PeerIncarnation, 16)+" of this node, not "+strconv.FormatUint(e.inc, 16))
	case h.ConfigHash == e.group.ConfigHash:
		e.drop(cForeign, "a configuration notice under this group's own configuration hash")
	case m.From == e.id || h.Incarnation == 0:
		e.drop(cForeign, "a configuration notice from this node itself or from incarnation 0")
	default:
		e.drop(cForeign, "configuration notice: node "+m.From.String()+" runs configuration "+strconv.FormatUint(h.ConfigHash, 16))
		e.sawForeign(m.From, h.ConfigHash, string(m.Attach))
		e.notice(m.From, h.Incarnation, true)
	}
}
