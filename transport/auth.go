package transport

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/gossipreduce/gossipreduce/gossip"
)

// ErrTLS reports that a TLS connection to a NATS server could not be set
// up: the server's certificate did not verify (wrong CA, wrong name), the
// server refused the client's certificate or the lack of one, or one side
// wants TLS and the other does not. The error wraps it and the cause.
var ErrTLS = errors.New("transport: NATS TLS failed")

// TLSFiles name the PEM files of one side of a TLS connection.
//
// For a client ([NATSOptions].TLS): CA holds the certificates that may sign
// the server's (empty: the system's roots), Cert and Key the client's own
// certificate and private key for servers that verify clients, and
// ServerName the name the server's certificate must carry (empty: the host
// of the URL). The files are read again at every reconnection, so renewed
// certificates are picked up.
//
// For a server embedded with package natsserver (its EmbeddedOptions.TLS):
// Cert and Key are the server's certificate and key (both required), and
// CA, if set, makes the server require a client certificate signed by one
// of its certificates. ServerName must be empty.
type TLSFiles struct {
	CA, Cert, Key string
	ServerName    string
}

// IsZero reports whether no TLS is configured.
func (f TLSFiles) IsZero() bool { return f == TLSFiles{} }

// loadPool reads the certificates of a CA file.
func loadPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("transport: TLS CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("transport: TLS CA file %s: %w: no PEM certificate in it", file, gossip.ErrInvalidConfig)
	}
	return pool, nil
}

// loadPair reads a certificate and its private key.
func loadPair(cert, key string) (tls.Certificate, error) {
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("transport: TLS certificate %s with key %s: %w", cert, key, err)
	}
	return pair, nil
}

