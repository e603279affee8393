package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/gossipreduce/gossipreduce/transport/natsserver"
)

// writeKey writes a group key file and returns its path.
func writeKey(t *testing.T, key string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "group.key")
	require.NoError(t, os.WriteFile(p, []byte(key+"\n"), 0o600))
	return p
}

// runNodes runs n node verbs of one group at once, node i with --id i,
// --nodes n, --json, --value i+1 unless extra(i) gives one, and extra(i),
// and returns their exit codes, stdouts and stderrs.
func runNodes(t *testing.T, n int, extra func(i int) []string) ([]int, []string, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	codes, outs, errs := make([]int, n), make([]string, n), make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var stdout, stderr bytes.Buffer
			args := append([]string{"node", "--id", fmt.Sprint(i), "--nodes", fmt.Sprint(n), "--value", fmt.Sprint(i + 1), "--json"}, extra(i)...)
			// A later --value overrides the default one.
			codes[i] = run(ctx, args, &stdio{Stdout: &stdout, Stderr: &stderr})
			outs[i], errs[i] = stdout.String(), stderr.String()
		}()
	}
	wg.Wait()
	return codes, outs, errs
}

// TestNodeToken: against a server that requires a token, node without
// --token exits 1 saying authentication failed; with it, the group works.
func TestNodeToken(t *testing.T) {
	ctx := context.Background()
	srv, err := natsserver.StartEmbedded(ctx, natsserver.EmbeddedOptions{Token: "s3cret"})
	require.NoError(t, err)
	defer srv.Shutdown()

	code, _, stderr := runCLI(t, "node", "--nats", srv.ClientURL(), "--id", "0", "--nodes", "2", "--value", "1")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "transport: connect to "+srv.ClientURL()+": NATS authentication failed: the server requires credentials and none were given")
	t.Logf("without --token: %s", stderr)

	code, _, stderr = runCLI(t, "node", "--nats", srv.ClientURL(), "--token", "wrong", "--id", "0", "--nodes", "2", "--value", "1")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "NATS authentication failed: the server refused a token")
	assert.NotContains(t, stderr, "wrong", "the token is not echoed")
	t.Logf("wrong --token: %s", stderr)

	codes, outs, errs := runNodes(t, 2, func(int) []string { return []string{"--nats", srv.ClientURL(), "--token", "s3cret", "--group", "tok"} })
	for i := range codes {
		require.Equal(t, 0, codes[i], "node %d: %s", i, errs[i])
		var o nodeOutput
		require.NoError(t, json.Unmarshal([]byte(outs[i]), &o))
		// The average of 1 and 2, within ε = 1e-9 relative.
		assert.InDelta(t, 1.5, o.Result[0], 1.5e-9)
	}
}

