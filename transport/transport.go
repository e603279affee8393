package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// DefaultPrefix is the first subject token when [Group.Prefix] is empty.
const DefaultPrefix = "gossipreduce"

// DefaultBuffer is the receive buffer of an endpoint, in messages, when
// [Options.Buffer] is zero.
const DefaultBuffer = 1024

// DefaultBufferBytes bounds the payload and attachment bytes waiting in an
// endpoint's receive buffer when [Options.BufferBytes] is zero: 64 MiB,
// four messages of a million-component vector with its certificate. Many
// members in one process each have their own (16 members: up to 1 GiB).
const DefaultBufferBytes = 64 << 20

// ErrClosed reports a Send or Open on a closed endpoint or transport.
var ErrClosed = errors.New("transport: closed")

// ErrDuplicateID reports that another endpoint holds the same node of the
// same group: another process (or the same one) opened it too, and is
// still open. Open fails with an error wrapping it when it finds the node
// held, and an endpoint that finds itself sharing its node with another
// fails every Send with one ([Endpoint.Err]); see the package
// documentation, "Claims".
var ErrDuplicateID = errors.New("transport: another endpoint holds this node id")

// Transport carries gossip messages between the nodes of groups. One
// Transport may host many endpoints (the run command puts every node of a
// group in one process over one NATS connection) or just one (the node
// command). Implementations are safe for concurrent use.
type Transport interface {
	// Open starts receiving the messages addressed to node id of group g
	// and returns the node's endpoint. When Open returns, messages sent to
	// the node reach it. Opening a node of a group that another endpoint
	// holds fails with an error wrapping [ErrDuplicateID], and the holder
	// refuses to send from then on (see the package documentation,
	// "Claims"): on one Transport always (the error also wraps
	// gossip.ErrInvalidConfig), across NATS connections when the holder
	// answers the new endpoint's claim in time.
	Open(ctx context.Context, g Group, id gossip.NodeID) (Endpoint, error)

	// Channel opens g's broadcast channel name (one subject token, no
	// dots): see [Channel]. Close closes the transport's channels too.
	Channel(ctx context.Context, g Group, name string) (Channel, error)

	// Stats sums the counts of every endpoint ever opened on the transport.
	Stats() Stats

	// Close closes every endpoint and releases the transport's resources
	// (flushing what was sent, for NATS). It does not wait for sessions:
	// as Endpoint.Close, it discards the messages still queued for peers
	// whose session is not established and counts each in Stats.Unsent.
	// It is safe to call more than once.
	Close() error
}

