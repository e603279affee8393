package broadcast_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/broadcast"
	"github.com/gossipreduce/gossipreduce/broadcast/internal/plantest"
	"github.com/gossipreduce/gossipreduce/gossip"
)

// nodeNet is a small LogP-like network of Nodes for tests: every tick each
// node may send one message (o = 1), which is received L+2 ticks later.
// It can deliver every message twice and remembers all it carried.
type nodeNet struct {
	t       *testing.T
	plan    *broadcast.Plan
	nodes   []*broadcast.Node
	dead    []bool
	now     int64
	inbox   map[int64][]gossip.Message
	carried []gossip.Message
	twice   bool
	got     [][]broadcast.Delivery
}

func newNodeNet(t *testing.T, plan *broadcast.Plan, cfg broadcast.NodeConfig) *nodeNet {
	n := plan.Nodes()
	net := &nodeNet{t: t, plan: plan, dead: make([]bool, n), inbox: map[int64][]gossip.Message{}, got: make([][]broadcast.Delivery, n)}
	for v := 0; v < n; v++ {
		c := cfg
		c.ID = gossip.NodeID(v)
		c.Clock = broadcast.ClockFromMessages
		node, err := broadcast.NewNode(plan, c)
		require.NoError(t, err)
		net.nodes = append(net.nodes, node)
	}
	return net
}

func (net *nodeNet) run(ticks int) {
	hop := net.plan.Spec().Model.Hop()
	var out []gossip.Message
	for end := net.now + int64(ticks); net.now < end; net.now++ {
		t := net.now
		for _, m := range net.inbox[t] {
			if net.dead[m.To] {
				continue
			}
			require.NoError(net.t, net.nodes[m.To].Step(t, m))
		}
		delete(net.inbox, t)
		for v, node := range net.nodes {
			if net.dead[v] {
				continue
			}
			out = node.Poll(t, out[:0])
			require.LessOrEqual(net.t, len(out), 1)
			for _, m := range out {
				m = m.Clone()
				net.carried = append(net.carried, m)
				net.inbox[t+hop] = append(net.inbox[t+hop], m)
				if net.twice {
					net.inbox[t+hop+1] = append(net.inbox[t+hop+1], m)
				}
			}
			net.got[v] = node.Deliveries(net.got[v])
		}
	}
}

// Claim 1: with one epoch counter per root, every live process delivers
// every broadcast exactly once and only values a root broadcast, even when
// the network duplicates every message and old messages are replayed.
func TestNodeIntegrityNoDuplicates(t *testing.T) {
	for _, corr := range []string{"checked", "checked-overlapped", "optimized:2", "failproof:1"} {
		plan := plantest.MustPlan(t, "tree:binomial", corr, 40, broadcast.LogP{L: 2, O: 1})
		net := newNodeNet(t, plan, broadcast.NodeConfig{})
		net.twice = true
		net.dead[7], net.dead[20] = true, true
		type bc struct {
			root  gossip.NodeID
			epoch uint64
			value float64
		}
		sent := []bc{{0, 1, 1.5}, {5, 1, 2.5}, {0, 2, 3.5}, {33, 9, 4.5}}
		for i, b := range sent {
			require.NoError(t, net.nodes[b.root].Broadcast(net.now, b.epoch, []float64{b.value}))
			net.run(10 + 20*(i%2)) // overlap some broadcasts
		}
		net.run(400)
		// Replay everything ever carried, twice.
		for _, m := range append(slices.Clone(net.carried), net.carried...) {
			if !net.dead[m.To] {
				require.NoError(t, net.nodes[m.To].Step(net.now, m))
			}
		}
		net.run(400)
		for v := range net.nodes {
			if net.dead[v] {
				continue
			}
			var got []bc
			for _, d := range net.got[v] {
				require.Len(t, d.Value, 1)
				got = append(got, bc{d.Root, d.Epoch, d.Value[0]})
			}
			assert.ElementsMatch(t, sent, got, "%s: process %d", corr, v)
		}
	}
}

