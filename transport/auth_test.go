package transport_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/transport"
	"github.com/gossipreduce/gossipreduce/transport/internal/testnats"
	"github.com/gossipreduce/gossipreduce/transport/natsserver"
)

// TestTLS runs a server that requires TLS and verifies client certificates:
// the right CA with a client certificate works; no client certificate, the
// wrong CA, or no TLS at all fail with errors wrapping ErrTLS that say so.
func TestTLS(t *testing.T) {
	s := testnats.NewSetup(t)
	srv := testnats.StartServer(t, natsserver.EmbeddedOptions{TLS: transport.TLSFiles{Cert: s.Server.Cert, Key: s.Server.Key, CA: s.CA.File}})
	urls := []string{srv.ClientURL()}

	good := transport.TLSFiles{CA: s.CA.File, Cert: s.Client.Cert, Key: s.Client.Key}
	tr := connect(t, urls, transport.NATSOptions{TLS: good})
	eps := openNodes(t, tr, transport.Group{Name: "tls"}, 2)
	pingPong(t, eps[0], eps[1], 1)
	state, err := tr.Conn().TLSConnectionState()
	require.NoError(t, err)
	assert.True(t, state.HandshakeComplete)
	require.Len(t, state.PeerCertificates, 1)
	assert.Equal(t, "server", state.PeerCertificates[0].Subject.CommonName)

	byName := good
	byName.ServerName = "localhost" // the server's certificate names it too
	require.NoError(t, connect(t, urls, transport.NATSOptions{TLS: byName}).Conn().Flush())

	ctx := testCtx(t)
	cases := []struct {
		name string
		tls  transport.TLSFiles
		want string
	}{
		{"no client certificate", transport.TLSFiles{CA: s.CA.File}, "the server rejected the TLS connection (a missing or untrusted client certificate?)"},
		{"untrusted client certificate", transport.TLSFiles{CA: s.CA.File, Cert: s.RogueClient.Cert, Key: s.RogueClient.Key}, "the server rejected the TLS connection"},
		{"wrong CA", transport.TLSFiles{CA: s.WrongCA.File, Cert: s.Client.Cert, Key: s.Client.Key}, "certificate"},
		{"wrong server name", transport.TLSFiles{CA: s.CA.File, Cert: s.Client.Cert, Key: s.Client.Key, ServerName: "elsewhere"}, "certificate"},
		{"no TLS configured", transport.TLSFiles{}, "certificate"},
	}
	for _, c := range cases {
		_, err := transport.Connect(ctx, urls, transport.NATSOptions{TLS: c.tls})
		require.ErrorIs(t, err, transport.ErrTLS, c.name)
		require.NotErrorIs(t, err, transport.ErrAuth, c.name)
		assert.Contains(t, err.Error(), "transport: connect to "+srv.ClientURL()+": NATS TLS failed", c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
		t.Logf("%s: %v", c.name, err)
	}
}

// TestTLSAskedButNotOffered: a client configured for TLS refuses a server
// without it rather than sending credentials in the clear.
func TestTLSAskedButNotOffered(t *testing.T) {
	s := testnats.NewSetup(t)
	srv := testnats.StartServer(t, natsserver.EmbeddedOptions{})
	_, err := transport.Connect(testCtx(t), []string{srv.ClientURL()}, transport.NATSOptions{TLS: transport.TLSFiles{CA: s.CA.File}})
	require.ErrorIs(t, err, transport.ErrTLS)
	assert.Contains(t, err.Error(), "the server does not offer it")
}

func TestTLSFileErrors(t *testing.T) {
	s := testnats.NewSetup(t)
	missing, notPEM := testnats.BadFiles(t)
	ctx := testCtx(t)
	url := []string{"nats://127.0.0.1:1"} // never dialled: the files fail first
	for name, f := range map[string]transport.TLSFiles{
		"missing CA":       {CA: missing},
		"CA not PEM":       {CA: notPEM},
		"missing cert":     {Cert: missing, Key: s.Client.Key},
		"cert without key": {Cert: s.Client.Cert},
		"key mismatch":     {Cert: s.Client.Cert, Key: s.Server.Key},
	} {
		_, err := transport.Connect(ctx, url, transport.NATSOptions{TLS: f})
		require.Error(t, err, name)
		assert.Regexp(t, `^transport: `, err.Error(), name)
		assert.NotContains(t, err.Error(), "connect to", "%s: fails before dialling", name)
	}
}

// writeSeed writes the seed of kp to a file and returns its path.
func writeSeed(t *testing.T, kp nkeys.KeyPair) string {
	t.Helper()
	seed, err := kp.Seed()
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "user.nk")
	require.NoError(t, os.WriteFile(p, seed, 0o600))
	return p
}

