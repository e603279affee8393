package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/transport/natsserver"
)

// embeddedServer starts a NATS server for the test, shut down with it.
func embeddedServer(t *testing.T) *natsserver.Server {
	t.Helper()
	srv, err := natsserver.StartEmbedded(context.Background(), natsserver.EmbeddedOptions{})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	return srv
}

func TestNodesAsSeparateClients(t *testing.T) {
	srv := embeddedServer(t)

	const n = 3
	codes, stdouts, stderrs := runNodes(t, n, func(i int) []string {
		return []string{"--nats", srv.ClientURL(), "--group", "cli", "--value", fmt.Sprintf("%d,%d", i, 10*i), "--sum"}
	})
	outs := make([]map[string]any, n)
	for i := range n {
		require.Equal(t, 0, codes[i], "node %d: %s", i, stderrs[i])
		require.NoError(t, json.Unmarshal([]byte(stdouts[i]), &outs[i]))
	}
	for i := range n {
		res := outs[i]["result"].([]any)
		// Sum of 0,1,2 and of 0,10,20, within ε = 1e-9.
		assert.InDelta(t, 3.0, res[0].(float64), 3e-9)
		assert.InDelta(t, 30.0, res[1].(float64), 30e-9)
		assert.Equal(t, outs[0]["result"], outs[i]["result"], "the same result everywhere")
		assert.Equal(t, "sum", outs[i]["op"])
	}
}

func TestNodeBadInput(t *testing.T) {
	for name, args := range map[string][]string{
		"missing id":     {"node", "--nodes", "2", "--value", "1"},
		"bad value":      {"node", "--id", "0", "--nodes", "2", "--value", "1,x"},
		"NaN value":      {"node", "--id", "0", "--nodes", "2", "--value", "NaN"},
		"id range":       {"node", "--id", "2", "--nodes", "2", "--value", "1"},
		"bad eps":        {"node", "--id", "0", "--nodes", "2", "--value", "1", "--eps", "-1"},
		"stray token":    {"node", "extra"},
		"linger":         {"node", "--id", "0", "--nodes", "2", "--value", "1", "--linger", "-1s"},
		"name and id":    {"node", "--name", "a", "--id", "0", "--value", "1"},
		"min alone":      {"node", "--id", "0", "--nodes", "2", "--value", "1", "--min-members", "2"},
		"name, no value": {"node", "--name", "a"},
		"name, torus":    {"node", "--name", "a", "--value", "1", "--topology", "torus:2x2"},
		"name, state":    {"node", "--name", "a", "--value", "1", "--state-file", "x"},
	} {
		code, _, stderr := runCLI(t, args...)
		assert.Equal(t, 2, code, "%s: %s", name, stderr)
	}
	// Nobody listening: a clear error, exit 1.
	code, _, stderr := runCLI(t, "node", "--nats", "nats://127.0.0.1:1", "--id", "0", "--nodes", "2", "--value", "1", "--timeout", "2s")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "transport:")
	// The reason survives the retries that run out the timeout.
	assert.Contains(t, stderr, "no NATS server answered within --timeout 2s")
}

func TestBenchJSONContract(t *testing.T) {
	obj := jsonObject(t, "bench", "--nodes", "8", "--runs", "2", "--seed", "1", "--json")
	algos := obj["algorithms"].([]any)
	require.Len(t, algos, 5, "exchange, ps, pfcc, rdb, central; no ring for one component")
	assert.Equal(t, 1.0, obj["components"])
	fastest := 0
	for _, a := range algos {
		row := a.(map[string]any)
		for _, f := range []string{"algo", "seconds_p50", "msgs_per_node", "bytes_per_node", "ratio_to_best", "ratio_to_rdb"} {
			assert.Contains(t, row, f)
		}
		assert.Equal(t, 0.0, row["failed_runs"], row["algo"])
		assert.Positive(t, row["seconds_p50"].(float64))
		assert.GreaterOrEqual(t, row["ratio_to_best"].(float64), 1.0, row["algo"])
		if row["ratio_to_best"] == 1.0 {
			fastest++
		}
		// At least a message's header and one word per message sent.
		assert.Greater(t, row["bytes_per_node"].(float64), 8*row["msgs_per_node"].(float64), row["algo"])
		if row["algo"] == "exchange" {
			// The same schedule; a resend (after two idle periods of
			// waiting, possible on a loaded machine) adds to it.
			assert.GreaterOrEqual(t, row["msgs_per_node"], 3.0, "log2 8 exchanges")
		}
		if row["algo"] == "rdb" {
			assert.Equal(t, 1.0, row["ratio_to_rdb"])
			assert.Equal(t, 3.0, row["msgs_per_node"], "log2 8 exchanges")
		}
		assert.False(t, math.IsNaN(row["ratio_to_rdb"].(float64)))
	}
	assert.Positive(t, fastest, "the fastest has ratio 1 to the best")
	code, _, _ := runCLI(t, "bench", "--algo", "ps,magic")
	assert.Equal(t, 2, code)
}

