package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serverTestBuffer is a bytes.Buffer safe to read while the verb writes.
type serverTestBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *serverTestBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *serverTestBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// startServerVerb runs "gossipreduce server args…" until the test cancels it
// and returns the first line it printed, the cancel function and the exit
// status channel.
func startServerVerb(t *testing.T, args ...string) (string, context.CancelFunc, <-chan int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stdout, stderr := &serverTestBuffer{}, &serverTestBuffer{}
	code := make(chan int, 1)
	go func() { code <- run(ctx, append([]string{"server"}, args...), &stdio{Stdout: stdout, Stderr: stderr}) }()
	// A guard against hanging, not a timing expectation.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if line, _, ok := strings.Cut(stdout.String(), "\n"); ok {
			return line, cancel, code
		}
		select {
		case c := <-code:
			require.FailNowf(t, "server verb exited", "status %d, stderr: %s", c, stderr.String())
		default:
		}
		require.True(t, time.Now().Before(deadline), "server printed nothing; stderr: %s", stderr.String())
		time.Sleep(5 * time.Millisecond)
	}
}

// requireRoundTrip connects a plain nats.go client to url and checks that a
// message published to a gossipreduce subject comes back.
func requireRoundTrip(t *testing.T, url string, opts ...nats.Option) {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	require.NoError(t, err)
	defer nc.Close()
	sub, err := nc.SubscribeSync("gossipreduce.>")
	require.NoError(t, err)
	require.NoError(t, nc.Publish("gossipreduce.demo.1", []byte("ping")))
	msg, err := sub.NextMsg(20 * time.Second)
	require.NoError(t, err)
	assert.Equal(t, "ping", string(msg.Data))
}

func TestServerVerb(t *testing.T) {
	line, cancel, code := startServerVerb(t, "--port", "0")
	assert.Regexp(t, `^nats://127\.0\.0\.1:\d+$`, line)
	requireRoundTrip(t, line)
	cancel()
	require.Equal(t, 0, <-code)
	_, err := nats.Connect(line, nats.MaxReconnects(0))
	require.Error(t, err, "the server is gone after the context ends")
}

func TestServerVerbJSON(t *testing.T) {
	line, cancel, code := startServerVerb(t, "--port", "0", "--json", "--token", "s3cret")
	var out struct {
		URL string `json:"url"`
	}
	require.NoError(t, json.Unmarshal([]byte(line), &out))
	requireRoundTrip(t, out.URL, nats.Token("s3cret"))
	_, err := nats.Connect(out.URL)
	require.ErrorIs(t, err, nats.ErrAuthorization, "the token is required")
	cancel()
	require.Equal(t, 0, <-code)
}

func TestServerVerbErrors(t *testing.T) {
	for _, args := range [][]string{{"--port", "-1"}, {"--port", "65536"}, {"--port", "x"}, {"extra"}} {
		var stderr bytes.Buffer
		code := run(context.Background(), append([]string{"server"}, args...), &stdio{Stdout: &bytes.Buffer{}, Stderr: &stderr})
		assert.Equal(t, 2, code, "args %v: %s", args, stderr.String())
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"server", "--port", port}, &stdio{Stdout: &bytes.Buffer{}, Stderr: &stderr})
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr.String(), "address already in use")
}

// TestServerVerbUserPassword: the server verb requires a user and password
// when given, and a node verb passes them through.
func TestServerVerbUserPassword(t *testing.T) {
	line, cancel, code := startServerVerb(t, "--port", "0", "--user", "alice", "--password", "pw")
	requireRoundTrip(t, line, nats.UserInfo("alice", "pw"))
	_, err := nats.Connect(line, nats.UserInfo("alice", "wrong"))
	require.ErrorIs(t, err, nats.ErrAuthorization)

	c, _, stderr := runCLI(t, "node", "--nats", line, "--user", "alice", "--password", "wrong", "--id", "0", "--nodes", "1", "--value", "1")
	assert.Equal(t, 1, c)
	assert.Contains(t, stderr, `NATS authentication failed: the server refused user "alice" with a password`)
	codes, outs, errs := runNodes(t, 2, func(int) []string { return []string{"--nats", line, "--user", "alice", "--password", "pw"} })
	for i := range codes {
		require.Equal(t, 0, codes[i], errs[i])
		assert.Contains(t, outs[i], `"result": [`)
	}
	cancel()
	require.Equal(t, 0, <-code)
}

func TestServerVerbSecurityErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.pem")
	for name, c := range map[string]struct {
		code int
		args []string
		want string
	}{
		"token and user":    {2, []string{"--token", "t", "--user", "u", "--password", "p"}, "--token or --user"},
		"user alone":        {2, []string{"--user", "u"}, "--user and --password go together"},
		"cert alone":        {2, []string{"--tls-cert", missing}, "--tls-cert and --tls-key go together"},
		"CA alone":          {2, []string{"--tls-ca", missing}, "--tls-ca needs --tls-cert"},
		"missing cert file": {1, []string{"--port", "0", "--tls-cert", missing, "--tls-key", missing}, "natsserver: TLS certificate " + missing},
	} {
		var stderr bytes.Buffer
		got := run(context.Background(), append([]string{"server"}, c.args...), &stdio{Stdout: &bytes.Buffer{}, Stderr: &stderr})
		assert.Equal(t, c.code, got, "%s: %s", name, stderr.String())
		assert.Contains(t, stderr.String(), c.want, name)
	}
}
