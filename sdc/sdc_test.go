package sdc_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
	"github.com/gossipreduce/gossipreduce/pfcc"
	"github.com/gossipreduce/gossipreduce/pushsum"
	"github.com/gossipreduce/gossipreduce/sdc"
	"github.com/gossipreduce/gossipreduce/sim"
)

func TestFlipBit(t *testing.T) {
	assert.Equal(t, -1.5, sdc.FlipBit(1.5, 63), "sign")
	assert.Equal(t, 0.5, sdc.FlipBit(1.0, 52), "1.0 has exponent 0x3ff: clearing its lowest bit halves it")
	assert.Equal(t, math.Nextafter(1, 2), sdc.FlipBit(1.0, 0), "lowest mantissa bit")
	assert.True(t, math.IsInf(sdc.FlipBit(1.0, 62), 1), "1.0 with the top exponent bit set is +Inf")
	assert.Equal(t, 3.0, sdc.FlipBit(3.0, 64), "out of range: unchanged")
	assert.Equal(t, 3.0, sdc.FlipBit(sdc.FlipBit(3.0, 17), 17), "an involution")
}

func TestParseTarget(t *testing.T) {
	for _, name := range []string{"value", "weight", "checksum", "flow", "message", "input"} {
		tg, err := sdc.ParseTarget(name)
		require.NoError(t, err)
		assert.Equal(t, name, tg.String())
	}
	_, err := sdc.ParseTarget("heap")
	assert.ErrorIs(t, err, gossip.ErrInvalidConfig)
}

func names(ws []gossip.Word) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Name())
	}
	return out
}

func TestSelect(t *testing.T) {
	ps, err := pushsum.New(gossip.Config{Overlay: gossiptest.Ring(3), Value: []float64{1}})
	require.NoError(t, err)
	fc, err := pfcc.New(gossip.Config{Overlay: gossiptest.Ring(3), Value: []float64{1}})
	require.NoError(t, err)
	assert.Equal(t, []string{"value[0]"}, names(sdc.Select(ps, sdc.Value, nil)), "no flows: the state")
	assert.Equal(t, []string{"weight"}, names(sdc.Select(ps, sdc.Input, nil)[1:]))
	assert.Empty(t, sdc.Select(ps, sdc.Checksum, nil))
	assert.Equal(t, []string{"flow[1].weight", "flow[2].weight"}, names(sdc.Select(fc, sdc.Weight, nil)))
	assert.Equal(t, []string{"input.value[0]", "input.weight", "input.checksum"}, names(sdc.Select(fc, sdc.Input, nil)))
	assert.Len(t, sdc.Select(fc, sdc.Flow, nil), 6)
	assert.Empty(t, sdc.Select(fc, sdc.Message, nil))
}

func point(node gossip.NodeID, sent, maxSent int, r *rand.Rand) gossip.InjectPoint {
	return gossip.InjectPoint{Node: node, Sent: sent, MaxSent: maxSent, Rand: r}
}

