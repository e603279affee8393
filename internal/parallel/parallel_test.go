package parallel

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEveryJobOnceInOrderOfIndex(t *testing.T) {
	out := make([]int, 100)
	var calls atomic.Int32
	var last int
	err := For(context.Background(), 100, 3, func(_ context.Context, i int) error {
		calls.Add(1)
		out[i] = i * i
		return nil
	}, func(done, total int) { last = done; assert.Equal(t, 100, total) })
	require.NoError(t, err)
	assert.Equal(t, int32(100), calls.Load())
	assert.Equal(t, 100, last)
	for i, v := range out {
		assert.Equal(t, i*i, v)
	}
}

func TestFirstErrorStopsTheRest(t *testing.T) {
	boom := errors.New("boom")
	var calls atomic.Int32
	err := For(context.Background(), 1000, 2, func(ctx context.Context, i int) error {
		calls.Add(1)
		if i == 3 {
			return boom
		}
		return ctx.Err()
	}, nil)
	assert.ErrorIs(t, err, boom)
	assert.Less(t, calls.Load(), int32(1000))
}

func TestCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := For(ctx, 10, 2, func(context.Context, int) error { return nil }, nil)
	assert.ErrorIs(t, err, context.Canceled)
}