// TestNodePrefixAndKey runs a group under a custom prefix with a group key:
// a plain NATS client subscribed to the prefix sees the traffic, every
// message signed; and a member with another key never hears the group.
func TestNodePrefixAndKey(t *testing.T) {
	ctx := context.Background()
	srv, err := natsserver.StartEmbedded(ctx, natsserver.EmbeddedOptions{})
	require.NoError(t, err)
	defer srv.Shutdown()
	watcher, err := nats.Connect(srv.ClientURL())
	require.NoError(t, err)
	defer watcher.Close()
	scoped, err := watcher.SubscribeSync("acme.metrics.>")
	require.NoError(t, err)
	other, err := watcher.SubscribeSync("gossipreduce.>")
	require.NoError(t, err)
	require.NoError(t, watcher.Flush())

	key := writeKey(t, "0123456789abcdef0123456789abcdef")
	codes, outs, errs := runNodes(t, 3, func(int) []string {
		return []string{"--nats", srv.ClientURL(), "--prefix", "acme.metrics", "--key-file", key, "--group", "fleet", "--sum"}
	})
	for i := range codes {
		require.Equal(t, 0, codes[i], "node %d: %s", i, errs[i])
		var o nodeOutput
		require.NoError(t, json.Unmarshal([]byte(outs[i]), &o))
		// 1 + 2 + 3, within ε = 1e-9 relative.
		assert.InDelta(t, 6.0, o.Result[0], 6e-9)
	}
	msg, err := scoped.NextMsg(time.Second)
	require.NoError(t, err)
	assert.Regexp(t, `^acme\.metrics\.fleet\.[0-2]$`, msg.Subject)
	h, _, err := transport.Decode(msg.Data)
	require.NoError(t, err)
	assert.True(t, h.Signed, "--key-file signs every message")
	_, _, err = transport.DecodeSigned(msg.Data, []byte("0123456789abcdef0123456789abcdef"))
	require.NoError(t, err, "under the key of the file, less its newline")
	pending, _, err := other.Pending()
	require.NoError(t, err)
	assert.Zero(t, pending, "nothing on the default prefix")

	// A member with another key: its messages are forged to the others and
	// theirs to it, so the operation cannot complete.
	wrongKey := writeKey(t, "another key, long enough to use!!")
	codes, outs, errs = runNodes(t, 2, func(i int) []string {
		k := key
		if i == 1 {
			k = wrongKey
		}
		return []string{"--nats", srv.ClientURL(), "--key-file", k, "--group", "split", "--timeout", "300ms", "--suspect", "10s"}
	})
	forged := 0.0
	for i := range codes {
		assert.Equal(t, 1, codes[i], "node %d: %s", i, errs[i])
		var obj map[string]any
		require.NoError(t, json.Unmarshal([]byte(outs[i]), &obj), "a failed node still prints its JSON")
		assert.NotEmpty(t, obj["error"])
		forged += obj["forged"].(float64)
	}
	assert.Positive(t, forged, "the other key's messages are counted as forged")
}

func TestNATSFlagErrors(t *testing.T) {
	short := writeKey(t, "short")
	for name, c := range map[string]struct {
		code int
		args []string
		want string
	}{
		"password without user":  {2, []string{"node", "--id", "0", "--nodes", "1", "--value", "1", "--password", "p"}, "--password needs --user"},
		"cert without key":       {2, []string{"node", "--id", "0", "--nodes", "1", "--value", "1", "--tls-cert", "c.pem"}, "--tls-cert and --tls-key go together"},
		"bad prefix":             {2, []string{"run", "--prefix", "a.*"}, "--prefix"},
		"token without nats":     {2, []string{"run", "--token", "t"}, "give --nats"},
		"bench tls without nats": {2, []string{"bench", "--tls-ca", "ca.pem"}, "give --nats"},
		"short key":              {1, []string{"run", "--nodes", "2", "--key-file", short}, "group key file"},
		"missing key":            {1, []string{"run", "--nodes", "2", "--key-file", filepath.Join(t.TempDir(), "none")}, "transport: group key"},
		"bad CA file":            {1, []string{"node", "--nats", "nats://127.0.0.1:1", "--id", "0", "--nodes", "1", "--value", "1", "--tls-ca", short}, "transport: TLS CA file"},
		"missing nkey":           {1, []string{"node", "--nats", "nats://127.0.0.1:1", "--id", "0", "--nodes", "1", "--value", "1", "--nkey", "none.nk"}, "transport: nkey seed file"},
		"missing creds":          {1, []string{"bench", "--nats", "nats://127.0.0.1:1", "--creds", "none.creds"}, "transport: credentials file"},
	} {
		code, _, stderr := runCLI(t, c.args...)
		assert.Equal(t, c.code, code, "%s: %s", name, stderr)
		assert.Contains(t, stderr, c.want, name)
		assert.NotContains(t, stderr, "panic", name)
	}
}

