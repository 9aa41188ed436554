package listenaddr

import (
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
)

func TestParseKeepsToThisMachineUnlessAnInterfaceIsNamed(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{"", "127.0.0.1:0", ""},
		{"8080", "127.0.0.1:8080", ""},
		{":8080", "127.0.0.1:8080", ""},
		{"0.0.0.0:8080", "0.0.0.0:8080", ""},
		{"[::1]:0", "[::1]:0", ""},
		{"localhost:x", "", `address "localhost:x": bad port "x"`},
		{"a:b:c", "", `address "a:b:c": want HOST:PORT, :PORT or PORT`},
	} {
		got, err := Parse(c.in)
		if got != c.want || (err == nil) != (c.err == "") || (err != nil && err.Error() != c.err) {
			t.Errorf("Parse(%q) = %q, %v; want %q, %q", c.in, got, err, c.want, c.err)
		}
	}
}

func TestSelfHost(t *testing.T) {
	for host, want := range map[string]bool{"127.0.0.1:8080": true, "[::1]:8080": true, "localhost": true, "LOCALHOST:1": true,
		"10.0.0.5:80": true, "evil.example:8080": false, "127.0.0.1.nip.io:8080": false, "": false} {
		if got := selfHost(host); got != want {
			t.Errorf("selfHost(%q) = %v, want %v", host, got, want)
		}
	}
}

// TestSelfOnly: on loopback a request naming another host (DNS rebinding) is refused
// and one naming localhost or the address is served; on another interface, which the
// user named, every name is served.
func TestSelfOnly(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	for _, c := range []struct {
		listen string
		host   string
		want   int
	}{
		{"127.0.0.1:0", "evil.example:8080", http.StatusMisdirectedRequest},
		{"127.0.0.1:0", "localhost:8080", http.StatusOK},
		{"127.0.0.1:0", "127.0.0.1:8080", http.StatusOK},
	} {
		ln, err := net.Listen("tcp", c.listen)
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host = c.host
		SelfOnly(ln, ok).ServeHTTP(rec, req)
		ln.Close()
		if rec.Code != c.want {
			t.Errorf("listening on %s, Host %s: %d, want %d", c.listen, c.host, rec.Code, c.want)
		}
	}
	// Not on loopback: the handler itself (a listener the test fakes, to send no
	// traffic to another address).
	if h := SelfOnly(fakeListener{addr: &net.TCPAddr{IP: net.ParseIP("10.0.0.5"), Port: 80}}, ok); reflect.ValueOf(h).Pointer() != reflect.ValueOf(ok).Pointer() {
		t.Error("on another interface the handler is wrapped")
	}
}

type fakeListener struct {
	net.Listener
	addr net.Addr
}

func (f fakeListener) Addr() net.Addr { return f.addr }