// TestNodeJSONCoverage: a node's JSON says whom the result covers and what
// the transport dropped, and warns that the group has no key.
func TestNodeJSONCoverage(t *testing.T) {
	ctx := context.Background()
	srv, err := natsserver.StartEmbedded(ctx, natsserver.EmbeddedOptions{})
	require.NoError(t, err)
	defer srv.Shutdown()

	codes, stdouts, stderrs := runNodes(t, 3, func(int) []string { return []string{"--nats", srv.ClientURL(), "--group", "cover"} })
	for i := range codes {
		require.Equal(t, 0, codes[i], "node %d: %s", i, stderrs[i])
		var obj map[string]any
		require.NoError(t, json.Unmarshal([]byte(stdouts[i]), &obj))
		for _, f := range []string{"result", "live", "absent", "epoch", "root", "forged", "replayed", "malformed", "foreign", "overflow", "incomplete", "warnings"} {
			assert.Contains(t, obj, f, "node %d", i)
		}
		assert.NotContains(t, obj, "error")
		assert.NotContains(t, obj, "estimate")
		assert.Equal(t, 3.0, obj["live"])
		assert.Equal(t, []any{}, obj["absent"], "nobody absent: [], not null")
		assert.Equal(t, 1.0, obj["epoch"])
		assert.Equal(t, 0.0, obj["forged"])
		assert.Equal(t, 0.0, obj["malformed"])
		assert.Contains(t, stderrs[i], "no group key")
		assert.Contains(t, stderrs[i], "--key-file")
		require.Len(t, obj["warnings"], 1)
		assert.Contains(t, obj["warnings"].([]any)[0], "cover.*", "the warning names the group's subjects")
	}
}

// TestNodeFailure: a member whose peer never starts gives up at --timeout;
// with --json it still prints one object, with the error and its own
// estimate (not a result), and exits 1; in text it prints nothing on
// stdout and the error on stderr.
func TestNodeFailure(t *testing.T) {
	ctx := context.Background()
	srv, err := natsserver.StartEmbedded(ctx, natsserver.EmbeddedOptions{})
	require.NoError(t, err)
	defer srv.Shutdown()
	key := writeKey(t, "0123456789abcdef0123456789abcdef")
	args := []string{"node", "--nats", srv.ClientURL(), "--key-file", key, "--group", "alone", "--nodes", "2", "--id", "0",
		"--value", "4", "--algo", "ps", "--timeout", "300ms"}

	code, stdout, stderr := runCLI(t, append(args, "--json")...)
	assert.Equal(t, 1, code, stderr)
	dec := json.NewDecoder(bytes.NewBufferString(stdout))
	var obj map[string]any
	require.NoError(t, dec.Decode(&obj), stdout)
	assert.False(t, dec.More(), "exactly one JSON object")
	assert.Contains(t, obj["error"], "not converged")
	assert.Nil(t, obj["result"], "no result: the estimate is not one")
	assert.Nil(t, obj["live"])
	assert.Nil(t, obj["absent"])
	assert.Nil(t, obj["root"])
	assert.Equal(t, []any{4.0}, obj["estimate"], "Push-Sum's estimate of a member that heard nobody is its own value")
	assert.Equal(t, 0.0, obj["forged"])
	require.Len(t, obj["warnings"], 1, "Push-Sum, but a key")
	assert.Contains(t, obj["warnings"].([]any)[0], "not fault-tolerant")
	assert.Contains(t, stderr, "not converged")

	code, stdout, stderr = runCLI(t, args...)
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "gossipreduce node: warning: Push-Sum (ps) is not fault-tolerant")
	assert.Contains(t, stderr, "not converged")
	assert.NotContains(t, stderr, "no group key")
}

// TestBenchVectors: with --components the members average vectors of that
// length; the ring joins the default algorithms; and the bytes per member
// show what the ring is for: at 4 members it sends about 3/2 of the
// vector, recursive doubling 2 whole copies.
func TestBenchVectors(t *testing.T) {
	obj := jsonObject(t, "bench", "--nodes", "4", "--components", "400", "--algo", "rdb,ring", "--runs", "2", "--seed", "1", "--json")
	assert.Equal(t, 400.0, obj["components"])
	rows := map[string]map[string]any{}
	for _, a := range obj["algorithms"].([]any) {
		row := a.(map[string]any)
		rows[row["algo"].(string)] = row
		assert.Equal(t, 0.0, row["failed_runs"], row["algo"])
	}
	require.Contains(t, rows, "ring")
	assert.Equal(t, 6.0, rows["ring"]["msgs_per_node"], "2(4−1) steps")
	vector := 8 * 401.0 // the components and the weight
	// The model, plus headers and the runtime's few control messages.
	assert.Greater(t, rows["rdb"]["bytes_per_node"].(float64), 2*vector)
	assert.Less(t, rows["rdb"]["bytes_per_node"].(float64), 2.5*vector)
	assert.Greater(t, rows["ring"]["bytes_per_node"].(float64), 1.5*vector)
	assert.Less(t, rows["ring"]["bytes_per_node"].(float64), 2*vector)
	assert.Less(t, rows["ring"]["bytes_per_node"].(float64), 0.8*rows["rdb"]["bytes_per_node"].(float64))

	obj = jsonObject(t, "bench", "--nodes", "2", "--components", "3", "--runs", "1", "--seed", "1", "--json")
	algos := obj["algorithms"].([]any)
	require.Len(t, algos, 6, "the defaults and ring")
	assert.Equal(t, "ring", algos[5].(map[string]any)["algo"])
}