// Endpoint is one node's attachment to a transport. It is safe for
// concurrent use, but the intended user is the single goroutine that drives
// the node's gossip.Machine: it selects on Messages together with its clock
// and its context, which a blocking Recv could not do.
type Endpoint interface {
	// ID returns the node this endpoint receives for.
	ID() gossip.NodeID

	// Send delivers m to node m.To of the endpoint's group, best effort:
	// a nil error means the message was handed to the network, dropped by
	// injected loss, or queued until the session with m.To is established
	// (the first message to a node probes it; see the package
	// documentation, "Sessions"), not that it arrived. m.From must be the
	// endpoint's node. Send never blocks on the network and does not keep
	// m.Payload. It fails with ErrClosed after Close, with an error
	// wrapping ErrDuplicateID once the endpoint has found another holding
	// its node (see Err), with an error wrapping ErrMalformed for a
	// message that cannot be encoded, and with a wrapped NATS error when
	// the connection refuses it or the probe (callers may treat that as a
	// lost message, but not the first two).
	Send(ctx context.Context, m gossip.Message) error

	// Messages returns the channel the node's messages arrive on. It is
	// buffered ([Options.Buffer] messages, [Options.BufferBytes] bytes of
	// payload and attachment); when it is full, arriving messages are
	// dropped and counted in Stats.Overflow rather than blocking the
	// network (gossip tolerates loss; a stalled receiver must not stall
	// the connection every other node shares). Only well-formed messages of
	// the endpoint's group (same wire version and configuration hash)
	// addressed to its node arrive, and only fresh ones: bound to this
	// endpoint's incarnation, and not seen before. Close closes the
	// channel.
	Messages() <-chan gossip.Message

	// Stats returns this endpoint's counts.
	Stats() Stats

	// Err returns nil while the endpoint may take part in its group, and
	// an error wrapping ErrDuplicateID once it has found another endpoint
	// holding its node (see the package documentation, "Claims"). From
	// then on Send fails with that error, messages queued for unknown
	// peers are discarded (Stats.Unsent) and probes are no longer
	// answered; messages that arrive are still delivered. The error is
	// permanent: the layer above should close the endpoint and report it
	// (the node is misconfigured). Close does not set it.
	Err() error

	// Foreign returns the peers found running another configuration of the
	// group since the last call, from the configuration notices they sent:
	// a peer sends one when it drops a message of this endpoint's for its
	// configuration hash, and answers this endpoint's first notice with
	// one (see the wire format, "Configuration notices"). Only endpoints
	// whose Group has a Describe send notices. Each peer is reported again
	// only when what is known of it changes; at most 1,024 peers are
	// remembered.
	Foreign() []ForeignConfig

	// Authenticated reports whether the endpoint's messages carry a MAC
	// under a group key (Options.Key), so that a message's From is its
	// sender.
	Authenticated() bool

	// Online reports whether the endpoint can reach the network now: for
	// NATS, whether the connection is up (false while it reconnects after
	// a server went away); for Memory, false during [Memory.Outage]. A
	// member that cannot reach the network hears nobody and is heard by
	// nobody, so its neighbours' silence is no evidence against them: the
	// aggregate driver does not advance its failure detection meanwhile.
	Online() bool

	// Close stops receiving and closes the Messages channel. It does not
	// wait for the peers' sessions: messages still queued for peers whose
	// incarnation is unknown are discarded, never sent, and each is
	// counted in Stats.Unsent. It is safe to call more than once. Opening
	// the node again makes a new incarnation.
	Close() error
}

// Stats counts what happened to messages at an endpoint (or, summed, at a
// transport). Sending and receiving sides count separately: a message sent
// by one endpoint and received by another is counted once in Sent and once
// in Received. Sent, Received, Lost, Crashed and Unsent count application
// messages only (what Send was given); the handshake messages of the
// session layer are counted in Probes and Answers, those of the claims in
// Claims. The drop counters (Malformed to Overflow) count whatever
// arrived.
type Stats struct {
	Sent       uint64 // handed to the network (a message queued for an unknown peer: when its session is established)
	Received   uint64 // delivered to the Messages channel
	Lost       uint64 // dropped at Send by injected loss ([Options.Loss]), or sent during a [Memory.Outage] (and counted in Sent too)
	Crashed    uint64 // vanished at a crashed node ([Memory.Crash]): sent by it (and counted in Sent) or sent to it
	Malformed  uint64 // arrived but failed to decode
	Foreign    uint64 // decoded but another wire version, configuration hash or addressee, sender incarnation 0, or signed while this side has no key
	Forged     uint64 // failed authentication under the group key ([Options.Key]): no MAC, or a MAC that does not verify
	Replayed   uint64 // bound to another incarnation of this endpoint, or a duplicate: a replay or a message from before a restart (see [ReplayWindow])
	Overflow   uint64 // arrived while the Messages buffer was full ([Options.Buffer] messages or [Options.BufferBytes] bytes)
	Unsent     uint64 // queued for a peer whose incarnation was unknown, then discarded: the queue was full ([SessionQueue]; the oldest goes) or the endpoint closed
	Probes     uint64 // session probes sent (handshake)
	Answers    uint64 // probe answers sent (handshake)
	Sessions   uint64 // peer incarnations learned (the first from each peer, and again after each restart of it), counted before the messages queued for the peer are sent
	Claims     uint64 // claims of the endpoint's own node sent (one per NATS Open), and replies to other incarnations of the node that claimed it or answered (see "Claims")
	Duplicates uint64 // other endpoints found holding the endpoint's node (each once): from the first, Err and Send report ErrDuplicateID
	Fragments  uint64 // fragments sent: each message longer than the network's frame limit counts once per fragment (see "Fragments")
	Incomplete uint64 // fragmented messages given up before all their fragments arrived, to keep within [Options.Reassembly]
	Notices    uint64 // configuration notices sent to peers that sent a message under another configuration hash (see [Endpoint.Foreign])
}

