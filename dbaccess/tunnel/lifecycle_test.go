package tunnel

import (
	"testing"

	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle/lifecycletest"
)

// TestServerLifecycle runs the conformance suite against the server; its own failure is
// its listener closed under it.
func TestServerLifecycle(t *testing.T) {
	remote, _ := echoServer(t)
	auth, err := NewAuth()
	if err != nil {
		t.Fatal(err)
	}
	key, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
		s, err := NewServer(ServerConfig{Addr: "127.0.0.1:0", Remote: remote, Auth: auth, Key: key, Logger: capture(t)})
		if err != nil {
			t.Fatal(err)
		}
		return lifecycletest.Subject{Part: s, Fail: func(t *testing.T) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if err := s.ln.Close(); err != nil {
				t.Fatal(err)
			}
		}}
	})
}

// TestClientLifecycle runs the conformance suite against a client of a running server,
// so that Start opens a tunnel and Close takes it down.
func TestClientLifecycle(t *testing.T) {
	lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
		f := newFixture(t)
		c, err := NewClient(ClientConfig{Server: f.url, Auth: f.auth, Fingerprint: f.server.Fingerprint(), Remote: f.remote, Logger: f.log})
		if err != nil {
			t.Fatal(err)
		}
		return lifecycletest.Subject{Part: c, NoFailure: "chisel's client reconnects for ever when the tunnel drops"}
	})
}
