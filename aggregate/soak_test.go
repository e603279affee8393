//go:build soak

// The soak: a bounded run of continuous aggregation with churn, message
// loss and bit flips, watching goroutines and memory and checking every
// result. Not part of the suite:
//
//	go test -tags soak -run TestSoak -timeout 30m -v ./aggregate -soak 10m

package aggregate_test

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/aggregate"
	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/sdc"
	"github.com/gossipreduce/gossipreduce/transport"
)

var (
	soakFor   = flag.Duration("soak", 10*time.Minute, "how long TestSoak runs")
	soakLoss  = flag.Float64("soak.loss", 0.02, "message loss probability")
	soakFlips = flag.Float64("soak.flips", 2e-5, "bit flips per flow word per message")
)

const (
	soakN        = 16
	soakInterval = 500 * time.Millisecond
	soakGen      = 10 * time.Second // values change every generation …
	soakShift    = 250 * time.Millisecond
	soakEps      = 1e-9
)

// soakValue is member id's value of metric k in the generation of t. A
// generation starts soakShift after a multiple of soakGen, never at an
// aggregation boundary (multiples of soakInterval), so every member uses
// the same generation for the same aggregation.
func soakValue(id, k int, t time.Time) float64 {
	g := (t.UnixMilli() - soakShift.Milliseconds()) / soakGen.Milliseconds()
	return float64(100*(id+1)+k) + float64((g*7+int64(id))%13)
}

func rssMB() float64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return math.NaN()
	}
	f := strings.Fields(string(b))
	pages, _ := strconv.ParseFloat(f[1], 64)
	return pages * float64(os.Getpagesize()) / (1 << 20)
}