// Dropped is the number of arrived messages that were not delivered:
// malformed, foreign, forged, replayed, overflowing or incomplete.
func (s Stats) Dropped() uint64 {
	return s.Malformed + s.Foreign + s.Forged + s.Replayed + s.Overflow + s.Incomplete
}

// Group names a set of nodes that gossip together and fixes their subjects:
// node i of the group receives on "<Prefix>.<Name>.<i>".
type Group struct {
	// Prefix is the first subject token(s); empty means [DefaultPrefix].
	// It may contain dots ("acme.gossip"), but no empty token, wildcard
	// ('*', '>') or white space.
	Prefix string
	// Name is the group's subject token: one non-empty token without dots,
	// wildcards or white space.
	Name string
	// ConfigHash is carried by every message of the group; messages with
	// another hash are dropped and counted as foreign.
	ConfigHash uint64
	// Describe is the configuration behind ConfigHash in a form the layer
	// above can compare (package aggregate writes "key=value" lines). When
	// it is set (at most [MaxNotice] bytes), an endpoint that drops a
	// message of another configuration answers its sender with a
	// configuration notice carrying it (see [Endpoint.Foreign]); when it
	// is empty, no notice is sent.
	Describe string
}

// Subject returns the subject node id of the group receives on.
func (g Group) Subject(id gossip.NodeID) string {
	return g.subjectBase() + id.String()
}

// Wildcard returns the subject that matches every node of the group, for
// monitoring ("gossipreduce.<group>.*").
func (g Group) Wildcard() string { return g.subjectBase() + "*" }

func (g Group) subjectBase() string {
	p := g.Prefix
	if p == "" {
		p = DefaultPrefix
	}
	return p + "." + g.Name + "."
}

// Validate checks that the group's prefix and name make valid subjects. The
// error wraps [gossip.ErrInvalidConfig].
func (g Group) Validate() error {
	if g.Prefix != "" {
		for tok := range strings.SplitSeq(g.Prefix, ".") {
			if err := checkToken(tok); err != nil {
				return fmt.Errorf("transport: %w: subject prefix %q: %v", gossip.ErrInvalidConfig, g.Prefix, err)
			}
		}
	}
	if err := checkToken(g.Name); err != nil {
		return fmt.Errorf("transport: %w: group name %q: %v", gossip.ErrInvalidConfig, g.Name, err)
	}
	if strings.Contains(g.Name, ".") {
		return fmt.Errorf("transport: %w: group name %q contains a dot", gossip.ErrInvalidConfig, g.Name)
	}
	return nil
}

func checkToken(tok string) error {
	if tok == "" {
		return errors.New("empty subject token")
	}
	if i := strings.IndexFunc(tok, func(r rune) bool {
		return r == '*' || r == '>' || unicode.IsSpace(r) || !unicode.IsPrint(r)
	}); i >= 0 {
		return fmt.Errorf("character %q not allowed in a subject token", tok[i:i+1])
	}
	return nil
}

