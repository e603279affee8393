package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gossipreduce/gossipreduce/aggregate"
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
	opts := cfg.opts
	// Every choice comes from the case seed. The draws of the faults
	// that came first keep their order, so that an old seed still makes
	// the same schedule of them.
	rng := rand.New(rand.NewPCG(cs, 0x11fe))
	has := func(s string) bool { return slices.Contains(cfg.scenarios, s) && rng.IntN(2) == 0 }
	n := 3 + rng.IntN(10)
	var sched []string
	note := func(format string, a ...any) { sched = append(sched, fmt.Sprintf(format, a...)) }
	loss := 0.0
	if has("loss") {
		loss = []float64{0.01, 0.05, 0.2}[rng.IntN(3)]
		note("loss %g", loss)
	}
	f := livegroup.Faults{FlipBit: -1, CrashAfter: 5 + rng.IntN(60)}
	if has("crash") && n > 4 {
		f.Crash = append(f.Crash, gossip.NodeID(1+rng.IntN(n-1)))
	}
	if has("root-crash") {
		f.Crash = append(f.Crash, 0)
	}
	if len(f.Crash) > 0 {
		note("members %v leave after %d messages", f.Crash, f.CrashAfter)
	}
	inputs := drawChaosInputs(rng, n)
	tmpl := aggregate.Config{Group: fmt.Sprintf("chaos%d", cs), Prefix: cfg.prefix, Algorithm: cfg.algo, Seed: cs, Suspect: 300 * time.Millisecond}
	forge := has("forge")
	var forgeSalt uint64
	if forge {
		forgeSalt = rng.Uint64()
		note("forged results at 2 kHz")
	}
	key := opts.Key // --key-file's, if any
	var rp *replayPlan
	if has("replay") {
		if key == nil {
			// A replayer without the key would be a forger: this group
			// has one, and so had the run it was recorded in.
			key = make([]byte, 32)
			for i := range key {
				key[i] = byte(rng.Uint32())
			}
		}
		rp = &replayPlan{inputs: drawChaosInputs(rng, n)}
		for range 2 + rng.IntN(3) {
			rp.at = append(rp.at, rng.IntN(40))
		}
		slices.Sort(rp.at)
		note("traffic of an earlier operation of the group (same key, other members and inputs) replayed when a member has sent %v messages", rp.at)
	}
	restartAt, down := -1, time.Duration(0)
	if has("restart") {
		restartAt = 1 + rng.IntN(30)
		down = time.Duration(100+rng.IntN(701)) * time.Millisecond
		note("NATS server restarts when a member has sent %d messages, down %v", restartAt, down)
	}
	schedule := fmt.Sprintf("nodes %d: %s", n, strings.Join(sched, "; "))

	var cn chaosNet
	if cfg.memory {
		cn = newMemChaosNet()
	} else {
		nn, err := newNATSChaosNet(ctx, opts, cfg.urls)
		if err != nil {
			return err
		}
		cn = nn
	}
	defer cn.close()

	check := func(o *livegroup.Outcome, inputs [][]float64, schedule string) {
		outs := map[gossip.NodeID]member.Outcome{}
		failed := 0
		for j := range n {
			outs[gossip.NodeID(j)] = member.Outcome{Result: o.Results[j], Err: o.Errs[j]}
			if o.Errs[j] != nil {
				failed++
			}
		}
		res.Failed += failed
		res.Operations++
		if vs := member.Check(n, 1, inputs, outs, 1e-9); len(vs) > 0 {
			c := simnet.Case{Seed: cs, Schedule: schedule, Operations: 1, Failed: failed, Violations: vs}
			res.Violations += len(vs)
			res.Cases = append(res.Cases, c)
			reportCase(stderr, c)
		}
	}

	if rp != nil {
		if err := rp.record(ctx, cn, tmpl, key, cs); err != nil {
			return err
		}
		check(rp.first, rp.inputs, fmt.Sprintf("nodes %d: the recorded operation of a replay case (no faults)", n))
	}

	tr, err := cn.open(ctx, transport.Options{Loss: loss, Seed: cs, Key: key})
	if err != nil {
		return err
	}
	trig := &sentTrigger{}
	if rp != nil {
		for _, at := range rp.at {
			trig.add(at, func() { rp.replay(cn) })
		}
	}
	var restartErr error
	if restartAt >= 0 {
		trig.add(restartAt, func() {
			t0 := time.Now()
			restartErr = cn.restart(ctx, down)
			if restartErr == nil && res.Restart != nil {
				res.Restart.Restarts++
				res.Restart.Down += time.Since(t0).Seconds()
			}
		})
	}
	var stopForger func()
	var forgeErr error
	if forge {
		// The forger starts with the operation, when every member has
		// joined: its endpoints take the members' ids, and a transport
		// that refuses a second endpoint of a node would refuse the
		// member that came second.
		trig.add(0, func() {
			out, err := cn.open(ctx, transport.Options{})
			if err != nil {
				forgeErr = err
				return
			}
			stopForger = forgeResults(ctx, out, cfg.prefix, tmpl.Group, cfg.algo, n, forgeSalt)
		})
	}
	if len(trig.events) > 0 {
		// Crashing members get their own injector (runGroup); the others
		// fire the trigger.
		tmpl.Injector = func(uint64) gossip.Injector { return trig }
	}
	o, err := runGroup(ctx, tr, tmpl, inputs, f, liveOpTimeout)
	trig.wait() // the last replay or restart may still run
	if stopForger != nil {
		stopForger()
	}
	if err := errors.Join(err, forgeErr, restartErr); err != nil {
		return err
	}
	st := tr.Stats()
	if restartAt >= 0 && res.Restart != nil {
		if nt, ok := tr.(*transport.NATS); ok {
			res.Restart.Reconnects += nt.Conn().Stats().Reconnects
		}
	}
	if rp != nil && res.Replay != nil {
		r := res.Replay
		if rp.bursts.Load() > 0 {
			r.Operations++
		}
		r.Recorded += len(rp.rec)
		r.Injected += int(rp.injected.Load())
		r.Probes += int(rp.probes.Load())
		r.Dropped += st.Replayed
		r.Forged += st.Forged
	}
	check(o, inputs, schedule)
	return nil
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