func TestSoak(t *testing.T) {
	before := runtime.NumGoroutine()
	tr, err := transport.NewMemory(transport.MemoryOptions{Options: transport.Options{Loss: *soakLoss, Seed: 1}})
	require.NoError(t, err)
	defer tr.Close()

	var checked, wrong, seen, fromAbsent atomic.Int64
	var wrongMsg atomic.Value
	check := func(s aggregate.Snapshot) {
		seen.Add(1)
		absent := map[gossip.NodeID]bool{}
		for _, a := range s.Absent {
			absent[a] = true
		}
		for k, name := range []string{"a", "b"} {
			var sum float64
			lo, hi := math.Inf(1), math.Inf(-1)
			// Min and max may also come from a member that failed during
			// the aggregation after its value had spread (documented on
			// Summary): they must lie between the live members' extremes
			// and those of everybody.
			allLo, allHi := math.Inf(1), math.Inf(-1)
			for id := range soakN {
				v := soakValue(id, k, s.Due)
				allLo, allHi = min(allLo, v), max(allHi, v)
				if absent[gossip.NodeID(id)] {
					continue
				}
				sum += v
				lo, hi = min(lo, v), max(hi, v)
			}
			m := s.Metrics[name]
			if m.Min != lo || m.Max != hi {
				fromAbsent.Add(1)
			}
			if m.Count != s.Live || math.Abs(m.Sum-sum) > soakEps*math.Abs(sum) || m.Min > lo || m.Min < allLo || m.Max < hi || m.Max > allHi {
				wrong.Add(1)
				wrongMsg.Store(fmt.Sprintf("epoch %d metric %s: got sum %v min %v max %v live %d, want sum %v min %v max %v (absent %v)",
					s.Epoch, name, m.Sum, m.Min, m.Max, s.Live, sum, lo, hi, s.Absent))
			}
		}
		checked.Add(1)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	mons := make([]*aggregate.Monitor, soakN)
	crashed := make([]bool, soakN)
	var hash uint64 // the group's configuration hash, the same for every member
	var failures atomic.Int64
	start := func(id int) {
		m, err := aggregate.StartMonitor(ctx, tr, aggregate.MonitorConfig{
			Config: aggregate.Config{Group: "soak", ID: gossip.NodeID(id), Nodes: soakN, Epsilon: soakEps,
				Suspect: 300 * time.Millisecond, Seed: uint64(id),
				Injector: func(uint64) gossip.Injector {
					r, _ := sdc.NewRate(*soakFlips, sdc.Flow, 0, 63)
					return r
				}},
			Metrics: []string{"a", "b"}, Interval: soakInterval, Timeout: 3 * soakInterval,
			OnSnapshot: check,
		})
		require.NoError(t, err)
		mu.Lock()
		mons[id] = m
		mu.Unlock()
	}
	stop := func(id int, crash bool) {
		mu.Lock()
		m := mons[id]
		mons[id] = nil
		crashed[id] = crash
		mu.Unlock()
		hash = m.Node().ConfigHash()
		if crash {
			tr.Crash(transport.Group{Name: "soak", ConfigHash: hash}, gossip.NodeID(id))
		}
		failures.Add(int64(m.Failures()))
		m.Close()
	}
	for id := range soakN {
		start(id)
	}
	// Every member keeps its values current.
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			now := time.Now()
			mu.Lock()
			for id, m := range mons {
				if m != nil {
					m.Set("a", soakValue(id, 0, now))
					m.Set("b", soakValue(id, 1, now))
				}
			}
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	})
	// Churn: every 15 s a member leaves (gracefully or by crashing, in
	// turn) and comes back 7 s later.
	wg.Go(func() {
		r := rand.New(rand.NewPCG(7, 7))
		for turn := 0; ; turn++ {
			select {
			case <-ctx.Done():
				return
			case <-time.After(15 * time.Second):
			}
			id := 1 + r.IntN(soakN-1)
			stop(id, turn%2 == 1)
			select {
			case <-ctx.Done():
				return
			case <-time.After(7 * time.Second):
			}
			if crashed[id] {
				tr.Restore(transport.Group{Name: "soak", ConfigHash: hash}, gossip.NodeID(id))
			}
			start(id)
		}
	})

	sample := func() (int, float64, float64) {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return runtime.NumGoroutine(), float64(ms.HeapAlloc) / (1 << 20), rssMB()
	}
	t.Logf("%8s %10s %9s %8s %9s %7s %8s", "time", "goroutines", "heap MiB", "RSS MiB", "results", "wrong", "lost")
	began := time.Now()
	var firstG int
	var firstHeap float64
	for i := 0; ; i++ {
		time.Sleep(30 * time.Second)
		g, heap, rss := sample()
		if i == 0 {
			firstG, firstHeap = g, heap
		}
		t.Logf("%8s %10d %9.1f %8.1f %9d %7d %8d", time.Since(began).Round(time.Second), g, heap, rss, checked.Load(), wrong.Load(), tr.Stats().Lost)
		if time.Since(began) >= *soakFor {
			g, heap, _ := sample()
			cancel()
			wg.Wait()
			mu.Lock()
			for id, m := range mons {
				if m != nil {
					failures.Add(int64(m.Failures()))
					m.Close()
					mons[id] = nil
				}
			}
			mu.Unlock()
			tr.Close()
			// Everything stopped: the goroutines must be back to where they
			// were before the soak.
			var after int
			for range 100 {
				if after = runtime.NumGoroutine(); after <= before {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Logf("goroutines before the soak %d, after stopping everything %d", before, after)
			assert.LessOrEqual(t, after, before, "no goroutine left behind")
			t.Logf("results checked %d (snapshots seen %d), wrong %d, min or max from a member absent in that aggregation %d, failed aggregations %d, transport %+v",
				checked.Load(), seen.Load(), wrong.Load(), fromAbsent.Load(), failures.Load(), tr.Stats())
			if msg, ok := wrongMsg.Load().(string); ok {
				t.Log("first wrong result: ", msg)
			}
			assert.Zero(t, wrong.Load(), "no wrong result")
			assert.Positive(t, checked.Load())
			assert.Less(t, g, firstG+50, "no goroutine growth (first sample %d)", firstG)
			assert.Less(t, heap, 2*firstHeap+16, "no memory growth (first sample %.1f MiB)", firstHeap)
			return
		}
	}
}
