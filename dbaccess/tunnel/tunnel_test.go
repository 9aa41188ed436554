package tunnel

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/testlog"
	"github.com/gorilla/websocket"
	chshare "github.com/jpillora/chisel/share"
	"github.com/jpillora/chisel/share/cnet"
	"github.com/jpillora/chisel/share/settings"
	"golang.org/x/crypto/ssh"
)

// stderrCapture holds everything written to os.Stderr during the tests: chisel's forked
// loggers write there, out of reach of a slog handler.
var stderrCapture testlog.Buffer

// tunnelsRan is set when a test opened a session, whose lines stderrCapture must then
// hold.
var tunnelsRan atomic.Bool

// secrets are the passwords tests used; none may appear in any output.
var secrets struct {
	sync.Mutex
	list []string
}

func secret(s string) string {
	secrets.Lock()
	defer secrets.Unlock()
	secrets.list = append(secrets.list, s)
	return s
}

func TestMain(m *testing.M) {
	// chisel's loggers capture os.Stderr when they are created (during the tests), so a
	// pipe put in its place here sees them all.
	orig := os.Stderr
	r, w, err := os.Pipe()
	if err != nil {
		panic(err)
	}
	os.Stderr = w
	copied := make(chan struct{})
	go func() {
		io.Copy(io.MultiWriter(&stderrCapture, orig), r)
		close(copied)
	}()
	code := m.Run()
	// os.Stderr stays the pipe: chisel's session goroutines, which its server does not
	// wait for, may still fork a logger (and read os.Stderr) after the last test.
	w.Close()
	<-copied
	out := stderrCapture.String()
	secrets.Lock()
	for _, s := range secrets.list {
		if strings.Contains(out, s) {
			fmt.Fprintf(orig, "FAIL: a password used by the tests appears on standard error\n")
			code = 1
		}
	}
	if tunnelsRan.Load() && !strings.Contains(out, "session#") {
		// The capture must have seen chisel's output, or the check above proves nothing.
		fmt.Fprintf(orig, "FAIL: tunnels ran but no chisel output was captured on standard error\n")
		code = 1
	}
	secrets.Unlock()
	os.Exit(code)
}

// capture returns a debug-level logger and a check that its output holds no secret.
func capture(t *testing.T) *slog.Logger {
	t.Helper()
	buf := &testlog.Buffer{}
	t.Cleanup(func() {
		out := buf.String()
		secrets.Lock()
		defer secrets.Unlock()
		for _, s := range secrets.list {
			if strings.Contains(out, s) {
				t.Errorf("a password appears in the log:\n%s", out)
			}
		}
	})
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// echoServer is the stand-in for the database: it echoes every line and counts the
// connections that carry data.
func echoServer(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				// Counted once it carries a byte: the client's check that its local end
				// listens (awaitListener) opens a connection that carries none.
				var first [1]byte
				if _, err := io.ReadFull(c, first[:]); err != nil {
					return
				}
				n.Add(1)
				if _, err := c.Write(first[:]); err == nil {
					io.Copy(c, c)
				}
			}()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return l.Addr().String(), &n
}

type fixture struct {
	remote  string
	hits    *atomic.Int64
	auth    string
	key     string
	server  *Server
	url     string
	log     *slog.Logger
	srvAddr string
	mod     func(*ServerConfig)
}

// newFixture starts a server (its config changed by mod, when given) in front of an
// echo server.
func newFixture(t *testing.T, mod ...func(*ServerConfig)) *fixture {
	t.Helper()
	f := &fixture{log: capture(t)}
	if len(mod) > 0 {
		f.mod = mod[0]
	}
	f.remote, f.hits = echoServer(t)
	var err error
	if f.auth, err = NewAuth(); err != nil {
		t.Fatal(err)
	}
	_, pass, _ := strings.Cut(f.auth, ":")
	secret(pass)
	if f.key, err = NewKey(); err != nil {
		t.Fatal(err)
	}
	f.start(t, "127.0.0.1:0")
	f.srvAddr = f.server.Addr().String()
	f.url = "http://" + f.srvAddr
	return f
}

