package exchange

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/topology"
)

// TestSentPartialsAreRebuiltBitForBit checks that a partial this node
// sent, which it does not keep (sentPartial), is rebuilt bit for bit when
// a resend or an answer needs it: at every step of a group of 11 (folded
// ranks included) and after the state was flipped.
func TestSentPartialsAreRebuiltBitForBit(t *testing.T) {
	const n = 11
	g, err := topology.Complete(n)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(7, 7))
	ms := make([]*Machine, n)
	for i := range ms {
		in := []float64{rng.NormFloat64(), rng.Float64() * 1e6, -rng.Float64()}
		ms[i], err = New(gossip.Config{ID: gossip.NodeID(i), Overlay: g, Value: in, Mode: gossip.Average, Epoch: 1})
		require.NoError(t, err)
	}
	type key struct {
		from gossip.NodeID
		tag  uint64
	}
	original := map[key][]float64{}
	var inFlight []gossip.Message
	record := func(out []gossip.Message) {
		for _, msg := range out {
			if msg.Tag&(flagAsk|flagVouch|flagEmpty) == 0 {
				w := len(msg.Payload) - 2
				original[key{msg.From, msg.Tag &^ flagChosen}] = msg.Payload[:w]
			}
		}
		inFlight = append(inFlight, out...)
	}
	for _, m := range ms {
		record(m.Tick(nil))
	}
	check := func() {
		for _, m := range ms {
			for i, p := range m.sent {
				if len(p) != 0 || p == nil {
					continue
				}
				want, ok := original[key{m.id, m.plan[i].Tag}]
				require.True(t, ok, "node %d step %d: the original was recorded", m.id, i)
				got := m.sentPayload(i)[:len(want)]
				require.True(t, gossip.SameBits(want, got), "node %d step %d: %v, sent %v", m.id, i, got, want)
			}
		}
	}
	for d := 0; len(inFlight) > 0; d++ {
		i := rng.IntN(len(inFlight))
		msg := inFlight[i]
		inFlight = append(inFlight[:i], inFlight[i+1:]...)
		out, err := ms[msg.To].Step(msg, nil)
		require.NoError(t, err)
		record(out)
		check()
		if d%5 == 0 {
			// A flip of the state: the rebuild must not take it in.
			m := ms[rng.IntN(n)]
			m.y[0] = math.Float64frombits(math.Float64bits(m.y[0]) ^ 1<<40)
			check()
		}
	}
	for _, m := range ms {
		require.True(t, m.Done(), "node %d", m.id)
	}
}
