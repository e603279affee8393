package livegroup_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/internal/livegroup"
)

// TestCheckCoverage: Check compares the results with the exact aggregate
// of the members they say they cover, and fails an operation whose members
// disagree on that.
func TestCheckCoverage(t *testing.T) {
	in := [][]float64{{1}, {2}, {3}, {6}}
	res := func(v float64, absent ...gossip.NodeID) aggregate.Result {
		return aggregate.Result{Value: []float64{v}, Live: 4 - len(absent), Absent: absent, Messages: 1}
	}
	o := &livegroup.Outcome{Inputs: in, Errs: make([]error, 4), Alive: []bool{true, true, false, true},
		Results: []aggregate.Result{res(3, 2), res(3, 2), {}, res(3, 2)}}
	v := o.Check()
	require.NoError(t, v.Err)
	assert.Equal(t, 3, v.Results)
	assert.Equal(t, []float64{3}, v.Exact, "the average of 1, 2 and 6: member 2 is absent")
	assert.Equal(t, 3, v.Live)
	assert.Equal(t, []gossip.NodeID{2}, v.Absent)
	assert.True(t, v.Identical)
	assert.Zero(t, v.Worst)
	assert.Equal(t, 3, v.Total)

	o.Results[3].Epoch = 2
	v = o.Check()
	require.Error(t, v.Err)
	assert.Contains(t, v.Err.Error(), "members disagree on the epoch: node 0 has 0, node 3 2")

	o.Results[3] = res(3)
	v = o.Check()
	require.Error(t, v.Err)
	assert.Contains(t, v.Err.Error(), "members disagree on what the result covers: node 0 has inputs of 3 of 4 members, absent 2, node 3 inputs of 4 of 4 members, none absent")

	o.Errs = []error{errors.New("boom"), errors.New("boom"), nil, errors.New("boom")}
	v = o.Check()
	assert.Zero(t, v.Results)
	assert.Nil(t, v.Exact)
	assert.ErrorContains(t, v.Err, "node 0: boom")
}
