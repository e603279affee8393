package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/algo"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/livegroup"
	"github.com/gossipreduce/gossipreduce/member"
	"github.com/gossipreduce/gossipreduce/member/simnet"
	"github.com/gossipreduce/gossipreduce/transport"
)

// liveOpTimeout bounds one live chaos operation.
const liveOpTimeout = 8 * time.Second

// liveChaosConfig is what the flags say about a live campaign.
type liveChaosConfig struct {
	opts      transport.NATSOptions // credentials, TLS and the key of --key-file
	prefix    string                // --prefix
	urls      []string              // external servers; none: an embedded one (or memory)
	memory    bool                  // the memory network instead of NATS
	algo      string
	scenarios []string
	ops       int
	seed      uint64
}

// liveChaos runs groups of real members (package aggregate) over NATS or
// the memory transport, one case after another, each with faults drawn
// from its seed, until ops operations have been checked, and checks every
// operation against the safety invariant. Violating cases are printed to
// stderr as they are found.
func liveChaos(ctx context.Context, cfg liveChaosConfig, res *chaosOutput, stderr io.Writer, prog *progress) error {
	for i := 0; res.Operations < cfg.ops; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := liveCase(ctx, cfg, cfg.seed+uint64(i), res, stderr); err != nil {
			return err
		}
		prog.update(min(res.Operations, cfg.ops), cfg.ops)
	}
	return nil
}

// liveCase runs the case of seed cs: one operation of a fresh group under
// the faults drawn from cs, preceded, for "replay", by an operation of the
// same group whose traffic is recorded and replayed into it.
func liveCase(ctx context.Context, cfg liveChaosConfig, cs uint64, res *chaosOutput, stderr io.Writer) error {
	c := drawCase(cfg, cs)
	cn, err := openChaosNet(ctx, cfg)
	if err != nil {
		return err
	}
	defer cn.close()
	if c.rp != nil {
		if err := c.rp.record(ctx, cn, c.tmpl, c.key, cs); err != nil {
			return err
		}
		c.check(res, stderr, c.rp.first, c.rp.inputs, fmt.Sprintf("nodes %d: the recorded operation of a replay case (no faults)", c.n))
	}
	tr, err := cn.open(ctx, transport.Options{Loss: c.loss, Seed: cs, Key: c.key})
	if err != nil {
		return err
	}
	o, err := c.run(ctx, cn, tr, res)
	if err != nil {
		return err
	}
	c.count(tr, res)
	c.check(res, stderr, o, c.inputs, c.schedule)
	return nil
}

// chaosCase is one live case: its group and the faults drawn for it.
type chaosCase struct {
	seed      uint64
	n         int
	loss      float64
	faults    livegroup.Faults
	inputs    [][]float64
	tmpl      aggregate.Config
	algo      string
	forge     bool
	forgeSalt uint64
	key       []byte      // the group key: --key-file's, or one for a replay
	rp        *replayPlan // the replay, or nil
	restartAt int         // messages sent when the server restarts; -1: never
	down      time.Duration
	schedule  string // the faults, as reported
}