// Options configure either transport.
type Options struct {
	// Buffer is the capacity of each endpoint's Messages channel; zero means
	// [DefaultBuffer].
	Buffer int

	// BufferBytes bounds the bytes (payload words and attachment) of the
	// messages waiting in each endpoint's Messages channel; zero means
	// [DefaultBufferBytes]. A message that would pass it is dropped and
	// counted in Stats.Overflow, as one arriving at a full channel, unless
	// the channel is empty: a single message is always taken.
	BufferBytes int

	// Reassembly bounds the bytes of incomplete fragmented messages each
	// endpoint keeps (see "Fragments" in the package documentation); zero
	// means [DefaultReassembly]. A message longer than the bound cannot
	// be received.
	Reassembly int

	// Loss is the probability, in [0, 1], that Send drops a message instead
	// of sending it (counted in Stats.Lost), for fault-injection runs. It
	// applies to application messages only: the probes and answers of the
	// session layer are never dropped by it, so that which messages a node
	// loses depends on its own messages and Seed alone, not on the timing
	// of handshakes. (They do vanish at crashed nodes, unopened subjects and
	// lossy networks, which exercises re-probing.)
	Loss float64

	// Seed seeds the loss draws. Node id draws from its own PCG(Seed, id)
	// stream, so the losses of a node are replayed exactly when it sends
	// the same sequence of messages again.
	Seed uint64

	// Logger receives debug records of dropped messages, an error record
	// for each other endpoint found holding an endpoint's node ([ErrDuplicateID])
	// and, for NATS, connection events; nil discards them.
	Logger *slog.Logger

	// Key, if set, is the group key (at least [MinKeyLen] bytes; every
	// member of a group must use the same): every message sent carries a
	// MAC under it, and a message arriving without a valid MAC is dropped
	// and counted in Stats.Forged. Without a key, a message that carries a
	// MAC is dropped and counted as foreign, so that a group whose members
	// disagree on having a key fails visibly. See the package's wire format
	// for what the MAC does and does not protect against. The transport
	// keeps its own copy.
	Key []byte

	timing *sessionTiming // nil: the default session intervals (tests only)
}

