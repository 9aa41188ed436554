package drain

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/rfc5424"
)

// selfSigned makes a certificate for 127.0.0.1 and a pool that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// TestSyslogTLS sends octet-counted frames over TLS, as to a syslog-tls:// drain.
func TestSyslogTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	store := &fakeStore{}
	r := newReceiver(t, store, func(c *Config) {
		c.HTTPAddr = ""
		c.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	})
	conn, err := tls.Dial("tcp", r.SyslogAddr(), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
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
