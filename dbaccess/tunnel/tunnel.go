// Package tunnel reaches the results database of a Cloud Foundry foundation through a
// chisel tunnel (github.com/jpillora/chisel, v1.12.0 or later): a Server, embedded in the
// tunnel app that is bound to the database and listens on $PORT behind the router, and a
// Client, run in process by the CLI, that listens on 127.0.0.1 and forwards every
// connection through the tunnel to the database.
//
// The tunnel is a door into the database, so it is narrow: the server lets exactly one
// user (credentials generated per run) reach exactly one host:port (an anchored regular
// expression, checked by chisel both at the handshake and for every channel a client
// opens), and the client refuses a server whose key does not match the pinned
// fingerprint. Neither side writes a password to a log.
package tunnel

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/jpillora/chisel/share/ccrypto"
	"golang.org/x/crypto/ssh"
)

// Errors a Client's Start returns when the server answers but will not carry the tunnel.
// They are permanent: retrying with the same configuration cannot succeed.
var (
	// ErrFingerprint: the server's key is not the pinned one (a different tunnel app,
	// a rotated key, or someone in the middle).
	ErrFingerprint = errors.New("tunnel server key does not match the pinned fingerprint")
	// ErrAuth: the server refused the user or password.
	ErrAuth = errors.New("tunnel server refused the credentials")
	// ErrDenied: the server does not allow the requested remote host:port.
	ErrDenied = errors.New("tunnel server does not allow this remote")
)

// NewKey returns a new random server key in chisel's inline form ("ck-…", an ECDSA P-256
// key). Give it to the tunnel app as CFBENCH_TUNNEL_KEY; KeyFingerprint gives the
// fingerprint clients pin.
func NewKey() (string, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", fmt.Errorf("generate tunnel key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return "", fmt.Errorf("encode tunnel key: %w", err)
	}
	return ccrypto.ChiselKeyPrefix + base64.RawStdEncoding.EncodeToString(der), nil
}

// KeyFingerprint is the fingerprint (base64 SHA-256 of the public key, as chisel prints
// it) of a server key given as a "ck-…" key or as a seed. Errors never quote the key.
func KeyFingerprint(key string) (string, error) {
	if key == "" {
		return "", errors.New("empty tunnel key")
	}
	var pemBytes []byte
	var err error
	if ccrypto.IsChiselKey([]byte(key)) {
		pemBytes, err = ccrypto.ChiselKey2PEM([]byte(key))
	} else {
		pemBytes, err = ccrypto.Seed2PEM(key)
	}
	if err != nil {
		return "", errors.New("malformed tunnel key (want a ck-… key or a seed)")
	}
	signer, err := ssh.ParsePrivateKey(pemBytes)
	if err != nil {
		return "", errors.New("malformed tunnel key (want a ck-… key or a seed)")
	}
	return ccrypto.FingerprintKey(signer.PublicKey()), nil
}

// NewAuth returns fresh credentials "cfbench-XXXXXXXX:PASSWORD" with a 256-bit password,
// for one run's tunnel.
func NewAuth() (string, error) {
	var b [36]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate tunnel credentials: %w", err)
	}
	return fmt.Sprintf("cfbench-%x:%s", b[:4], base64.RawURLEncoding.EncodeToString(b[4:])), nil
}

// minPassword is the shortest password a server accepts: chisel does not throttle failed
// logins, so the password's entropy is the only defence against guessing.
const minPassword = 16

// splitAuth splits user:pass. The error never quotes the input.
func splitAuth(auth string, minPass int) (user, pass string, err error) {
	user, pass, ok := strings.Cut(auth, ":")
	switch {
	case !ok || user == "" || pass == "":
		return "", "", errors.New("credentials must have the form user:password")
	case len(pass) < minPass:
		return "", "", fmt.Errorf("tunnel password must have at least %d characters", minPass)
	}
	return user, pass, nil
}

// checkRemote validates a host:port the tunnel forwards to.
func checkRemote(remote string) error {
	host, port, err := net.SplitHostPort(remote)
	if err != nil || host == "" {
		return fmt.Errorf("remote %q: want host:port", remote)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("remote %q: %q is not a port number", remote, port)
	}
	return nil
}

// remoteACL is the only address pattern the server grants: the remote, quoted and
// anchored (chisel's patterns are unanchored: "db:5432" alone would also match
// "evil-db:54321").
func remoteACL(remote string) string { return "^" + regexp.QuoteMeta(remote) + "$" }

// logWriter turns the lines chisel's loggers print into slog records. chisel formats
// them with the log package's date and time prefix, which slog replaces.
type logWriter struct {
	log   *slog.Logger
	level slog.Level
	// mute, when set and true, drops what chisel writes (its start-up lines).
	mute *atomic.Bool
}

func (w logWriter) Write(p []byte) (int, error) {
	if w.mute != nil && w.mute.Load() {
		return len(p), nil
	}
	msg := strings.TrimSpace(string(p))
	if len(msg) >= 20 && msg[4] == '/' && msg[7] == '/' && msg[10] == ' ' && msg[19] == ' ' {
		msg = msg[20:] // "2006/01/02 15:04:05 "
	}
	w.log.Log(context.Background(), w.level, "chisel: "+msg, "component", "chisel")
	return len(p), nil
}

func orDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