func (o Options) withDefaults() (Options, error) {
	if o.Buffer < 0 {
		return o, fmt.Errorf("transport: %w: negative buffer %d", gossip.ErrInvalidConfig, o.Buffer)
	}
	if o.Buffer == 0 {
		o.Buffer = DefaultBuffer
	}
	if o.BufferBytes < 0 {
		return o, fmt.Errorf("transport: %w: negative buffer bound %d bytes", gossip.ErrInvalidConfig, o.BufferBytes)
	}
	if o.BufferBytes == 0 {
		o.BufferBytes = DefaultBufferBytes
	}
	if o.Reassembly < 0 {
		return o, fmt.Errorf("transport: %w: negative reassembly bound %d", gossip.ErrInvalidConfig, o.Reassembly)
	}
	if o.Reassembly == 0 {
		o.Reassembly = DefaultReassembly
	}
	if !(o.Loss >= 0 && o.Loss <= 1) { // also rejects NaN
		return o, fmt.Errorf("transport: %w: loss probability %v outside [0, 1]", gossip.ErrInvalidConfig, o.Loss)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if len(o.Key) > 0 && len(o.Key) < MinKeyLen {
		return o, fmt.Errorf("transport: %w: group key of %d bytes, want at least %d", gossip.ErrInvalidConfig, len(o.Key), MinKeyLen)
	}
	return o, nil
}

// Counter indices into a counters array.
const (
	cSent = iota
	cReceived
	cLost
	cCrashed
	cMalformed
	cForeign
	cForged
	cReplayed
	cOverflow
	cUnsent
	cProbes
	cAnswers
	cSessions
	cClaims
	cDuplicates
	cFragments
	cIncomplete
	cNotices
	numCounters
)

type counters [numCounters]atomic.Uint64

func (c *counters) snapshot() Stats {
	return Stats{
		Sent:       c[cSent].Load(),
		Received:   c[cReceived].Load(),
		Lost:       c[cLost].Load(),
		Crashed:    c[cCrashed].Load(),
		Malformed:  c[cMalformed].Load(),
		Foreign:    c[cForeign].Load(),
		Forged:     c[cForged].Load(),
		Replayed:   c[cReplayed].Load(),
		Overflow:   c[cOverflow].Load(),
		Unsent:     c[cUnsent].Load(),
		Probes:     c[cProbes].Load(),
		Answers:    c[cAnswers].Load(),
		Sessions:   c[cSessions].Load(),
		Claims:     c[cClaims].Load(),
		Duplicates: c[cDuplicates].Load(),
		Fragments:  c[cFragments].Load(),
		Incomplete: c[cIncomplete].Load(),
		Notices:    c[cNotices].Load(),
	}
}

// publishFunc hands one message, encoded by endpoint from and addressed to
// node to of from's group, to the network. It must not keep raw after it
// returns.
type publishFunc func(from *endpoint, to gossip.NodeID, raw []byte) error

// hub is the part both transports share: the open endpoints by subject, the
// transport's total counts and its options.
type hub struct {
	opts    Options
	mac     *macKey // nil without a group key
	publish publishFunc
	online  func() bool // whether the network is reachable; nil: always
	total   counters

	probeEvery, answerEvery time.Duration // session intervals
	claimWait               time.Duration // how long NATS Open waits for an answer to its claim; 0: twice the round trip, within bounds

	mu     sync.Mutex
	eps    map[string]*endpoint
	chs    map[*channel]struct{} // open channels
	closed bool
}

func newHub(opts Options, publish publishFunc) (*hub, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	h := &hub{opts: opts, publish: publish, eps: map[string]*endpoint{},
		probeEvery: defaultProbeEvery, answerEvery: defaultAnswerEvery}
	if t := opts.timing; t != nil {
		h.probeEvery, h.answerEvery, h.claimWait = t.probeEvery, t.answerEvery, t.claimWait
	}
	if len(opts.Key) > 0 {
		if h.mac, err = newMACKey(opts.Key); err != nil {
			return nil, err
		}
		h.opts.Key = nil // the only copy is the macKey's
	}
	return h, nil
}

// add registers a new endpoint for node id of g. Memory delivers to it from
// then on; NATS subscribes and then hands the subscription to attach.
func (h *hub) add(ctx context.Context, g Group, id gossip.NodeID) (*endpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("transport: open %s: %w", g.Subject(id), err)
	}
	if err := g.Validate(); err != nil {
		return nil, err
	}
	e := &endpoint{
		hub:     h,
		group:   g,
		id:      id,
		base:    g.subjectBase(),
		subject: g.Subject(id),
		inc:     newIncarnation(),
		rng:     rand.New(rand.NewPCG(h.opts.Seed, uint64(id))),
		ch:      make(chan gossip.Message, h.opts.Buffer),
		qmax:    h.opts.BufferBytes,
		peers:   map[gossip.NodeID]*peer{},
		dup:     make(chan struct{}),
		frag:    newFragmenter(),
		reasm:   newReassembler(h.opts.Reassembly),
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, fmt.Errorf("transport: open %s: %w", e.subject, ErrClosed)
	}
	holder := h.eps[e.subject]
	if holder == nil {
		h.eps[e.subject] = e
	}
	h.mu.Unlock()
	if holder != nil {
		// The transport sees every endpoint it hosts: this is the claim
		// answered at once, and both sides refuse, as across processes.
		holder.markDuplicate(e.inc)
		return nil, fmt.Errorf("transport: open %s: %w: %w: node %d of group %q is already open on this transport", e.subject, ErrDuplicateID, gossip.ErrInvalidConfig, id, g.Name)
	}
	return e, nil
}

// lookup returns the open endpoint for subject, or nil.
func (h *hub) lookup(subject string) *endpoint {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.eps[subject]
}

func (h *hub) remove(e *endpoint) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.eps[e.subject] == e {
		delete(h.eps, e.subject)
	}
}

// closeAll marks the hub closed and closes every endpoint.
func (h *hub) closeAll() error {
	h.mu.Lock()
	h.closed = true
	eps := make([]*endpoint, 0, len(h.eps))
	for _, e := range h.eps {
		eps = append(eps, e)
	}
	chs := make([]*channel, 0, len(h.chs))
	for c := range h.chs {
		chs = append(chs, c)
	}
	h.mu.Unlock()
	for _, c := range chs {
		_ = c.Close()
	}
	var errs []error
	for _, e := range eps {
		errs = append(errs, e.Close())
	}
	return errors.Join(errs...)
}