// drawCase draws the case of seed cs. Every choice comes from the case
// seed. The draws of the faults that came first keep their order, so that
// an old seed still makes the same schedule of them.
func drawCase(cfg liveChaosConfig, cs uint64) *chaosCase {
	rng := rand.New(rand.NewPCG(cs, 0x11fe))
	has := func(s string) bool { return slices.Contains(cfg.scenarios, s) && rng.IntN(2) == 0 }
	c := &chaosCase{seed: cs, n: 3 + rng.IntN(10), algo: cfg.algo, key: cfg.opts.Key, restartAt: -1}
	var sched []string
	note := func(format string, a ...any) { sched = append(sched, fmt.Sprintf(format, a...)) }
	if has("loss") {
		c.loss = []float64{0.01, 0.05, 0.2}[rng.IntN(3)]
		note("loss %g", c.loss)
	}
	// Message counts that fall inside an operation: a gossip member sends
	// hundreds, an exchange member 2·log2 N and a few resends.
	span, crashAfter := 60, 5
	if spec, err := algo.Lookup(cfg.algo); err == nil && spec.Finite {
		span, crashAfter = 2*bits.Len(uint(c.n-1))+2, 0
	}
	c.faults = livegroup.Faults{FlipBit: -1, CrashAfter: crashAfter + rng.IntN(span)}
	if has("crash") && c.n > 4 {
		c.faults.Crash = append(c.faults.Crash, gossip.NodeID(1+rng.IntN(c.n-1)))
	}
	if has("root-crash") {
		c.faults.Crash = append(c.faults.Crash, 0)
	}
	if len(c.faults.Crash) > 0 {
		note("members %v leave after %d messages", c.faults.Crash, c.faults.CrashAfter)
	}
	c.inputs = drawChaosInputs(rng, c.n)
	c.tmpl = aggregate.Config{Group: fmt.Sprintf("chaos%d", cs), Prefix: cfg.prefix, Algorithm: cfg.algo, Seed: cs, Suspect: 300 * time.Millisecond}
	if c.forge = has("forge"); c.forge {
		c.forgeSalt = rng.Uint64()
		note("forged results at 2 kHz")
	}
	if has("replay") {
		c.drawReplay(rng, span*2/3)
		note("traffic of an earlier operation of the group (same key, other members and inputs) replayed when a member has sent %v messages", c.rp.at)
	}
	if has("restart") {
		c.restartAt = 1 + rng.IntN(span/2)
		c.down = time.Duration(100+rng.IntN(701)) * time.Millisecond
		note("NATS server restarts when a member has sent %d messages, down %v", c.restartAt, c.down)
	}
	c.schedule = fmt.Sprintf("nodes %d: %s", c.n, strings.Join(sched, "; "))
	return c
}

// drawReplay draws the replay of the case: the recorded operation's
// inputs and the moments of the bursts (within span messages), and a group
// key if it has none.
func (c *chaosCase) drawReplay(rng *rand.Rand, span int) {
	if c.key == nil {
		// A replayer without the key would be a forger: this group has
		// one, and so had the run it was recorded in.
		c.key = make([]byte, 32)
		for i := range c.key {
			c.key[i] = byte(rng.Uint32())
		}
	}
	c.rp = &replayPlan{inputs: drawChaosInputs(rng, c.n)}
	for range 2 + rng.IntN(3) {
		c.rp.at = append(c.rp.at, rng.IntN(span))
	}
	slices.Sort(c.rp.at)
}

// openChaosNet opens the network of a case: memory, or NATS.
func openChaosNet(ctx context.Context, cfg liveChaosConfig) (chaosNet, error) {
	if cfg.memory {
		return newMemChaosNet(), nil
	}
	return newNATSChaosNet(ctx, cfg.opts, cfg.urls)
}

// run runs the case's operation over tr, firing the replays, the restart
// and the forger as members reach their message counts.
func (c *chaosCase) run(ctx context.Context, cn chaosNet, tr transport.Transport, res *chaosOutput) (*livegroup.Outcome, error) {
	trig := &sentTrigger{}
	if c.rp != nil {
		for _, at := range c.rp.at {
			trig.add(at, func() { c.rp.replay(cn) })
		}
	}
	var restartErr, forgeErr error
	if c.restartAt >= 0 {
		trig.add(c.restartAt, func() { restartErr = c.restart(ctx, cn, res) })
	}
	var stopForger func()
	if c.forge {
		// The forger starts with the operation, when every member has
		// joined: its endpoints take the members' ids, and a transport
		// that refuses a second endpoint of a node would refuse the
		// member that came second.
		trig.add(0, func() {
			var out transport.Transport
			if out, forgeErr = cn.open(ctx, transport.Options{}); forgeErr == nil {
				stopForger = forgeResults(ctx, out, c.tmpl.Prefix, c.tmpl.Group, c.algo, c.n, c.forgeSalt)
			}
		})
	}
	tmpl := c.tmpl
	if len(trig.events) > 0 {
		// Crashing members get their own injector (runGroup); the others
		// fire the trigger.
		tmpl.Injector = func(uint64) gossip.Injector { return trig }
	}
	o, err := runGroup(ctx, tr, tmpl, c.inputs, c.faults, liveOpTimeout)
	trig.wait() // the last replay or restart may still run
	if stopForger != nil {
		stopForger()
	}
	return o, errors.Join(err, forgeErr, restartErr)
}

