package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestBenchRows: the ratios are of median times, to the fastest algorithm
// that has one and to rdb; an algorithm whose every run failed has no
// figures and no ratios, and is not the fastest; messages and bytes are
// means over the runs that did not fail.
func TestBenchRows(t *testing.T) {
	names := []string{"pfcc", "rdb", "ring", "exchange"}
	rows := []benchAlgo{{}, {}, {}, {Failed: 2}}
	secs := [][]float64{{0.9, 0.3, 0.6}, {0.2, 0.1, 0.4}, {0.05, 0.15}, nil}
	msgs := []float64{300, 12, 60, 0}
	bytes := []float64{3000, 1200, 300, 0}
	got := benchRows(names, rows, secs, msgs, bytes)
	assert.Equal(t, []benchAlgo{
		{Algo: "pfcc", SecondsP50: 0.6, SecondsMax: 0.9, MsgsPerNode: 100, BytesPerNode: 1000, RatioToBest: 6, RatioToRDB: 3},
		{Algo: "rdb", SecondsP50: 0.2, SecondsMax: 0.4, MsgsPerNode: 4, BytesPerNode: 400, RatioToBest: 2, RatioToRDB: 1},
		{Algo: "ring", SecondsP50: 0.1, SecondsMax: 0.15, MsgsPerNode: 30, BytesPerNode: 150, RatioToBest: 1, RatioToRDB: 0.5},
		{Algo: "exchange", Failed: 2},
	}, roundRows(got))

	// Without rdb there is no ratio to it; the fastest is still 1.
	got = benchRows([]string{"ring"}, []benchAlgo{{}}, [][]float64{{0.3}}, []float64{30}, []float64{10})
	assert.Equal(t, 1.0, got[0].RatioToBest)
	assert.Zero(t, got[0].RatioToRDB)
}

// roundRows rounds the ratios to 12 digits, so that 0.6/0.1 compares
// equal to 6.
func roundRows(rows []benchAlgo) []benchAlgo {
	for i := range rows {
		rows[i].RatioToBest = float64(int64(rows[i].RatioToBest*1e12+0.5)) / 1e12
		rows[i].RatioToRDB = float64(int64(rows[i].RatioToRDB*1e12+0.5)) / 1e12
	}
	return rows
}