// A node keeps Window epochs of a root open and drops messages of older
// ones silently; a root's epochs must increase; with OncePerEpoch a second
// root's broadcast of the same epoch (a take-over) is not delivered again.
func TestNodeEpochs(t *testing.T) {
	plan := plantest.MustPlan(t, "tree:kary:3", "checked", 20, broadcast.LogP{L: 1, O: 1})
	net := newNodeNet(t, plan, broadcast.NodeConfig{Window: 2, OncePerEpoch: true})
	for e := uint64(1); e <= 4; e++ {
		require.NoError(t, net.nodes[0].Broadcast(net.now, e, []float64{float64(e)}))
		net.run(60)
	}
	assert.ErrorIs(t, net.nodes[0].Broadcast(net.now, 3, []float64{1}), gossip.ErrInvalidConfig)
	assert.Nil(t, net.nodes[9].Machine(0, 1), "epoch 1 closed once epoch 3 opened")
	assert.Nil(t, net.nodes[9].Machine(0, 2))
	assert.NotNil(t, net.nodes[9].Machine(0, 4))
	// A stale message of a closed epoch is dropped without error or effect.
	var stale gossip.Message
	for _, m := range net.carried {
		if m.Epoch == 1 && m.To == 9 {
			stale = m
			break
		}
	}
	require.NotZero(t, stale.Epoch)
	require.NoError(t, net.nodes[9].Step(net.now, stale))
	assert.Nil(t, net.nodes[9].Machine(0, 1))
	// Take-over: process 4 broadcasts epoch 4 again; nobody delivers twice.
	require.NoError(t, net.nodes[4].Broadcast(net.now, 4, []float64{44}))
	net.run(60)
	for v := range net.nodes {
		epochs := []uint64{}
		for _, d := range net.got[v] {
			epochs = append(epochs, d.Epoch)
			if d.Epoch == 4 {
				assert.Equal(t, gossip.NodeID(0), d.Root, "the first delivery of epoch 4 came from root 0")
			}
		}
		assert.Equal(t, []uint64{1, 2, 3, 4}, epochs, "process %d", v)
	}
	// Foreign traffic is refused with a reason.
	assert.ErrorIs(t, net.nodes[1].Step(0, gossip.Message{Kind: gossip.KindPush}), gossip.ErrForeignMessage)
	assert.ErrorIs(t, net.nodes[1].Step(0, gossip.Message{Kind: gossip.KindBroadcast, Tag: broadcast.EncodeTag(broadcast.MsgTree, 0, 99, 0)}), gossip.ErrForeignMessage)
	_, err := broadcast.NewNode(plan, broadcast.NodeConfig{ID: 20})
	assert.ErrorIs(t, err, gossip.ErrInvalidConfig)
	_, err = broadcast.NewNode(nil, broadcast.NodeConfig{})
	assert.ErrorIs(t, err, gossip.ErrInvalidConfig)
}

// Nodes with gossip dissemination draw targets from the source NodeConfig
// gives them, so a run is reproducible.
func TestNodeGossipDeterministic(t *testing.T) {
	plan := plantest.MustPlan(t, "gossip", "checked", 30, broadcast.LogP{L: 1, O: 1})
	deliveries := func() [][]broadcast.Delivery {
		net := newNodeNet(t, plan, broadcast.NodeConfig{Rand: func(root gossip.NodeID, epoch uint64) rand.Source {
			return rand.NewPCG(uint64(root), epoch)
		}})
		require.NoError(t, net.nodes[3].Broadcast(0, 1, []float64{7}))
		net.run(200)
		for v := range net.got {
			require.Len(t, net.got[v], 1, "process %d", v)
		}
		return net.got
	}
	assert.Equal(t, deliveries(), deliveries())
}