// restart restarts the NATS server for the case, counting it in res.
func (c *chaosCase) restart(ctx context.Context, cn chaosNet, res *chaosOutput) error {
	t0 := time.Now()
	if err := cn.restart(ctx, c.down); err != nil {
		return err
	}
	if res.Restart != nil {
		res.Restart.Restarts++
		res.Restart.Down += time.Since(t0).Seconds()
	}
	return nil
}

// count adds to res what the restart and the replay of the case did to
// the members' transport tr.
func (c *chaosCase) count(tr transport.Transport, res *chaosOutput) {
	if c.restartAt >= 0 && res.Restart != nil {
		if nt, ok := tr.(*transport.NATS); ok {
			res.Restart.Reconnects += nt.Conn().Stats().Reconnects
		}
	}
	if c.rp == nil || res.Replay == nil {
		return
	}
	r := res.Replay
	if c.rp.bursts.Load() > 0 {
		r.Operations++
	}
	r.Recorded += len(c.rp.rec)
	r.Injected += int(c.rp.injected.Load())
	r.Probes += int(c.rp.probes.Load())
	st := tr.Stats()
	r.Dropped += st.Replayed
	r.Forged += st.Forged
}

// check checks one operation of the case against the safety invariant,
// counting it in res and reporting a violation on stderr at once.
func (c *chaosCase) check(res *chaosOutput, stderr io.Writer, o *livegroup.Outcome, inputs [][]float64, schedule string) {
	outs := map[gossip.NodeID]member.Outcome{}
	failed := 0
	for j := range c.n {
		outs[gossip.NodeID(j)] = member.Outcome{Result: o.Results[j], Err: o.Errs[j]}
		if o.Errs[j] != nil {
			failed++
		}
	}
	res.Failed += failed
	res.Operations++
	if vs := member.Check(c.n, 1, inputs, outs, 1e-9); len(vs) > 0 {
		cs := simnet.Case{Seed: c.seed, Schedule: schedule, Operations: 1, Failed: failed, Violations: vs}
		res.Violations += len(vs)
		res.Cases = append(res.Cases, cs)
		reportCase(stderr, cs)
	}
}

// drawChaosInputs draws the one-component inputs of n members.
func drawChaosInputs(rng *rand.Rand, n int) [][]float64 {
	inputs := make([][]float64, n)
	for j := range inputs {
		inputs[j] = []float64{float64(1 + rng.IntN(1000))}
	}
	return inputs
}

// replayPlan is the "replay" scenario of one case: an operation of the
// group recorded in full, then published again into a later operation of
// the same group, with the same key but new members and inputs, as into
// a restarted deployment, in bursts when the members have sent at
// messages.
type replayPlan struct {
	inputs [][]float64        // of the recorded operation
	at     []int              // burst points, in messages sent by a member
	first  *livegroup.Outcome // the recorded operation's outcome
	rec    []rawMessage       // its traffic
	probe  []bool             // which messages of rec are session probes or claims

	bursts, injected, probes atomic.Int64
}

// record runs the operation to record: a clean run (no loss, no faults)
// of the group with the key over a transport of its own, while the network
// records every message sent to the group's subjects.
func (rp *replayPlan) record(ctx context.Context, cn chaosNet, tmpl aggregate.Config, key []byte, cs uint64) error {
	stop, err := cn.record(ctx, transport.Group{Prefix: tmpl.Prefix, Name: tmpl.Group})
	if err != nil {
		return err
	}
	tr, err := cn.open(ctx, transport.Options{Seed: cs, Key: key})
	if err != nil {
		stop()
		return err
	}
	o, err := runGroup(ctx, tr, tmpl, rp.inputs, livegroup.None, liveOpTimeout)
	tr.Close() // flushes what the members sent
	rp.rec = stop()
	if err != nil {
		return err
	}
	rp.first = o
	rp.probe = make([]bool, len(rp.rec))
	for i, m := range rp.rec {
		// Session probes (and claims, From = To) name no receiver
		// incarnation: they are answered, not dropped.
		h, _, err := transport.Decode(m.raw)
		rp.probe[i] = err == nil && h.Handshake && h.PeerIncarnation == 0
	}
	return nil
}

