package eventq

import (
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOrderAndTies(t *testing.T) {
	var q Queue[int]
	r := rand.New(rand.NewPCG(1, 2))
	type rec struct {
		at  float64
		seq int
	}
	var want []rec
	for i := range 5000 {
		at := float64(r.IntN(50)) // many ties
		q.Push(at, i)
		want = append(want, rec{at, i})
	}
	sort.SliceStable(want, func(a, b int) bool { return want[a].at < want[b].at })
	for _, w := range want {
		at, ev, ok := q.Pop()
		require.True(t, ok)
		assert.Equal(t, w.at, at)
		assert.Equal(t, w.seq, ev, "ties must come out in push order")
	}
	_, _, ok := q.Pop()
	assert.False(t, ok)
}

func TestInterleavedPushPop(t *testing.T) {
	var q Queue[float64]
	r := rand.New(rand.NewPCG(3, 4))
	now := 0.0
	for range 20000 {
		if q.Len() == 0 || r.IntN(3) > 0 {
			at := now + r.Float64()
			q.Push(at, at)
			continue
		}
		pk, _, _ := q.Peek()
		at, ev, ok := q.Pop()
		require.True(t, ok)
		assert.Equal(t, pk, at)
		assert.Equal(t, at, ev)
		assert.GreaterOrEqual(t, at, now, "time never goes backwards")
		now = at
	}
	q.Reset()
	assert.Equal(t, 0, q.Len())
}

func BenchmarkPushPop(b *testing.B) {
	var q Queue[uint32]
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 4096 {
		q.Push(r.Float64(), uint32(i))
	}
	b.ResetTimer()
	for range b.N {
		at, ev, _ := q.Pop()
		q.Push(at+1+r.Float64(), ev)
	}
}