// endpoint implements Endpoint for both transports; they differ only in
// how a message is published (hub.publish) and how arriving bytes reach
// deliver. The session layer (session.go) sits between Send and publish,
// and between deliver and the Messages channel.
type endpoint struct {
	hub           *hub
	group         Group
	id            gossip.NodeID
	base, subject string
	inc           uint64 // this endpoint's incarnation, never 0
	own           counters

	rngMu sync.Mutex
	rng   *rand.Rand

	mu     sync.Mutex // guards closed, detach, the queue sizes, and sends on ch against close(ch)
	closed bool
	ch     chan gossip.Message
	// qsize holds the sizes of the messages sent on ch, oldest first, and
	// qbytes their sum, counting only those still in ch: a channel is
	// first in, first out, so the len(qsize)-len(ch) oldest have been
	// taken (see queued).
	qsize  []int
	qbytes int
	qmax   int          // Options.BufferBytes
	detach func() error // stops the arrival of messages; set by the transport

	smu   sync.Mutex // guards peers, sclosed, self and the retries; never held across a publish
	peers map[gossip.NodeID]*peer

	retries    retryQueue  // the peers' pending probe retries, earliest first
	retryTimer *time.Timer // fires at the earliest; nil until first armed
	retryArmed time.Time   // when retryTimer fires; zero: not set
	sclosed    bool        // the session layer is closed: nothing is queued or answered
	self       identity    // the claims of this endpoint's node (session.go)

	dup chan struct{} // closed when self.err is set

	frag  *fragmenter  // numbers the messages this endpoint sends in fragments
	reasm *reassembler // the fragmented messages arriving in part

	foreign foreignSet // peers seen running another configuration (notice.go)
}

// attach sets the hook that stops the arrival of messages. It fails with
// ErrClosed, without setting it, when the endpoint was closed meanwhile (the
// transport closing under a concurrent Open).
func (e *endpoint) attach(detach func() error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return fmt.Errorf("transport: open %s: %w", e.subject, ErrClosed)
	}
	e.detach = detach
	return nil
}

// bufPool holds Send's encoding buffers; buffers grown past maxPooled by
// a huge payload are left to the garbage collector.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

const maxPooled = 64 << 10

func (e *endpoint) ID() gossip.NodeID               { return e.id }
func (e *endpoint) Messages() <-chan gossip.Message { return e.ch }
func (e *endpoint) Stats() Stats                    { return e.own.snapshot() }

func (e *endpoint) Authenticated() bool { return e.hub.mac != nil }

func (e *endpoint) Online() bool { return e.hub.online == nil || e.hub.online() }

func (e *endpoint) Err() error {
	e.smu.Lock()
	defer e.smu.Unlock()
	return e.self.err
}

func (e *endpoint) count(i int) { e.countN(i, 1) }

func (e *endpoint) countN(i int, n uint64) {
	e.own[i].Add(n)
	e.hub.total[i].Add(n)
}

func (e *endpoint) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

func (e *endpoint) Send(ctx context.Context, m gossip.Message) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("transport: send from %s: %w", e.subject, err)
	}
	if e.isClosed() {
		return fmt.Errorf("transport: send from %s: %w", e.subject, ErrClosed)
	}
	if m.From != e.id {
		return fmt.Errorf("transport: %w: message from node %d sent through the endpoint of node %d", gossip.ErrForeignMessage, m.From, e.id)
	}
	if err := checkEncodable(Header{}, m); err != nil {
		return fmt.Errorf("transport: send from %s: %w", e.subject, err)
	}
	return e.sessionSend(m, e.lose())
}

// publish encodes h and m, signed if the group has a key, and hands them
// to the network.
func (e *endpoint) publish(h Header, m gossip.Message) error {
	bp := bufPool.Get().(*[]byte)
	var raw []byte
	var err error
	if mk := e.hub.mac; mk != nil {
		raw, err = mk.encode((*bp)[:0], h, m)
	} else {
		raw, err = encode((*bp)[:0], h, m, 0)
	}
	if cap(raw) <= maxPooled {
		*bp = raw
		defer bufPool.Put(bp)
	}
	if err != nil {
		return err
	}
	return e.hub.publish(e, m.To, raw)
}

