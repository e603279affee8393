package natsserver_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/gossipreduce/gossipreduce/transport/internal/testnats"
	"github.com/gossipreduce/gossipreduce/transport/natsserver"
)

func TestStartEmbeddedErrors(t *testing.T) {
	srv := testnats.StartServer(t, natsserver.EmbeddedOptions{})
	u, err := url.Parse(srv.ClientURL())
	require.NoError(t, err)
	port, err := strconv.Atoi(u.Port())
	require.NoError(t, err)
	_, err = natsserver.StartEmbedded(testCtx(t), natsserver.EmbeddedOptions{Port: port})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "address already in use")
	assert.Regexp(t, `^natsserver: `, err.Error())

	for _, p := range []int{-1, 65536} {
		_, err = natsserver.StartEmbedded(testCtx(t), natsserver.EmbeddedOptions{Port: p})
		require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = natsserver.StartEmbedded(cancelled, natsserver.EmbeddedOptions{})
	require.ErrorIs(t, err, context.Canceled)

	assert.Empty(t, testnats.StartServer(t, natsserver.EmbeddedOptions{InProcess: true}).ClientURL())
	assert.Regexp(t, `^nats://127\.0\.0\.1:\d+$`, srv.ClientURL())
}

// TestBadAuthOptions: credentials the server cannot take together, or not
// in process, and a malformed nkey, fail before anything starts.
func TestBadAuthOptions(t *testing.T) {
	user, err := nkeys.CreateUser()
	require.NoError(t, err)
	pub, err := user.PublicKey()
	require.NoError(t, err)
	for _, bad := range []natsserver.EmbeddedOptions{
		{NKeys: []string{"not a key"}},
		{NKeys: []string{pub}, Token: "t"},
		{NKeys: []string{pub}, InProcess: true},
		{Password: "no user"},
	} {
		_, err := natsserver.StartEmbedded(testCtx(t), bad)
		require.ErrorIs(t, err, gossip.ErrInvalidConfig, "%+v", bad)
		assert.Regexp(t, `^natsserver: `, err.Error())
	}
}

// TestConnectUsesServerCredentials: Server.Connect gives the server's
// token, over TCP and in process; a wrong token given instead is refused
// with an error wrapping transport.ErrAuth and nats.ErrAuthorization.
func TestConnectUsesServerCredentials(t *testing.T) {
	for _, inProcess := range []bool{false, true} {
		t.Run("inprocess="+strconv.FormatBool(inProcess), func(t *testing.T) {
			srv := testnats.StartServer(t, natsserver.EmbeddedOptions{Token: "s3cret", InProcess: inProcess})
			ctx := testCtx(t)
			tr, err := srv.Connect(ctx, transport.NATSOptions{})
			require.NoError(t, err, "Server.Connect uses the server's token")
			assert.Equal(t, 1, srv.NumClients())
			requireTraffic(t, tr, "auth")

			_, err = srv.Connect(ctx, transport.NATSOptions{Token: "wrong"})
			require.ErrorIs(t, err, transport.ErrAuth)
			require.ErrorIs(t, err, nats.ErrAuthorization)
			assert.Contains(t, err.Error(), "authentication failed")
			assert.NotContains(t, err.Error(), "wrong", "the error must not echo the credentials")
		})
	}
}

// TestTokenToOpenServer: a server without authentication accepts clients
// that send a token anyway, in process as over TCP (as NATS does).
func TestTokenToOpenServer(t *testing.T) {
	for _, inProcess := range []bool{false, true} {
		srv := testnats.StartServer(t, natsserver.EmbeddedOptions{InProcess: inProcess})
		tr, err := srv.Connect(testCtx(t), transport.NATSOptions{Token: "unneeded"})
		require.NoError(t, err, "in process: %v", inProcess)
		require.NoError(t, tr.Close())
	}
}

