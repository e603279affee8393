package transport_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/gossip"
	"github.com/gossipreduce/gossipreduce/transport"
)

// certAuthority is a throwaway CA of one test.
type certAuthority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // its certificate, PEM
}

var serial int64

// newCA makes a self-signed CA and writes its certificate to dir.
func newCA(t *testing.T, dir, name string) *certAuthority {
	t.Helper()
	tmpl := template(name)
	tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign
	der, key := makeCert(t, tmpl, nil)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	ca := &certAuthority{cert: cert, key: key, file: filepath.Join(dir, name+".pem")}
	writePEM(t, ca.file, "CERTIFICATE", der)
	return ca
}

// template is a certificate for name, valid for the next hour.
func template(name string) *x509.Certificate {
	serial++
	return &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
}

// makeCert makes a key and the certificate tmpl for it, signed by ca
// (self-signed when ca is nil).
func makeCert(t *testing.T, tmpl *x509.Certificate, ca *certAuthority) ([]byte, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	parent, parentKey := tmpl, key
	if ca != nil {
		parent, parentKey = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	require.NoError(t, err)
	return der, key
}

// issue makes a certificate signed by ca, for a server (valid for
// 127.0.0.1 and localhost) or a client, and writes it and its key to dir.
func (ca *certAuthority) issue(t *testing.T, dir, name string, usage x509.ExtKeyUsage) transport.TLSFiles {
	t.Helper()
	tmpl := template(name)
	tmpl.KeyUsage, tmpl.ExtKeyUsage = x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{usage}
	if usage == x509.ExtKeyUsageServerAuth {
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		tmpl.DNSNames = []string{"localhost"}
	}
	der, key := makeCert(t, tmpl, ca)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	f := transport.TLSFiles{Cert: filepath.Join(dir, name+".pem"), Key: filepath.Join(dir, name+"-key.pem")}
	writePEM(t, f.Cert, "CERTIFICATE", der)
	writePEM(t, f.Key, "PRIVATE KEY", keyDER)
	return f
}

func writePEM(t *testing.T, file, typ string, der []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
}

// tlsSetup is a server certificate and a client certificate from one CA,
// and an unrelated CA.
type tlsSetup struct {
	ca, wrongCA    *certAuthority
	server, client transport.TLSFiles
	rogueClient    transport.TLSFiles // signed by wrongCA
}

func newTLSSetup(t *testing.T) tlsSetup {
	dir := t.TempDir()
	s := tlsSetup{ca: newCA(t, dir, "ca"), wrongCA: newCA(t, dir, "wrong-ca")}
	s.server = s.ca.issue(t, dir, "server", x509.ExtKeyUsageServerAuth)
	s.client = s.ca.issue(t, dir, "client", x509.ExtKeyUsageClientAuth)
	s.rogueClient = s.wrongCA.issue(t, dir, "rogue-client", x509.ExtKeyUsageClientAuth)
	return s
}

// TestTLS runs a server that requires TLS and verifies client certificates:
// the right CA with a client certificate works; no client certificate, the
// wrong CA, or no TLS at all fail with errors wrapping ErrTLS that say so.
func TestTLS(t *testing.T) {
	s := newTLSSetup(t)
	srv := startServer(t, transport.EmbeddedOptions{TLS: transport.TLSFiles{Cert: s.server.Cert, Key: s.server.Key, CA: s.ca.file}})
	urls := []string{srv.ClientURL()}

	good := transport.TLSFiles{CA: s.ca.file, Cert: s.client.Cert, Key: s.client.Key}
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
		{"no client certificate", transport.TLSFiles{CA: s.ca.file}, "the server rejected the TLS connection (a missing or untrusted client certificate?)"},
		{"untrusted client certificate", transport.TLSFiles{CA: s.ca.file, Cert: s.rogueClient.Cert, Key: s.rogueClient.Key}, "the server rejected the TLS connection"},
		{"wrong CA", transport.TLSFiles{CA: s.wrongCA.file, Cert: s.client.Cert, Key: s.client.Key}, "certificate"},
		{"wrong server name", transport.TLSFiles{CA: s.ca.file, Cert: s.client.Cert, Key: s.client.Key, ServerName: "elsewhere"}, "certificate"},
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

// TestTLSWithoutClientVerification: a server with a certificate but no CA
// accepts clients that trust its CA and have no certificate.
func TestTLSWithoutClientVerification(t *testing.T) {
	s := newTLSSetup(t)
	srv := startServer(t, transport.EmbeddedOptions{TLS: transport.TLSFiles{Cert: s.server.Cert, Key: s.server.Key}, Token: "tok"})
	tr, err := srv.Connect(testCtx(t), transport.NATSOptions{TLS: transport.TLSFiles{CA: s.ca.file}})
	require.NoError(t, err, "Server.Connect adds the server's token, the caller the CA")
	t.Cleanup(func() { require.NoError(t, tr.Close()) })
	eps := openNodes(t, tr, transport.Group{Name: "tls-noverify"}, 2)
	pingPong(t, eps[0], eps[1], 1)
}

// TestTLSAskedButNotOffered: a client configured for TLS refuses a server
// without it rather than sending credentials in the clear.
func TestTLSAskedButNotOffered(t *testing.T) {
	s := newTLSSetup(t)
	srv := startServer(t, transport.EmbeddedOptions{})
	_, err := transport.Connect(testCtx(t), []string{srv.ClientURL()}, transport.NATSOptions{TLS: transport.TLSFiles{CA: s.ca.file}})
	require.ErrorIs(t, err, transport.ErrTLS)
	assert.Contains(t, err.Error(), "the server does not offer it")
}

func TestTLSFileErrors(t *testing.T) {
	s := newTLSSetup(t)
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.pem")
	notPEM := filepath.Join(dir, "not.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("hello"), 0o600))
	ctx := testCtx(t)
	url := []string{"nats://127.0.0.1:1"} // never dialled: the files fail first
	for name, f := range map[string]transport.TLSFiles{
		"missing CA":       {CA: missing},
		"CA not PEM":       {CA: notPEM},
		"missing cert":     {Cert: missing, Key: s.client.Key},
		"cert without key": {Cert: s.client.Cert},
		"key mismatch":     {Cert: s.client.Cert, Key: s.server.Key},
	} {
		_, err := transport.Connect(ctx, url, transport.NATSOptions{TLS: f})
		require.Error(t, err, name)
		assert.Regexp(t, `^transport: `, err.Error(), name)
		assert.NotContains(t, err.Error(), "connect to", "%s: fails before dialling", name)
	}
	for name, f := range map[string]transport.TLSFiles{
		"no key":      {Cert: s.server.Cert},
		"server name": {Cert: s.server.Cert, Key: s.server.Key, ServerName: "x"},
		"missing CA":  {Cert: s.server.Cert, Key: s.server.Key, CA: missing},
	} {
		_, err := transport.StartEmbedded(ctx, transport.EmbeddedOptions{TLS: f})
		require.Error(t, err, name)
		assert.Regexp(t, `^transport: `, err.Error(), name)
	}
	_, err := transport.StartEmbedded(ctx, transport.EmbeddedOptions{InProcess: true, TLS: transport.TLSFiles{Cert: s.server.Cert, Key: s.server.Key}})
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
	inproc := startServer(t, transport.EmbeddedOptions{InProcess: true})
	_, err = inproc.Connect(ctx, transport.NATSOptions{TLS: transport.TLSFiles{CA: s.ca.file}})
	require.ErrorIs(t, err, gossip.ErrInvalidConfig)
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
	srv := startServer(t, transport.EmbeddedOptions{NKeys: []string{pub}, User: "alice", Password: "pw"})
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
	for _, bad := range []transport.EmbeddedOptions{
		{NKeys: []string{"not a key"}},
		{NKeys: []string{pub}, Token: "t"},
		{NKeys: []string{pub}, InProcess: true},
		{Password: "no user"},
	} {
		_, err := transport.StartEmbedded(testCtx(t), bad)
		require.ErrorIs(t, err, gossip.ErrInvalidConfig, "%+v", bad)
	}
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
		tokenSrv := startServer(t, transport.EmbeddedOptions{Token: "right-token", InProcess: inProcess})
		userSrv := startServer(t, transport.EmbeddedOptions{User: "alice", Password: "right-password", InProcess: inProcess})
		where := "the in-process server"
		if !inProcess {
			where = tokenSrv.ClientURL()
		}
		_, err := tokenSrv.Connect(testCtx(t), transport.NATSOptions{Token: "wrong-token"})
		require.ErrorIs(t, err, transport.ErrAuth)
		// The cause is the server's text over TCP ("Authorization
		// Violation") and nats.ErrAuthorization's in process.
		assert.Equal(t, strings.ToLower("transport: connect to "+where+": NATS authentication failed: the server refused a token: nats: authorization violation"), strings.ToLower(err.Error()))
		t.Logf("wrong token (in process %v): %v", inProcess, err)

		if !inProcess {
			where = userSrv.ClientURL()
		}
		_, err = userSrv.Connect(testCtx(t), transport.NATSOptions{User: "alice", Password: "wrong-password"})
		require.ErrorIs(t, err, transport.ErrAuth)
		assert.Equal(t, strings.ToLower("transport: connect to "+where+`: NATS authentication failed: the server refused user "alice" with a password: nats: authorization violation`), strings.ToLower(err.Error()))
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