func (f *fixture) start(t *testing.T, addr string) {
	t.Helper()
	cfg := ServerConfig{Addr: addr, Remote: f.remote, Auth: f.auth, Key: f.key, Logger: f.log}
	if f.mod != nil {
		f.mod(&cfg)
	}
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); s.Wait() })
	f.server = s
}

func (f *fixture) client(t *testing.T, mod func(*ClientConfig)) (*Client, error) {
	t.Helper()
	cfg := ClientConfig{Server: f.url, Auth: f.auth, Fingerprint: f.server.Fingerprint(), Remote: f.remote, Logger: f.log,
		MinRetry: 50 * time.Millisecond, MaxRetry: 200 * time.Millisecond, Timeout: 10 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	c, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); c.Close(); c.Wait() })
	err = c.Start(ctx)
	if err == nil {
		tunnelsRan.Store(true)
	}
	return c, err
}

// roundTrip sends a line through addr and expects it back.
func roundTrip(addr, line string) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(40 * time.Second))
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return err
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if got != line+"\n" {
		return fmt.Errorf("echo %q, want %q", got, line)
	}
	return nil
}

func TestTunnelCarriesTrafficToTheRemote(t *testing.T) {
	f := newFixture(t)
	c, err := f.client(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.LocalAddr(), "127.0.0.1:") {
		t.Fatalf("local listener %q is not on loopback", c.LocalAddr())
	}
	for i := range 3 {
		if err := roundTrip(c.LocalAddr(), fmt.Sprintf("hello %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if f.hits.Load() != 3 {
		t.Fatalf("remote saw %d connections, want 3", f.hits.Load())
	}
}

// TestHostHeaderReachesTheTunnelThroughARouter: a router that routes by Host header, as
// gorouter does, passes the WebSocket upgrade to the tunnel only for its route.
func TestHostHeaderReachesTheTunnelThroughARouter(t *testing.T) {
	f := newFixture(t)
	target, _ := url.Parse(f.url)
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }}
	var routed atomic.Int64
	router := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "cfbench-tunnel.apps.localhost" {
			http.Error(w, "404 Not Found: Requested route ('"+r.Host+"') does not exist.", http.StatusNotFound)
			return
		}
		routed.Add(1)
		proxy.ServeHTTP(w, r)
	}))
	defer router.Close()

	_, err := f.client(t, func(c *ClientConfig) { c.Server = router.URL })
	if err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Fatalf("without the Host header: %v, want the router's 404", err)
	}
	c, err := f.client(t, func(c *ClientConfig) { c.Server = router.URL; c.Host = "cfbench-tunnel.apps.localhost" })
	if err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(c.LocalAddr(), "via router"); err != nil {
		t.Fatal(err)
	}
	if routed.Load() < 2 { // the checking handshake and chisel's own connection
		t.Fatalf("router routed %d requests, want at least 2", routed.Load())
	}
}

func TestWrongFingerprintIsRefused(t *testing.T) {
	f := newFixture(t)
	other, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	wrong, err := KeyFingerprint(other)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.client(t, func(c *ClientConfig) { c.Fingerprint = wrong })
	if !errors.Is(err, ErrFingerprint) {
		t.Fatalf("Start: %v, want ErrFingerprint", err)
	}
	if f.hits.Load() != 0 {
		t.Fatal("the remote was reached despite the wrong fingerprint")
	}
}

func TestWrongCredentialsAreRefused(t *testing.T) {
	f := newFixture(t)
	user, _, _ := strings.Cut(f.auth, ":")
	for name, auth := range map[string]string{
		"wrong password": user + ":" + secret("not-the-password-at-all"),
		"wrong user":     "intruder:" + secret(strings.SplitN(f.auth, ":", 2)[1]),
		"short guess":    user + ":" + secret("guess-1234"),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := f.client(t, func(c *ClientConfig) { c.Auth = auth })
			if !errors.Is(err, ErrAuth) {
				t.Fatalf("Start: %v, want ErrAuth", err)
			}
			if strings.Contains(err.Error(), strings.SplitN(auth, ":", 2)[1]) {
				t.Fatalf("the error quotes the password: %v", err)
			}
		})
	}
	if f.hits.Load() != 0 {
		t.Fatal("the remote was reached with wrong credentials")
	}
}