// TestNATSFlagsOptions checks the mapping of every credential and TLS flag
// onto transport.NATSOptions (the TLS handshakes themselves are tested in
// package transport).
func TestNATSFlagsOptions(t *testing.T) {
	fs := newFlags("test", &stdio{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}})
	nf := &natsFlags{}
	nf.register(fs, "")
	key := writeKey(t, "0123456789abcdef")
	require.NoError(t, parseFlags(fs, []string{"--nats", "nats://a:4222,nats://b:4222", "--token", "t", "--user", "u", "--password", "p", "--creds", "c.creds",
		"--nkey", "u.nk", "--tls-ca", "ca.pem", "--tls-cert", "cl.pem", "--tls-key", "cl-key.pem",
		"--tls-server-name", "nats.example", "--prefix", "acme.metrics", "--key-file", key}))
	opts, err := nf.options(transport.Options{Seed: 7})
	require.NoError(t, err)
	assert.Equal(t, transport.NATSOptions{
		Options:      transport.Options{Seed: 7, Key: []byte("0123456789abcdef")},
		Token:        "t",
		User:         "u",
		Password:     "p",
		CredsFile:    "c.creds",
		NkeySeedFile: "u.nk",
		TLS:          transport.TLSFiles{CA: "ca.pem", Cert: "cl.pem", Key: "cl-key.pem", ServerName: "nats.example"},
	}, opts)
	assert.Equal(t, "acme.metrics", nf.prefix)
	assert.Equal(t, []string{"nats://a:4222", "nats://b:4222"}, nf.urls())
	assert.True(t, nf.connecting())
}

// TestRunAndBenchWithKey: run and bench over their embedded server with a
// group key and a prefix, and bench over an external server that requires
// a user and password.
func TestRunAndBenchWithKey(t *testing.T) {
	key := writeKey(t, "0123456789abcdef0123456789abcdef")
	obj := jsonObject(t, "run", "--nodes", "4", "--seed", "5", "--key-file", key, "--prefix", "acme.run", "--json")
	assert.Equal(t, true, obj["identical"])
	assert.Equal(t, 0.0, obj["failed_runs"])
	// ε = 1e-9 is the run's target accuracy (the --eps default).
	assert.LessOrEqual(t, obj["max_rel_error"].(float64), 1e-9)

	srv, err := natsserver.StartEmbedded(context.Background(), natsserver.EmbeddedOptions{User: "bench", Password: "pw"})
	require.NoError(t, err)
	defer srv.Shutdown()
	obj = jsonObject(t, "bench", "--nats", srv.ClientURL(), "--user", "bench", "--password", "pw", "--key-file", key,
		"--nodes", "4", "--runs", "1", "--algo", "pfcc,rdb", "--seed", "2", "--json")
	for _, a := range obj["algorithms"].([]any) {
		assert.Equal(t, 0.0, a.(map[string]any)["failed_runs"])
	}
	code, _, stderr := runCLI(t, "bench", "--nats", srv.ClientURL(), "--user", "bench", "--password", "nope", "--nodes", "2", "--runs", "1")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `NATS authentication failed: the server refused user "bench" with a password`)
}

// TestNoKeyWarning: run and bench over an external server without
// --key-file warn that anybody who can publish can forge results; with a
// key, or over their embedded server, they do not.
func TestNoKeyWarning(t *testing.T) {
	srv, err := natsserver.StartEmbedded(context.Background(), natsserver.EmbeddedOptions{})
	require.NoError(t, err)
	defer srv.Shutdown()
	key := writeKey(t, "0123456789abcdef0123456789abcdef")
	const warning = "warning: no group key: any client that can publish on acme.> at this NATS server can forge messages and results; give every member the same --key-file"

	code, stdout, stderr := runCLI(t, "run", "--nats", srv.ClientURL(), "--prefix", "acme", "--nodes", "2", "--seed", "1", "--json")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "gossipreduce run: "+warning)
	var obj map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &obj))
	require.Len(t, obj["warnings"], 1)
	assert.Contains(t, obj["warnings"].([]any)[0], "--key-file")

	code, _, stderr = runCLI(t, "bench", "--nats", srv.ClientURL(), "--prefix", "acme", "--nodes", "2", "--runs", "1", "--algo", "rdb", "--seed", "1")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "gossipreduce bench: "+warning)

	for _, args := range [][]string{
		{"run", "--nats", srv.ClientURL(), "--key-file", key},
		{"bench", "--nats", srv.ClientURL(), "--key-file", key, "--runs", "1", "--algo", "rdb"},
		{"run"},
		{"bench", "--runs", "1", "--algo", "rdb"},
	} {
		code, _, stderr := runCLI(t, append(args, "--nodes", "2", "--seed", "1")...)
		require.Equal(t, 0, code, stderr)
		assert.NotContains(t, stderr, "no group key", args)
	}
}
