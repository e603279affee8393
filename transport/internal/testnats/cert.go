package testnats

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
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gossipreduce/gossipreduce/transport"
)

// CA is a throwaway certificate authority of one test.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey

	// File holds its certificate, PEM.
	File string
}

var serial atomic.Int64

// NewCA makes a self-signed CA and writes its certificate to dir.
func NewCA(t testing.TB, dir, name string) *CA {
	t.Helper()
	tmpl := template(name)
	tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign
	der, key := makeCert(t, tmpl, nil)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	ca := &CA{cert: cert, key: key, File: filepath.Join(dir, name+".pem")}
	writePEM(t, ca.File, "CERTIFICATE", der)
	return ca
}

// template is a certificate for name, valid for the next hour.
func template(name string) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
}

// makeCert makes a key and the certificate tmpl for it, signed by ca
// (self-signed when ca is nil).
func makeCert(t testing.TB, tmpl *x509.Certificate, ca *CA) ([]byte, *ecdsa.PrivateKey) {
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

// Issue makes a certificate signed by ca, for a server (valid for
// 127.0.0.1 and localhost) or a client, and writes it and its key to dir.
func (ca *CA) Issue(t testing.TB, dir, name string, usage x509.ExtKeyUsage) transport.TLSFiles {
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

func writePEM(t testing.TB, file, typ string, der []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
}

// Setup is a server certificate and a client certificate from one CA,
// and an unrelated CA with a client certificate of its own.
type Setup struct {
	CA, WrongCA    *CA
	Server, Client transport.TLSFiles
	RogueClient    transport.TLSFiles // signed by WrongCA
}

// BadFiles writes a file that is not PEM to a temporary directory of t and
// returns its name and that of a file that does not exist there.
func BadFiles(t testing.TB) (missing, notPEM string) {
	t.Helper()
	dir := t.TempDir()
	missing, notPEM = filepath.Join(dir, "missing.pem"), filepath.Join(dir, "not.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("hello"), 0o600))
	return missing, notPEM
}

// NewSetup makes a Setup in a temporary directory of t.
func NewSetup(t testing.TB) Setup {
	t.Helper()
	dir := t.TempDir()
	s := Setup{CA: NewCA(t, dir, "ca"), WrongCA: NewCA(t, dir, "wrong-ca")}
	s.Server = s.CA.Issue(t, dir, "server", x509.ExtKeyUsageServerAuth)
	s.Client = s.CA.Issue(t, dir, "client", x509.ExtKeyUsageClientAuth)
	s.RogueClient = s.WrongCA.Issue(t, dir, "rogue-client", x509.ExtKeyUsageClientAuth)
	return s
}