// TestConnectDoesNotWarn: Server.Connect without a group key logs no
// missing-key warning, in process or over TCP: the process runs the
// server. transport.Connect to the same server does.
func TestConnectDoesNotWarn(t *testing.T) {
	var buf bytes.Buffer
	opts := transport.NATSOptions{Options: transport.Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))}}
	for _, inProcess := range []bool{false, true} {
		srv := testnats.StartServer(t, natsserver.EmbeddedOptions{InProcess: inProcess})
		tr, err := srv.Connect(testCtx(t), opts)
		require.NoError(t, err)
		require.NoError(t, tr.Close())
		assert.NotContains(t, buf.String(), "no group key", "in process: %v", inProcess)
		if !inProcess {
			tr, err := transport.Connect(testCtx(t), []string{srv.ClientURL()}, opts)
			require.NoError(t, err)
			require.NoError(t, tr.Close())
			assert.Equal(t, 1, strings.Count(buf.String(), "no group key"))
			buf.Reset()
		}
	}
}

// TestTLSFileErrors: server TLS without a certificate or key, with a
// server name, or with files that are missing, not PEM or do not match,
// fails with an error of this package that names the file; so does TLS in
// process, where there is no socket, on either side.
func TestTLSFileErrors(t *testing.T) {
	s := testnats.NewSetup(t)
	missing, notPEM := testnats.BadFiles(t)
	ctx := testCtx(t)
	for name, c := range map[string]struct {
		tls  transport.TLSFiles
		want string
	}{
		"no key":       {transport.TLSFiles{Cert: s.Server.Cert}, "invalid configuration"},
		"server name":  {transport.TLSFiles{Cert: s.Server.Cert, Key: s.Server.Key, ServerName: "x"}, "invalid configuration"},
		"missing CA":   {transport.TLSFiles{Cert: s.Server.Cert, Key: s.Server.Key, CA: missing}, missing},
		"CA not PEM":   {transport.TLSFiles{Cert: s.Server.Cert, Key: s.Server.Key, CA: notPEM}, notPEM},
		"missing cert": {transport.TLSFiles{Cert: missing, Key: s.Server.Key}, missing},
		"key mismatch": {transport.TLSFiles{Cert: s.Server.Cert, Key: s.Client.Key}, s.Client.Key},
	} {
		_, err := natsserver.StartEmbedded(ctx, natsserver.EmbeddedOptions{TLS: c.tls})
		require.Error(t, err, name)
		assert.Regexp(t, `^natsserver: `, err.Error(), name)
		assert.Contains(t, err.Error(), c.want, name)
	}
	_, err := natsserver.StartEmbedded(ctx, natsserver.EmbeddedOptions{InProcess: true, TLS: transport.TLSFiles{Cert: s.Server.Cert, Key: s.Server.Key}})
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	inproc := testnats.StartServer(t, natsserver.EmbeddedOptions{InProcess: true})
	_, err = inproc.Connect(ctx, transport.NATSOptions{TLS: transport.TLSFiles{CA: s.CA.File}})
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
}

// TestTLSWithoutClientVerification: a server with a certificate but no CA
// accepts clients that trust its CA and have no certificate.
func TestTLSWithoutClientVerification(t *testing.T) {
	s := testnats.NewSetup(t)
	srv := testnats.StartServer(t, natsserver.EmbeddedOptions{TLS: transport.TLSFiles{Cert: s.Server.Cert, Key: s.Server.Key}, Token: "tok"})
	tr, err := srv.Connect(testCtx(t), transport.NATSOptions{TLS: transport.TLSFiles{CA: s.CA.File}})
	require.NoError(t, err, "Server.Connect adds the server's token, the caller the CA")
	requireTraffic(t, tr, "tls-noverify")
}

// TestLogger: the server's log goes to the logger at debug level, marked
// as the server's.
func TestLogger(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv := testnats.StartServer(t, natsserver.EmbeddedOptions{Logger: log})
	srv.Shutdown()
	assert.Contains(t, buf.String(), "level=DEBUG")
	assert.Contains(t, buf.String(), "component=nats-server")
}