// TestNodeShortVectorFailsEveryMember: one member of 16 passes a vector
// one component short, the members starting a few milliseconds apart as
// processes do. Every member must fail with the disagreement; none may
// return a result that leaves healthy members out. Before the members
// that found the disagreement stayed (--linger) to tell it, they exited at
// once: the members that had not heard fell back, declared them dead, and
// 10 to 12 of 16 returned a result without four or five healthy inputs.
func TestNodeShortVectorFailsEveryMember(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := embeddedServer(t)
	const n, short = 16, 5
	codes, outs := make([]int, n), make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		value := fmt.Sprintf("%d,%d", i, i)
		if i == short {
			value = fmt.Sprint(i)
		}
		args := []string{"node", "--nats", srv.ClientURL(), "--group", "short", "--id", fmt.Sprint(i), "--nodes", fmt.Sprint(n),
			"--value", value, "--timeout", "15s", "--json"}
		wg.Go(func() {
			var stdout, stderr bytes.Buffer
			codes[i] = run(ctx, args, &stdio{Stdout: &stdout, Stderr: &stderr})
			outs[i] = stdout.String()
		})
		time.Sleep(15 * time.Millisecond)
	}
	wg.Wait()
	for i := range n {
		var obj map[string]any
		require.NoError(t, json.Unmarshal([]byte(outs[i]), &obj), "member %d: %s", i, outs[i])
		assert.Equal(t, 1, codes[i], "member %d", i)
		assert.Nil(t, obj["result"], "member %d returned a result", i)
		assert.Contains(t, obj["error"], "group members disagree", "member %d", i)
	}
}

// Members joined by name (--name, --min-members): every one returns the
// same result, over one view that names them all, equal to the exact
// average.
func TestNamedNodes(t *testing.T) {
	srv := embeddedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names := []string{"web-b", "web-a", "web-c"}
	outs := make([]map[string]any, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			var stdout, stderr bytes.Buffer
			code := run(ctx, []string{"node", "--nats", srv.ClientURL(), "--group", "named", "--name", name,
				"--min-members", "3", "--value", fmt.Sprint(10 * (i + 1)), "--linger", "0", "--json"}, &stdio{Stdout: &stdout, Stderr: &stderr})
			if assert.Equal(t, 0, code, "%s: %s", name, stderr.String()) {
				assert.NoError(t, json.Unmarshal(stdout.Bytes(), &outs[i]))
			}
		})
	}
	wg.Wait()
	for i, o := range outs {
		require.NotNil(t, o, names[i])
		assert.InDelta(t, 20.0, o["result"].([]any)[0].(float64), 20e-9, names[i])
		assert.Equal(t, outs[0]["result"], o["result"])
		assert.Equal(t, []any{"web-a", "web-b", "web-c"}, o["members"])
		assert.Equal(t, outs[0]["view"], o["view"])
		assert.Equal(t, names[i], o["name"])
		assert.Equal(t, 3.0, o["live"])
	}
}

// TestNodeVerboseLogsDecisions: with -v a member logs its protocol
// decisions to stderr. Alone in a group of two, its exchange waits for a
// partner never heard from (four times --suspect, 200 ms of its own
// running time), falls back to gossip, and says why; it then runs into
// --timeout, ten times as long, with nobody to gossip with. Without -v
// it logs nothing of the kind.
func TestNodeVerboseLogsDecisions(t *testing.T) {
	srv := embeddedServer(t)
	args := []string{"node", "--nats", srv.ClientURL(), "--group", "verbose", "--nodes", "2", "--id", "0",
		"--value", "4", "--suspect", "50ms", "--timeout", "2s", "--json"}

	code, stdout, stderr := runCLI(t, append(args, "-v")...)
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stdout, "not converged")
	assert.Contains(t, stderr, `level=DEBUG msg="falling back"`)
	assert.Contains(t, stderr, `why="no step of the exchange for`)

	code, _, stderr = runCLI(t, args...)
	assert.Equal(t, 1, code, stderr)
	assert.NotContains(t, stderr, "level=DEBUG")
}