// lose draws whether injected loss drops the next message.
func (e *endpoint) lose() bool {
	p := e.hub.opts.Loss
	if p == 0 {
		return false
	}
	e.rngMu.Lock()
	defer e.rngMu.Unlock()
	return e.rng.Float64() < p
}

// deliver decodes arriving bytes and queues the message, dropping and
// counting anything malformed, foreign, forged, replayed or overflowing,
// and handing handshake messages to the session layer. It never blocks on
// the receiver.
func (e *endpoint) deliver(raw []byte) {
	if isFragment(raw) {
		if raw = e.reassemble(raw); raw == nil {
			return
		}
	}
	h, m, err := Decode(raw)
	mk := e.hub.mac
	switch {
	case errors.Is(err, ErrVersion):
		e.drop(cForeign, err.Error())
		return
	case err != nil:
		e.drop(cMalformed, err.Error())
		return
	case mk != nil:
		if err := mk.verify(raw, h); err != nil {
			e.drop(cForged, err.Error())
			return
		}
	case h.Signed:
		e.drop(cForeign, "the message carries a MAC but this endpoint has no group key")
		return
	}
	switch {
	case m.To != e.id:
		e.drop(cForeign, "addressed to node "+m.To.String())
		return
	case h.Notice:
		e.receiveNotice(h, m)
		return
	case h.ConfigHash != e.group.ConfigHash:
		e.dropForeign(h, m)
		return
	}
	if !e.receive(h, m.From) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	// Every send on ch happens here, under mu, so a free slot stays free
	// until the send below; counting first means a receiver that has the
	// message also sees it counted.
	size := 8*len(m.Payload) + len(m.Attach)
	if len(e.ch) == cap(e.ch) || (len(e.ch) > 0 && e.queued()+size > e.qmax) {
		e.count(cOverflow)
		return
	}
	e.count(cReceived)
	e.qsize = append(e.qsize, size)
	e.qbytes += size
	e.ch <- m
}

// queued returns the bytes of the messages still in ch, forgetting those
// the receiver has taken. Called with mu held.
func (e *endpoint) queued() int {
	taken := len(e.qsize) - len(e.ch)
	for _, n := range e.qsize[:taken] {
		e.qbytes -= n
	}
	e.qsize = append(e.qsize[:0], e.qsize[taken:]...)
	return e.qbytes
}

// reassemble takes one fragment and returns the message it completes, or
// nil, dropping and counting a malformed fragment and the incomplete
// messages given up.
func (e *endpoint) reassemble(raw []byte) []byte {
	f, err := parseFragment(raw)
	switch {
	case errors.Is(err, ErrVersion):
		e.drop(cForeign, err.Error())
		return nil
	case err != nil:
		e.drop(cMalformed, err.Error())
		return nil
	}
	whole, evicted := e.reasm.add(f)
	if evicted > 0 {
		e.countN(cIncomplete, uint64(evicted))
		e.hub.opts.Logger.Debug("transport: gave up incomplete fragmented messages", "subject", e.subject, "messages", evicted, "limit", e.hub.opts.Reassembly)
	}
	return whole
}

// sendFrames hands raw to send whole when it fits in frame bytes, and in
// fragments otherwise, counting them.
func (e *endpoint) sendFrames(raw []byte, frame int, send func([]byte) error) error {
	if len(raw) <= frame {
		return send(raw)
	}
	return e.frag.split(uint64(e.id), raw, frame, func(b []byte) error {
		e.count(cFragments)
		return send(b)
	})
}

func (e *endpoint) drop(i int, why string) {
	e.count(i)
	e.hub.opts.Logger.Debug("transport: dropped message", "subject", e.subject, "reason", why)
}

func (e *endpoint) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	close(e.ch)
	detach := e.detach
	e.mu.Unlock()
	e.closeSessions()
	e.hub.remove(e)
	if detach != nil {
		if err := detach(); err != nil {
			return fmt.Errorf("transport: close %s: %w", e.subject, err)
		}
	}
	return nil
}