// TestOtherRemotesAreRefusedAtHandshake: the ACL is exactly the remote, anchored.
func TestOtherRemotesAreRefusedAtHandshake(t *testing.T) {
	f := newFixture(t)
	host, port, _ := net.SplitHostPort(f.remote)
	other, otherHits := echoServer(t)
	for _, remote := range []string{
		other,
		"1" + host + ":" + port, // the allowed one with a prefix: an unanchored pattern matches it
		"localhost:" + port,     // another name for the same place is another remote
		strings.Replace(host, ".", "x", 1) + ":" + port, // "." in a pattern matches any character
	} {
		t.Run(remote, func(t *testing.T) {
			_, err := f.client(t, func(c *ClientConfig) { c.Remote = remote })
			if !errors.Is(err, ErrDenied) {
				t.Fatalf("Start with remote %s: %v, want ErrDenied", remote, err)
			}
		})
	}
	if f.hits.Load() != 0 || otherHits.Load() != 0 {
		t.Fatal("a refused client reached a remote")
	}
}

// rawSession connects like chisel's client does, declares remotes at the handshake and
// returns the SSH connection, on which the test may then ask for anything.
func rawSession(t *testing.T, f *fixture, remotes ...string) ssh.Conn {
	t.Helper()
	ws, _, err := (&websocket.Dialer{HandshakeTimeout: 5 * time.Second, Subprotocols: []string{chshare.ProtocolVersion}}).
		Dial("ws://"+f.srvAddr, nil)
	if err != nil {
		t.Fatal(err)
	}
	user, pass, _ := strings.Cut(f.auth, ":")
	sc, chans, reqs, err := ssh.NewClientConn(cnet.NewWebSocketConn(ws), "", &ssh.ClientConfig{
		User: user, Auth: []ssh.AuthMethod{ssh.Password(pass)}, HostKeyCallback: ssh.InsecureIgnoreHostKey(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	go ssh.DiscardRequests(reqs)
	go func() {
		for ch := range chans {
			ch.Reject(ssh.Prohibited, "")
		}
	}()
	var rs settings.Remotes
	for _, s := range remotes {
		r, err := settings.DecodeRemote(s)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	ok, reply, err := sc.SendRequest("config", true, settings.EncodeConfig(settings.Config{Version: chshare.BuildVersion, Remotes: rs}))
	if err != nil || !ok {
		t.Fatalf("config with %v refused: %v %s", remotes, err, reply)
	}
	tunnelsRan.Store(true)
	return sc
}

// TestChannelsToOtherRemotesAreRefused is the attack of advisory GHSA-24fp-5v3p-rvpw: a
// client declares the allowed remote at the handshake, then opens channels elsewhere.
// chisel ≥ 1.12.0 checks the ACL for every channel (share/tunnel/tunnel_out_ssh.go).
func TestChannelsToOtherRemotesAreRefused(t *testing.T) {
	f := newFixture(t)
	other, otherHits := echoServer(t)
	host, port, _ := net.SplitHostPort(f.remote)
	sc := rawSession(t, f, "127.0.0.1:0:"+f.remote)

	for _, target := range []string{
		other,
		other + "/tcp",
		host + ":" + port + "0",
		"localhost:" + port,
		"socks",
		other + "/udp",
	} {
		ch, reqs, err := sc.OpenChannel("chisel", []byte(target))
		var oce *ssh.OpenChannelError
		if err == nil {
			go ssh.DiscardRequests(reqs)
			ch.Close()
			t.Errorf("channel to %q was opened", target)
			continue
		}
		if !errors.As(err, &oce) || oce.Reason != ssh.Prohibited {
			t.Errorf("channel to %q: %v, want a prohibited channel", target, err)
		}
	}
	if otherHits.Load() != 0 {
		t.Fatalf("the other listener saw %d connections", otherHits.Load())
	}

	// The same session still reaches the allowed remote: the refusals above are the ACL,
	// not a broken session.
	ch, reqs, err := sc.OpenChannel("chisel", []byte(f.remote))
	if err != nil {
		t.Fatalf("channel to the allowed remote: %v", err)
	}
	go ssh.DiscardRequests(reqs)
	defer ch.Close()
	if _, err := io.WriteString(ch, "allowed\n"); err != nil {
		t.Fatal(err)
	}
	got, err := bufio.NewReader(ch).ReadString('\n')
	if err != nil || got != "allowed\n" {
		t.Fatalf("echo through the allowed channel: %q %v", got, err)
	}
}

// TestReverseAndSocksAreRefusedAtHandshake: the server offers neither.
func TestReverseAndSocksAreRefusedAtHandshake(t *testing.T) {
	f := newFixture(t)
	for _, remote := range []string{"R:127.0.0.1:0:" + f.remote, "socks", "R:socks"} {
		t.Run(remote, func(t *testing.T) {
			ws, _, err := (&websocket.Dialer{Subprotocols: []string{chshare.ProtocolVersion}}).Dial("ws://"+f.srvAddr, nil)
			if err != nil {
				t.Fatal(err)
			}
			user, pass, _ := strings.Cut(f.auth, ":")
			sc, _, reqs, err := ssh.NewClientConn(cnet.NewWebSocketConn(ws), "", &ssh.ClientConfig{
				User: user, Auth: []ssh.AuthMethod{ssh.Password(pass)}, HostKeyCallback: ssh.InsecureIgnoreHostKey()})
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			go ssh.DiscardRequests(reqs)
			r, err := settings.DecodeRemote(remote)
			if err != nil {
				t.Fatal(err)
			}
			ok, _, err := sc.SendRequest("config", true, settings.EncodeConfig(settings.Config{Version: chshare.BuildVersion, Remotes: settings.Remotes{r}}))
			if err == nil && ok {
				t.Fatalf("config with %s accepted", remote)
			}
		})
	}
}

// TestClientReconnectsAfterTheServerRestarts: Close drops the tunnel; a server started
// again on the same port with the same key takes the client back.
func TestClientReconnectsAfterTheServerRestarts(t *testing.T) {
	f := newFixture(t)
	c, err := f.client(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	held, err := net.Dial("tcp", c.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if _, err := io.WriteString(held, "before\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(held)
	if got, err := r.ReadString('\n'); err != nil || got != "before\n" {
		t.Fatalf("echo before the restart: %q %v", got, err)
	}
	for i := range 3 {
		f.server.Close()
		if err := f.server.Wait(); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			// Close dropped the established tunnel, not just the listener.
			held.SetReadDeadline(time.Now().Add(30 * time.Second))
			if _, err := r.ReadString('\n'); err == nil {
				t.Fatal("a connection through the closed server is still open")
			}
		}
		f.start(t, f.srvAddr)
		// A connection made before the client noticed the drop fails (chisel tries the
		// dead session once); the client's reconnection makes a later one work.
		var err error
		for range 50 {
			if err = roundTrip(c.LocalAddr(), fmt.Sprintf("after restart %d", i)); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("after restart %d: %v", i, err)
		}
	}
}

func TestServerConfigIsChecked(t *testing.T) {
	key, _ := NewKey()
	good := ServerConfig{Addr: "127.0.0.1:0", Remote: "db.internal:5432", Auth: "u:" + secret("0123456789abcdef-long"), Key: key}
	for name, mod := range map[string]func(*ServerConfig){
		"no addr":         func(c *ServerConfig) { c.Addr = "" },
		"no remote":       func(c *ServerConfig) { c.Remote = "" },
		"remote no port":  func(c *ServerConfig) { c.Remote = "db.internal" },
		"remote bad port": func(c *ServerConfig) { c.Remote = "db.internal:99999" },
		"no auth":         func(c *ServerConfig) { c.Auth = "" },
		"no user":         func(c *ServerConfig) { c.Auth = ":" + secret("0123456789abcdef-nouser") },
		"short password":  func(c *ServerConfig) { c.Auth = "u:" + secret("short-pw") },
		"no key":          func(c *ServerConfig) { c.Key = "" },
		"broken ck key":   func(c *ServerConfig) { c.Key = "ck-" + secret("!!not-base64!!") },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := good
			mod(&cfg)
			_, err := NewServer(cfg)
			if err == nil {
				t.Fatal("NewServer accepted it")
			}
			if _, pass, _ := strings.Cut(cfg.Auth, ":"); pass != "" && strings.Contains(err.Error(), pass) || strings.Contains(err.Error(), "not-base64") {
				t.Fatalf("the error quotes a secret: %v", err)
			}
		})
	}
	if _, err := NewServer(good); err != nil {
		t.Fatalf("good config: %v", err)
	}
}

func TestKeysGiveStableFingerprints(t *testing.T) {
	key, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{key, "a seed phrase for the tunnel"} {
		want, err := KeyFingerprint(k)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // the same key twice: the same fingerprint
			s, err := NewServer(ServerConfig{Addr: "127.0.0.1:0", Remote: "db:5432", Auth: "u:0123456789abcdef", Key: k})
			if err != nil {
				t.Fatal(err)
			}
			if s.Fingerprint() != want || len(want) != 44 {
				t.Fatalf("server fingerprint %q, KeyFingerprint %q", s.Fingerprint(), want)
			}
		}
	}
	other, _ := NewKey()
	a, _ := KeyFingerprint(key)
	b, _ := KeyFingerprint(other)
	if a == b {
		t.Fatal("two new keys share a fingerprint")
	}
}

func TestDSNGoesThroughTheLocalListener(t *testing.T) {
	c := &Client{local: "127.0.0.1:40001"}
	for _, tc := range []struct{ in, want string }{
		{"postgres://u:p%40ss@db.internal:5432/results?sslmode=disable", "postgres://u:p%40ss@127.0.0.1:40001/results?sslmode=disable"},
		{"postgresql://u@db.internal/results", "postgresql://u@127.0.0.1:40001/results"},
		{"postgres://u:p@[fd00::1]:6432/r?host=/tmp&port=1&sslmode=require", "postgres://u:p@127.0.0.1:40001/r?sslmode=require"},
	} {
		got, err := c.DSN(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("DSN(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"host=db user=u password=" + secret("kv-password-1234"), "mysql://u:" + secret("mysql-password-1") + "@db/x",
		"postgres://u:" + secret("multi-password-1") + "@a:5432,b:5432/x", "postgres:///x"} {
		_, err := c.DSN(bad)
		if err == nil {
			t.Errorf("DSN accepted %q", bad)
		} else if strings.Contains(err.Error(), "password-1") || strings.Contains(err.Error(), "1234") {
			t.Errorf("the error quotes the URL: %v", err)
		}
	}
	for in, want := range map[string]string{
		"postgres://u:p@db.internal:6432/r": "db.internal:6432",
		"postgres://u:p@db.internal/r":      "db.internal:5432",
		"postgres://u:p@[fd00::1]:5433/r":   "[fd00::1]:5433",
	} {
		if got, err := DBRemote(in); err != nil || got != want {
			t.Errorf("DBRemote(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func FuzzDSN(f *testing.F) {
	f.Add("postgres://u:pw@db:5432/r?sslmode=disable&host=x")
	f.Add("postgresql://[::1]:1/x")
	f.Add("postgres://a:b@c,d/e")
	c := &Client{local: "127.0.0.1:40001"}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := c.DSN(in)
		if err != nil {
			return
		}
		u, err := url.Parse(out)
		if err != nil || u.Host != "127.0.0.1:40001" {
			t.Fatalf("DSN(%q) = %q: not through the local listener", in, out)
		}
		q := u.Query()
		if q.Has("host") || q.Has("hostaddr") || q.Has("port") {
			t.Fatalf("DSN(%q) = %q keeps an override", in, out)
		}
	})
}
