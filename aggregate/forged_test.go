package aggregate_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/gossiptest"
	"github.com/gossipreduce/gossipreduce/transport"
)

// TestForgedMessagesAreDroppedAndCounted runs a group with a group key while
// an intruder keeps publishing flows on the members' subjects: unsigned,
// signed with another key, and properly signed but tampered with after
// signing. Every one is dropped and counted, and the result is what it
// would have been.
func TestForgedMessagesAreDroppedAndCounted(t *testing.T) {
	key := []byte("0123456789abcdef-group-key")
	// A little latency stretches the operation, so the intruder gets many
	// messages in while it runs.
	tr, err := transport.NewMemory(transport.MemoryOptions{Options: transport.Options{Key: key},
		Delay: func(from, to gossip.NodeID) time.Duration { return 100 * time.Microsecond }})
	require.NoError(t, err)
	defer tr.Close()
	const n = 8
	nodes := group(t, tr, n, aggregate.Config{Group: "signed", Epsilon: 1e-9})
	g := transport.Group{Name: "signed", ConfigHash: nodes[0].ConfigHash()}

	ctx, cancel := context.WithCancel(context.Background())
	var forged int
	var wg sync.WaitGroup
	started := make(chan struct{})
	wg.Go(func() {
		r := rand.New(rand.NewPCG(1, 1))
		wrongKey := []byte("not-the-group-key-at-all")
		for ctx.Err() == nil {
			if forged == 300 {
				close(started) // a burst first, then a stream during the operation
			}
			to := gossip.NodeID(r.IntN(n))
			// A huge flow that would wreck the average if it got in.
			m := gossip.Message{From: gossip.NodeID((int(to) + 1) % n), To: to, Kind: gossip.KindCheckedFlow,
				Epoch: 1, Tag: 1 << 32, Payload: []float64{1e12, 1, 1e12 + 1}}
			h := transport.Header{ConfigHash: g.ConfigHash}
			var raw []byte
			switch forged % 3 {
			case 0:
				raw, _ = transport.Encode(nil, h, m)
			case 1:
				raw, _ = transport.EncodeSigned(nil, h, m, wrongKey)
			case 2:
				raw, _ = transport.EncodeSigned(nil, h, m, key)
				raw[20] ^= 0x10 // tampered with after signing
			}
			tr.Inject(g.Subject(to), raw)
			forged++
			if forged > 300 {
				time.Sleep(20 * time.Microsecond)
			}
		}
	})
	<-started
	inputs := gossiptest.Inputs(n, 1, 5)
	o := averageAll(timeout(t, 20*time.Second), nodes, inputs)
	cancel()
	wg.Wait()
	requireOK(t, o, 1e-9)
	st := tr.Stats()
	t.Logf("%d forged messages injected; transport counts: forged %d, malformed %d, foreign %d", forged, st.Forged, st.Malformed, st.Foreign)
	assert.Greater(t, forged, 300)
	assert.Equal(t, uint64(forged), st.Forged+st.Malformed, "every forged message is dropped and counted")
	assert.Positive(t, st.Forged)
}