// TestNkey: the server accepts the user nkey generated here; a client
// signing with another nkey is refused with ErrAuth.
func TestNkey(t *testing.T) {
	user, err := nkeys.CreateUser()
	require.NoError(t, err)
	pub, err := user.PublicKey()
	require.NoError(t, err)
	stranger, err := nkeys.CreateUser()
	require.NoError(t, err)
	srv := testnats.StartServer(t, natsserver.EmbeddedOptions{NKeys: []string{pub}, User: "alice", Password: "pw"})
	urls := []string{srv.ClientURL()}

	tr := connect(t, urls, transport.NATSOptions{NkeySeedFile: writeSeed(t, user)})
	eps := openNodes(t, tr, transport.Group{Name: "nkey"}, 2)
	pingPong(t, eps[0], eps[1], 1)
	require.NoError(t, connect(t, urls, transport.NATSOptions{User: "alice", Password: "pw"}).Conn().Flush(), "users and nkeys together")

	strangerFile := writeSeed(t, stranger)
	_, err = transport.Connect(testCtx(t), urls, transport.NATSOptions{NkeySeedFile: strangerFile})
	require.ErrorIs(t, err, transport.ErrAuth)
	assert.Contains(t, err.Error(), "NATS authentication failed: the server refused the nkey of "+strangerFile)
	t.Logf("wrong nkey: %v", err)

	_, err = transport.Connect(testCtx(t), urls, transport.NATSOptions{NkeySeedFile: filepath.Join(t.TempDir(), "none")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "transport: nkey seed file")
}

// TestCredsFile runs a server in operator mode, with the operator, account
// and user made here, and connects with the user's credentials file.
func TestCredsFile(t *testing.T) {
	operator, err := nkeys.CreateOperator()
	require.NoError(t, err)
	opub, err := operator.PublicKey()
	require.NoError(t, err)
	oclaims := jwt.NewOperatorClaims(opub)
	ojwt, err := oclaims.Encode(operator)
	require.NoError(t, err)
	oclaims, err = jwt.DecodeOperatorClaims(ojwt)
	require.NoError(t, err)

	account, err := nkeys.CreateAccount()
	require.NoError(t, err)
	apub, err := account.PublicKey()
	require.NoError(t, err)
	ajwt, err := jwt.NewAccountClaims(apub).Encode(operator)
	require.NoError(t, err)

	credsFor := func(signer nkeys.KeyPair) string {
		user, err := nkeys.CreateUser()
		require.NoError(t, err)
		upub, err := user.PublicKey()
		require.NoError(t, err)
		uclaims := jwt.NewUserClaims(upub)
		uclaims.IssuerAccount = apub
		ujwt, err := uclaims.Encode(signer)
		require.NoError(t, err)
		seed, err := user.Seed()
		require.NoError(t, err)
		creds, err := jwt.FormatUserConfig(ujwt, seed)
		require.NoError(t, err)
		p := filepath.Join(t.TempDir(), "user.creds")
		require.NoError(t, os.WriteFile(p, creds, 0o600))
		return p
	}

	resolver := &server.MemAccResolver{}
	require.NoError(t, resolver.Store(apub, ajwt))
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true,
		TrustedOperators: []*jwt.OperatorClaims{oclaims}, AccountResolver: resolver})
	require.NoError(t, err)
	ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	require.True(t, ns.ReadyForConnections(patience))
	urls := []string{ns.ClientURL()}

	tr := connect(t, urls, transport.NATSOptions{CredsFile: credsFor(account)})
	eps := openNodes(t, tr, transport.Group{Name: "creds"}, 2)
	pingPong(t, eps[0], eps[1], 1)

	// A user signed by an account the operator never issued is refused.
	rogue, err := nkeys.CreateAccount()
	require.NoError(t, err)
	rogueCreds := credsFor(rogue)
	_, err = transport.Connect(testCtx(t), urls, transport.NATSOptions{CredsFile: rogueCreds})
	require.ErrorIs(t, err, transport.ErrAuth)
	assert.Contains(t, err.Error(), "the server refused the credentials file "+rogueCreds)

	_, err = transport.Connect(testCtx(t), urls, transport.NATSOptions{CredsFile: filepath.Join(t.TempDir(), "none.creds")})
	require.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, err.Error(), "transport: credentials file")
}

// TestWrongCredentialsText pins the error texts of a wrong token and a
// wrong password, over TCP and in process: they say that authentication
// failed and what was refused, never echo the secret, and are not a closed
// pipe.
func TestWrongCredentialsText(t *testing.T) {
	for _, inProcess := range []bool{false, true} {
		tokenSrv := testnats.StartServer(t, natsserver.EmbeddedOptions{Token: "right-token", InProcess: inProcess})
		userSrv := testnats.StartServer(t, natsserver.EmbeddedOptions{User: "alice", Password: "right-password", InProcess: inProcess})
		// The cause is the server's text over TCP ("Authorization
		// Violation"); in process, the embedded server refuses the
		// credentials before the pipe, with nats.ErrAuthorization, which
		// nats.go reports as a failure to get the connection.
		where, cause := "the in-process server", "failed to get in-process connection: nats: authorization violation"
		if !inProcess {
			where, cause = tokenSrv.ClientURL(), "nats: authorization violation"
		}
		_, err := tokenSrv.Connect(testCtx(t), transport.NATSOptions{Token: "wrong-token"})
		require.ErrorIs(t, err, transport.ErrAuth)
		assert.Equal(t, strings.ToLower("transport: connect to "+where+": NATS authentication failed: the server refused a token: "+cause), strings.ToLower(err.Error()))
		t.Logf("wrong token (in process %v): %v", inProcess, err)

		if !inProcess {
			where = userSrv.ClientURL()
		}
		_, err = userSrv.Connect(testCtx(t), transport.NATSOptions{User: "alice", Password: "wrong-password"})
		require.ErrorIs(t, err, transport.ErrAuth)
		assert.Equal(t, strings.ToLower("transport: connect to "+where+`: NATS authentication failed: the server refused user "alice" with a password: `+cause), strings.ToLower(err.Error()))
		assert.NotContains(t, err.Error(), "pipe")
		t.Logf("wrong password (in process %v): %v", inProcess, err)

		if !inProcess {
			_, err = transport.Connect(testCtx(t), []string{userSrv.ClientURL()}, transport.NATSOptions{})
			require.ErrorIs(t, err, transport.ErrAuth)
			assert.Contains(t, err.Error(), ": NATS authentication failed: the server requires credentials and none were given: ")
			t.Logf("no credentials: %v", err)
		}
		tr, err := userSrv.Connect(testCtx(t), transport.NATSOptions{})
		require.NoError(t, err, "Server.Connect uses the server's user and password")
		require.NoError(t, tr.Close())
	}
}
