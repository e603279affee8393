package pushflow

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
)

// TestPFCCConservesMessagesInCirculation corrupts flows over and over and
// checks that PFCC's repairs never change the number of ordinary messages
// in circulation: a repair request or answer never makes its receiver push,
// and a push held back while a repair is awaited is made later. Before this
// rule, every repair added messages for good, and live runs at high flip
// rates flooded the network.
//
// The network delivers in random order, so a push can be overtaken by a
// later message from its sender, which counts it as lost: its receiver
// pushes on at once (see revive) and not again when it arrives. Such a
// push in flight is no longer in circulation, and is not counted.
func TestPFCCConservesMessagesInCirculation(t *testing.T) {
	const n = 16
	inputs := gossiptest.Inputs(n, 1, 5)
	ms, err := gossiptest.Build(gossiptest.Complete(n), inputs, gossip.Average, 3, func(c gossip.Config) (gossip.Machine, error) {
		c.Revive = true // as the runtime: the count below allows for it
		return NewChecked(c, Cooperative, 1e-11)
	})
	require.NoError(t, err)
	net := gossiptest.NewNet(ms, 9)
	net.Start()
	r := rand.New(rand.NewPCG(1, 2))
	ordinary := func() int {
		c := 0
		for _, m := range net.Pending() {
			to := ms[m.To].(*Machine)
			k, _ := to.index.lookup(m.From)
			if m.Tag&tagRepair == 0 && seqOf(m.Tag) > to.nb[k].recv {
				c++
			}
		}
		return c
	}
	var owed int
	for step := range 20000 {
		if step%40 == 0 && step < 15000 {
			// Flip a high exponent bit of a random flow word.
			m := ms[r.IntN(n)].(*Machine)
			var words []gossip.Word
			for w := range m.Words() {
				if w.Place == gossip.PlaceFlow {
					words = append(words, w)
				}
			}
			w := words[r.IntN(len(words))]
			*w.Ptr = math.Float64frombits(math.Float64bits(*w.Ptr) ^ 1<<61)
		}
		ok, err := net.DeliverOne()
		require.NoError(t, err)
		require.True(t, ok)
		owed = 0
		for _, m := range ms {
			owed += m.(*Machine).owed
		}
		require.Equal(t, n, ordinary()+owed, "step %d: ordinary messages in flight plus pushes owed", step)
	}
	exact, err := gossip.Aggregate(inputs, []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
	require.NoError(t, err)
	// 5000 deliveries after the last flip are ample for 16 nodes to
	// converge far below 1e-12 (about 60 rounds of 16 messages).
	require.LessOrEqual(t, net.MaxError(exact), 1e-12)
}