// clientTLS returns the nats.go options of a TLS client, after reading
// every file once so that a missing or bad file fails Connect with a clear
// error instead of a failed handshake.
func clientTLS(files TLSFiles, base *tls.Config) ([]nats.Option, error) {
	if files.IsZero() && base == nil {
		return nil, nil
	}
	if (files.Cert == "") != (files.Key == "") {
		return nil, fmt.Errorf("transport: %w: a TLS client certificate needs both a certificate and a key file", gossip.ErrInvalidConfig)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if base != nil {
		cfg = base.Clone()
	}
	if files.ServerName != "" {
		cfg.ServerName = files.ServerName
	}
	var certCB nats.TLSCertHandler
	var rootsCB nats.RootCAsHandler
	if files.Cert != "" {
		if _, err := loadPair(files.Cert, files.Key); err != nil {
			return nil, err
		}
		certCB = func() (tls.Certificate, error) { return loadPair(files.Cert, files.Key) }
	}
	if files.CA != "" {
		if _, err := loadPool(files.CA); err != nil {
			return nil, err
		}
		rootsCB = func() (*x509.CertPool, error) { return loadPool(files.CA) }
	}
	// Secure sets the base configuration first; ClientTLSConfig keeps it
	// and adds the callbacks that reread the files at each connection.
	opts := []nats.Option{nats.Secure(cfg)}
	if certCB != nil || rootsCB != nil {
		opts = append(opts, nats.ClientTLSConfig(certCB, rootsCB))
	}
	return opts, nil
}

// credentials returns the nats.go options that authenticate a client and a
// description of them for error messages (never the secrets themselves;
// empty when there are none).
func credentials(o NATSOptions) ([]nats.Option, string, error) {
	var opts []nats.Option
	var what []string
	if o.Token != "" {
		opts = append(opts, nats.Token(o.Token))
		what = append(what, "a token")
	}
	if o.User != "" || o.Password != "" {
		opts = append(opts, nats.UserInfo(o.User, o.Password))
		what = append(what, fmt.Sprintf("user %q with a password", o.User))
	}
	if o.NkeySeedFile != "" {
		opt, err := nats.NkeyOptionFromSeed(o.NkeySeedFile)
		if err != nil {
			return nil, "", fmt.Errorf("transport: nkey seed file %s: %w", o.NkeySeedFile, err)
		}
		opts = append(opts, opt)
		what = append(what, "the nkey of "+o.NkeySeedFile)
	}
	if o.CredsFile != "" {
		if _, err := os.Stat(o.CredsFile); err != nil {
			return nil, "", fmt.Errorf("transport: credentials file: %w", err)
		}
		opts = append(opts, nats.UserCredentials(o.CredsFile))
		what = append(what, "the credentials file "+o.CredsFile)
	}
	if o.TLS.Cert != "" {
		what = append(what, "the client certificate "+o.TLS.Cert)
	}
	if len(o.Extra) > 0 {
		what = append(what, "extra options")
	}
	return opts, strings.Join(what, ", "), nil
}

// connectError is a failed connection: "transport: connect to <where>:
// <what>: <cause>", wrapping the sentinel (ErrAuth, ErrTLS) and the cause.
type connectError struct {
	where, what string
	sentinel    error
	cause       error
}

func (e *connectError) Error() string {
	return "transport: connect to " + e.where + ": " + e.what + ": " + e.cause.Error()
}

func (e *connectError) Unwrap() []error { return []error{e.sentinel, e.cause} }

// classify turns a failed nats.Connect into an error that says what went
// wrong: refused credentials wrap ErrAuth, TLS failures ErrTLS. It returns
// nil for other errors.
func classify(err error, where, offered string) error {
	switch {
	case isAuthError(err) && offered == "":
		return &connectError{where: where, sentinel: ErrAuth, cause: err,
			what: "NATS authentication failed: the server requires credentials and none were given"}
	case isAuthError(err):
		return &connectError{where: where, sentinel: ErrAuth, cause: err,
			what: "NATS authentication failed: the server refused " + offered}
	case errors.Is(err, nats.ErrSecureConnRequired):
		return &connectError{where: where, sentinel: ErrTLS, cause: err,
			what: "NATS TLS failed: the server requires TLS (give a CA file)"}
	case errors.Is(err, nats.ErrSecureConnWanted):
		return &connectError{where: where, sentinel: ErrTLS, cause: err,
			what: "NATS TLS failed: TLS was asked for but the server does not offer it"}
	case isCertError(err):
		return &connectError{where: where, sentinel: ErrTLS, cause: err,
			what: "NATS TLS failed: the server's certificate did not verify (wrong CA file or server name?)"}
	case isTLSAlert(err) || errors.Is(err, nats.ErrTLS):
		// A server that verifies clients and refuses the certificate (or
		// its absence) sends an alert, or, depending on timing, the client
		// only sees the connection close right after the handshake.
		return &connectError{where: where, sentinel: ErrTLS, cause: err,
			what: "NATS TLS failed: the server rejected the TLS connection (a missing or untrusted client certificate?)"}
	}
	return nil
}

func isAuthError(err error) bool {
	for _, target := range []error{nats.ErrAuthorization, nats.ErrAuthExpired, nats.ErrAuthRevoked, nats.ErrAccountAuthExpired} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// isCertError reports a server certificate this client does not trust.
func isCertError(err error) bool {
	var verify *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	return errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid)
}

// isTLSAlert reports a TLS alert sent by the server, such as "certificate
// required" when it verifies clients and got no certificate. crypto/tls
// reports those as a net.OpError whose Op is "remote error".
func isTLSAlert(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "remote error" {
		return true
	}
	var alert tls.AlertError
	return errors.As(err, &alert)
}

// ReadKeyFile reads a group key ([Options.Key]) from a file: its bytes,
// less one trailing line end ("\n" or "\r\n") so that a key written by a
// text editor or "openssl rand -hex 32 > file" reads as typed. The key must
// have at least [MinKeyLen] bytes (a hex string of 32 characters gives 128
// bits). The error names the file, never the key.
func ReadKeyFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("transport: group key: %w", err)
	}
	if bytes.HasSuffix(b, []byte("\n")) {
		b = bytes.TrimSuffix(b[:len(b)-1], []byte("\r"))
	}
	if len(b) < MinKeyLen {
		return nil, fmt.Errorf("transport: %w: group key file %s holds %d bytes, want at least %d", gossip.ErrInvalidConfig, path, len(b), MinKeyLen)
	}
	return b, nil
}
