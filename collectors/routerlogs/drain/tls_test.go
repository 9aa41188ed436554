package drain

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/rfc5424"
)

// pki is a run's CA with a server certificate for 127.0.0.1 and a client certificate
// (what the syslog agent presents for a syslog-tls:// drain with "cert" and "key"), and
// an outsider's client certificate from another CA.
type pki struct {
	server   *tls.Config // for the receiver: mutual TLS
	client   *tls.Config // the run's agent
	outsider *tls.Config // a client certificate the run's CA did not sign
	noCert   *tls.Config // trusts the server, shows no certificate
}

var testPKI = sync.OnceValues(func() (*pki, error) {
	ca, caKey, err := newCert(nil, nil, true, 0)
	if err != nil {
		return nil, err
	}
	other, otherKey, err := newCert(nil, nil, true, 0)
	if err != nil {
		return nil, err
	}
	srv, srvKey, err := newCert(ca, caKey, false, x509.ExtKeyUsageServerAuth)
	if err != nil {
		return nil, err
	}
	cli, cliKey, err := newCert(ca, caKey, false, x509.ExtKeyUsageClientAuth)
	if err != nil {
		return nil, err
	}
	out, outKey, err := newCert(other, otherKey, false, x509.ExtKeyUsageClientAuth)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	pair := func(c *x509.Certificate, k *ecdsa.PrivateKey) []tls.Certificate {
		return []tls.Certificate{{Certificate: [][]byte{c.Raw}, PrivateKey: k}}
	}
	client := func(certs []tls.Certificate) *tls.Config {
		return &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", Certificates: certs, MinVersion: tls.VersionTLS12}
	}
	return &pki{
		server: &tls.Config{Certificates: pair(srv, srvKey), ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12},
		client: client(pair(cli, cliKey)), outsider: client(pair(out, outKey)), noCert: client(nil),
	}, nil
})

// newCert makes a CA (parent nil: self-signed) or a leaf for 127.0.0.1 signed by parent.
func newCert(parent *x509.Certificate, parentKey *ecdsa.PrivateKey, isCA bool, usage x509.ExtKeyUsage) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "cfbench drain test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	if isCA {
		tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign
	} else {
		tmpl.IPAddresses, tmpl.KeyUsage, tmpl.ExtKeyUsage = []net.IP{net.ParseIP("127.0.0.1")}, x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{usage}
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func mustPKI(tb testing.TB) *pki {
	tb.Helper()
	p, err := testPKI()
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// dialSyslog connects to r's syslog listener as the run's agent.
func dialSyslog(tb testing.TB, r *Receiver) net.Conn {
	tb.Helper()
	conn, err := tls.Dial("tcp", r.SyslogAddr(), mustPKI(tb).client)
	if err != nil {
		tb.Fatal(err)
	}
	return conn
}

// TestSyslogTLS sends octet-counted frames over mutual TLS, as the agent does to a
// syslog-tls:// drain with a client certificate.
func TestSyslogTLS(t *testing.T) {
	store := &fakeStore{}
	r := newReceiver(t, store, func(c *Config) { c.HTTPAddr = "" })
	conn := dialSyslog(t, r)
	var stream []byte
	for seq := range uint64(20) {
		stream = rfc5424.AppendFrame(stream, rtr(seq))
	}
	if _, err := conn.Write(stream); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	deadline := time.Now().Add(time.Minute)
	for r.Counters().Router < 20 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if rows, _ := store.snapshot(); len(rows) != 20 {
		t.Fatalf("%d rows over TLS, want 20", len(rows))
	}
}