// replay publishes the whole recording, in its order, into the network.
func (rp *replayPlan) replay(cn chaosNet) {
	rp.bursts.Add(1)
	for i, m := range rp.rec {
		if cn.inject(m.subject, m.raw) {
			rp.injected.Add(1)
			if rp.probe[i] {
				rp.probes.Add(1)
			}
		}
	}
}

// sentTrigger is a gossip.Injector that runs each of its events, once, on
// a goroutine of its own, as soon as any member it is installed on has
// sent the event's number of messages.
type sentTrigger struct {
	mu     sync.Mutex
	events []sentEvent
	wg     sync.WaitGroup
}

type sentEvent struct {
	at    int
	fire  func()
	fired bool
}

// add registers fire for when a member has sent at messages.
func (t *sentTrigger) add(at int, fire func()) {
	t.events = append(t.events, sentEvent{at: at, fire: fire})
}

func (t *sentTrigger) InjectMessage(gossip.InjectPoint, *gossip.Message) {}

func (t *sentTrigger) InjectState(p gossip.InjectPoint, _ gossip.Machine) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range t.events {
		if e := &t.events[i]; !e.fired && p.Sent >= e.at {
			e.fired = true
			t.wg.Go(e.fire)
		}
	}
}

// wait waits for the events that fired to finish.
func (t *sentTrigger) wait() { t.wg.Wait() }

// forgeResults publishes through tr (a transport without the group key),
// until stopped, result messages of the group's epoch 1 that no root
// computed (value 1e6, every member live), as a client without the group
// key would: each forger is a fresh endpoint of a member's id that does
// the handshake, so without a group key its messages pass the session
// layer and only the members' own checks stand in the way (with one, they
// fail the MAC). A transport that detects a second endpoint of a node may
// refuse the forger's endpoint, and the member's with it: the member then
// fails, which is safe.
func forgeResults(ctx context.Context, tr transport.Transport, prefix, group, algoName string, n int, salt uint64) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The forger must pass the configuration hash: it opens
		// endpoints as members would, under the members' own ids.
		words := (n + 63) / 64
		payload := append([]float64{1e6, float64(n)}, make([]float64, words)...)
		t := time.NewTicker(500 * time.Microsecond)
		defer t.Stop()
		eps := map[gossip.NodeID]transport.Endpoint{}
		refused := map[gossip.NodeID]bool{}
		rng := rand.New(rand.NewPCG(salt, 7))
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			from := gossip.NodeID(rng.IntN(n))
			to := gossip.NodeID(rng.IntN(n))
			if from == to {
				continue
			}
			ep, ok := eps[from]
			if !ok && !refused[from] {
				cfg := aggregate.Config{Group: group, ID: from, Nodes: n, Algorithm: algoName}
				h, err := cfg.Hash()
				if err != nil {
					return
				}
				ep, err = tr.Open(ctx, transport.Group{Prefix: prefix, Name: group, ConfigHash: h}, from)
				if err != nil {
					// The transport refuses an endpoint of a node
					// another endpoint holds (transport.ErrDuplicateID):
					// that attempt was the attack, try another id.
					refused[from] = true
					continue
				}
				eps[from] = ep
			}
			if ep == nil {
				continue
			}
			_ = ep.Send(ctx, gossip.Message{From: from, To: to, Kind: gossip.KindControl, Epoch: 1, Tag: uint64(from), Payload: payload})
		}
	}()
	return func() {
		cancel()
		<-done
		tr.Close()
	}
}