func TestSingleFiresOnceAtTheChosenNode(t *testing.T) {
	s, err := sdc.NewSingle(60, sdc.Weight, 10, 4)
	require.NoError(t, err)
	assert.Equal(t, "single(bit=60 target=weight after=10 nodes=4)", s.String())
	ms := make([]gossip.Machine, 4)
	for i := range ms {
		ms[i], err = pushsum.New(gossip.Config{ID: gossip.NodeID(i), Overlay: gossiptest.Complete(4), Value: []float64{1}})
		require.NoError(t, err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for step := range 40 {
		for i, m := range ms {
			s.InjectState(point(gossip.NodeID(i), step, step, r), m)
		}
	}
	require.Len(t, s.Flips(), 1)
	f := s.Flips()[0]
	assert.Equal(t, "weight", f.Word)
	assert.Equal(t, 10, f.Sent, "fires at the trigger step")
	assert.Equal(t, sdc.FlipBit(1, 60), f.After)
	_, w := ms[f.Node].(*pushsum.Machine).Mass()
	assert.Equal(t, f.After, w)
	fresh := s.Fresh()
	assert.Empty(t, fresh.Flips())
	assert.Equal(t, s.String(), fresh.String())

	_, err = sdc.NewSingle(64, sdc.Value, 0, 0)
	assert.ErrorIs(t, err, gossip.ErrInvalidConfig)
}

func TestSingleFlipsAMessage(t *testing.T) {
	s, err := sdc.NewSingle(63, sdc.Message, 0, 0)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(1, 2))
	m := gossip.Message{To: 3, Kind: gossip.KindCheckedFlow, Payload: []float64{1, 2, 3}}
	s.InjectMessage(point(0, 0, 0, r), &m)
	s.InjectMessage(point(0, 1, 1, r), &m)
	require.Len(t, s.Flips(), 1)
	assert.Contains(t, s.Flips()[0].Word, "message->3.")
	neg := 0
	for _, v := range m.Payload {
		if v < 0 {
			neg++
		}
	}
	assert.Equal(t, 1, neg, "exactly one word's sign flipped")
}

func TestRateAndChain(t *testing.T) {
	all, err := sdc.NewRate(1, sdc.Message, 5, 5)
	require.NoError(t, err)
	none, err := sdc.NewRate(0, sdc.Flow, 0, 63)
	require.NoError(t, err)
	c := sdc.Chain{all, none}
	assert.Equal(t, "chain(rate(p=1 target=message bits=5-5); rate(p=0 target=flow bits=0-63))", c.String())
	r := rand.New(rand.NewPCG(1, 2))
	m := gossip.Message{To: 1, Kind: gossip.KindPush, Payload: []float64{1, 1}}
	c.InjectMessage(point(0, 1, 1, r), &m)
	assert.Len(t, c.Flips(), 2, "p = 1: every payload word")
	assert.Equal(t, sdc.FlipBit(1, 5), m.Payload[0])
	assert.Empty(t, c.Fresh().Flips())
	_, err = sdc.NewRate(1.5, sdc.Value, 0, 63)
	assert.ErrorIs(t, err, gossip.ErrInvalidConfig)
}

// TestRateRecordsABoundedLog: a rate injector counts every flip but
// records only the first MaxRecorded, so a high rate on a long vector
// cannot fill memory with records.
func TestRateRecordsABoundedLog(t *testing.T) {
	inj, err := sdc.NewRate(1, sdc.Message, 3, 3)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(3, 4))
	m := gossip.Message{To: 1, Kind: gossip.KindPush, Payload: make([]float64, sdc.MaxRecorded+10)}
	inj.InjectMessage(point(0, 1, 1, r), &m)
	inj.InjectMessage(point(0, 2, 2, r), &m)
	assert.Equal(t, 2*(sdc.MaxRecorded+10), inj.Count())
	assert.Len(t, inj.Flips(), sdc.MaxRecorded)
	c := sdc.Chain{inj, inj.Fresh()}
	assert.Equal(t, inj.Count(), c.Count())
}

type graph struct {
	gossip.Neighborhood
	name string
}

func (g graph) Name() string   { return g.name }
func (g graph) Directed() bool { return false }

func TestRateInSimulatorIsDeterministicPerSeed(t *testing.T) {
	proto, err := sdc.NewRate(1e-4, sdc.Flow, 0, 63)
	require.NoError(t, err)
	run := func() (sim.Result, []sdc.Flip) {
		inj := proto.Fresh()
		r, err := sim.Run(context.Background(), sim.Config{
			Algorithm: "pfcc", Overlay: graph{gossiptest.Hypercube(4), "hypercube"}, Epsilon: 1e-12, Seed: 7, MaxMsgs: 1000, Injector: inj,
		})
		require.NoError(t, err)
		return r, inj.Flips()
	}
	a, fa := run()
	b, fb := run()
	assert.Equal(t, a, b)
	assert.Equal(t, fa, fb)
	assert.NotEmpty(t, fa, "16 nodes × ~150 msgs × 12 flow words × 1e-3 ≈ 3 flips expected (the thesis rate)")
	assert.True(t, a.Converged, "PFCC survives them: %s %g", a.Reason, a.MaxRelError)
}

func TestNewInjectorGivesEveryRunItsOwn(t *testing.T) {
	proto, err := sdc.NewSingle(62, sdc.Value, 20, 16)
	require.NoError(t, err)
	var made []sdc.Injector
	rs, err := sim.RunMany(context.Background(), sim.Config{
		Algorithm: "ps", Overlay: graph{gossiptest.Hypercube(4), "hypercube"}, Epsilon: 1e-12, Seed: 1, MaxMsgs: 300,
		NewInjector: func() gossip.Injector { in := proto.Fresh(); made = append(made, in); return in },
	}, 4, 1, nil)
	require.NoError(t, err)
	require.Len(t, made, 4)
	for i, in := range made {
		assert.Len(t, in.Flips(), 1, "run %d flipped once", i)
		assert.False(t, rs[i].Converged, "a flip of bit 62 sinks Push-Sum")
	}
}
