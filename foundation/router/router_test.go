package router

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	appGUID   = "6f1a3c2e-1b2d-4c3e-8f4a-5b6c7d8e9f01"
	otherGUID = "0a1b2c3d-4e5f-4a6b-8c7d-8e9f0a1b2c3d"
	waitLimit = 10 * time.Second
)

// fakeTable is a fixed Table for tests.
type fakeTable struct {
	routes    map[string]Route
	instances map[string]map[int]Backend
}

var _ Table = (*fakeTable)(nil)

// Route finds host+path (the escaped path, exactly) first, then host.
func (t *fakeTable) Route(host, path string) (Route, bool) {
	if r, ok := t.routes[host+path]; ok {
		return r, ok
	}
	r, ok := t.routes[host]
	return r, ok
}

func (t *fakeTable) Instance(appGUID string, index int) (Backend, bool) {
	b, ok := t.instances[appGUID][index]
	return b, ok
}

// newTable routes each host to its app's backends and registers every
// backend as an instance.
func newTable(routes map[string]Route) *fakeTable {
	t := &fakeTable{routes: routes, instances: map[string]map[int]Backend{}}
	for _, r := range routes {
		if t.instances[r.AppGUID] == nil {
			t.instances[r.AppGUID] = map[int]Backend{}
		}
		for _, b := range r.Backends {
			t.instances[r.AppGUID][b.Index] = b
		}
	}
	return t
}

// seen is what an echo backend reports about the request it got.
type seen struct {
	Backend    string      `json:"backend"`
	Host       string      `json:"host"`
	RequestURI string      `json:"request_uri"`
	Header     http.Header `json:"header"`
	BodyLen    int         `json:"body_len"`
}

// startEcho starts a loopback backend that answers with a JSON seen.
func startEcho(t testing.TB, name string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Backend", name)
		_ = json.NewEncoder(w).Encode(seen{Backend: name, Host: r.Host, RequestURI: r.RequestURI, Header: r.Header, BodyLen: len(body)})
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// deadAddr returns a loopback address nothing listens on.
func deadAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// logSink collects access-log lines.
type logSink struct{ lines chan string }

func newLogSink() *logSink { return &logSink{lines: make(chan string, 1000)} }

func (s *logSink) Write(p []byte) (int, error) {
	s.lines <- string(p)
	return len(p), nil
}

func (s *logSink) next(t testing.TB) string {
	t.Helper()
	select {
	case l := <-s.lines:
		return l
	case <-time.After(waitLimit):
		t.Fatal("no access-log line")
		return ""
	}
}

// steppingClock returns a clock that advances by step on every call.
func steppingClock(start time.Time, step time.Duration) func() time.Time {
	var n atomic.Int64
	return func() time.Time { return start.Add(time.Duration(n.Add(1)-1) * step) }
}

// startRouter starts a router on loopback; it is closed when the test ends.
func startRouter(t testing.TB, table Table, clock func() time.Time) (*Router, *logSink) {
	t.Helper()
	sink := newLogSink()
	rt := New(Config{Listen: "127.0.0.1:0", Table: table, AccessLog: sink, Clock: clock})
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if err := rt.Wait(); err != nil {
			t.Errorf("wait: %v", err)
		}
	})
	return rt, sink
}

var testClient = &http.Client{Transport: &http.Transport{Proxy: nil, DisableCompression: true}}

// do sends a request through the router and returns the response with its
// body read.
func do(t testing.TB, rt *Router, method, host, path string, header http.Header, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+rt.Addr()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == "" {
		req.Body = http.NoBody
	}
	req.Host = host
	for k, vs := range header {
		req.Header[k] = vs
	}
	res, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

func decodeSeen(t testing.TB, body string) seen {
	t.Helper()
	var s seen
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatalf("backend body %q: %v", body, err)
	}
	return s
}

var gouuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[4-7][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestCanonicalHeaderKeys(t *testing.T) {
	for _, k := range []string{hdrAppInstance, hdrRouterError, hdrVcapRequestID, hdrRequestStart,
		hdrForwardedFor, hdrForwardedProto, hdrApplicationID, hdrInstanceIndex, hdrInstanceID,
		hdrB3, hdrB3TraceID, hdrB3SpanID, hdrB3ParentSpanID, hdrB3Sampled, hdrB3Flags} {
		if c := http.CanonicalHeaderKey(k); c != k {
			t.Errorf("%q is not canonical (%q)", k, c)
		}
	}
}

func TestRoundRobin(t *testing.T) {
	t.Parallel()
	var backends []Backend
	for i := range 3 {
		backends = append(backends, Backend{Addr: startEcho(t, "b"+strconv.Itoa(i)), Index: i, InstanceGUID: "instance-" + strconv.Itoa(i)})
	}
	rt, _ := startRouter(t, newTable(map[string]Route{"app.local": {AppGUID: appGUID, Backends: backends}}), nil)

	var got []string
	for range 6 {
		res, body := do(t, rt, "GET", "app.local", "/", nil, "")
		if res.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", res.StatusCode, body)
		}
		s := decodeSeen(t, body)
		got = append(got, s.Backend)
		i, _ := strconv.Atoi(strings.TrimPrefix(s.Backend, "b"))
		for k, want := range map[string]string{
			"X-Cf-Applicationid": appGUID,
			"X-Cf-Instanceindex": strconv.Itoa(i),
			"X-Cf-Instanceid":    "instance-" + strconv.Itoa(i),
		} {
			if v := s.Header.Get(k); v != want {
				t.Errorf("backend %s got %s %q, want %q", s.Backend, k, v, want)
			}
		}
	}
	if want := "b0 b1 b2 b0 b1 b2"; strings.Join(got, " ") != want {
		t.Errorf("backends in order %v, want %s", got, want)
	}
}

func TestRetryOnDialFailure(t *testing.T) {
	t.Parallel()
	live := startEcho(t, "live")
	backends := []Backend{{Addr: deadAddr(t), Index: 0}, {Addr: live, Index: 1}}
	rt, sink := startRouter(t, newTable(map[string]Route{"app.local": {AppGUID: appGUID, Backends: backends}}), nil)
	for range 2 { // the first request starts at the dead backend, the second at the live one
		res, body := do(t, rt, "GET", "app.local", "/", nil, "")
		if res.StatusCode != http.StatusOK || decodeSeen(t, body).Backend != "live" {
			t.Fatalf("status %d body %s, want 200 from live", res.StatusCode, body)
		}
		if line := sink.next(t); !strings.Contains(line, `"`+live+`"`) {
			t.Errorf("log line does not name the live backend: %s", line)
		}
	}
}

// A request routed to an instance that is gone by the time it is dialled (a rolling
// deployment replaced it) is retried on the route as the table has it then, as
// gorouter retries from its live pool: the client never sees the swap.
func TestRetryFollowsTheTableAfterADialFailure(t *testing.T) {
	t.Parallel()
	live := startEcho(t, "new")
	table := &swappingTable{
		before: Route{AppGUID: appGUID, Backends: []Backend{{Addr: deadAddr(t), Index: 0}}},
		after:  Route{AppGUID: appGUID, Backends: []Backend{{Addr: live, Index: 0}}},
	}
	rt, _ := startRouter(t, table, nil)
	res, body := do(t, rt, "GET", "app.local", "/", nil, "")
	if res.StatusCode != http.StatusOK || decodeSeen(t, body).Backend != "new" {
		t.Fatalf("status %d body %s, want 200 from the instance that replaced the dead one", res.StatusCode, body)
	}
	if n := table.lookups.Load(); n != 2 {
		t.Errorf("%d route lookups, want 2: the request's, then the retry's", n)
	}
}

// swappingTable answers the first route lookup with before and every later one with
// after, as a table does across an instance's replacement.
type swappingTable struct {
	fakeTable
	before, after Route
	lookups       atomic.Int64
}

func (t *swappingTable) Route(host, path string) (Route, bool) {
	if t.lookups.Add(1) == 1 {
		return t.before, true
	}
	return t.after, true
}

func TestBackendHeaders(t *testing.T) {
	t.Parallel()
	addr := startEcho(t, "b0")
	now := time.Date(2020, 7, 6, 17, 45, 55, 805305000, time.UTC)
	rt, _ := startRouter(t, newTable(map[string]Route{"app.local": {AppGUID: appGUID, Backends: []Backend{{Addr: addr}}}}),
		func() time.Time { return now })

	tests := []struct {
		name   string
		header http.Header
		check  func(t *testing.T, s seen, res *http.Response)
	}{
		{
			name: "defaults",
			header: http.Header{
				"X-Forwarded-For":   {"203.0.113.9"},
				"X-Vcap-Request-Id": {"client-chosen"},
				"Connection":        {"X-Drop-Me"},
				"X-Drop-Me":         {"hop-by-hop"},
			},
			check: func(t *testing.T, s seen, res *http.Response) {
				h := s.Header
				want := map[string]string{
					"X-Forwarded-For":   "203.0.113.9, 127.0.0.1",
					"X-Forwarded-Proto": "http",
					"X-Request-Start":   strconv.FormatInt(now.UnixMilli(), 10),
					"X-Drop-Me":         "",
				}
				for k, v := range want {
					if got := h.Get(k); got != v {
						t.Errorf("%s = %q, want %q", k, got, v)
					}
				}
				id := h.Get("X-Vcap-Request-Id")
				if !gouuidV4.MatchString(id) {
					t.Errorf("X-Vcap-Request-Id %q: client value not overwritten by a gouuid v4", id)
				}
				if got := res.Header.Get("X-Vcap-Request-Id"); got != id {
					t.Errorf("response X-Vcap-Request-Id %q, want %q", got, id)
				}
				trace := strings.ReplaceAll(id, "-", "")
				if h.Get("X-B3-Traceid") != trace || h.Get("X-B3-Spanid") != trace[16:] || h.Get("B3") != trace+"-"+trace[16:] {
					t.Errorf("generated B3 headers %q %q %q do not follow request id %q",
						h.Get("X-B3-Traceid"), h.Get("X-B3-Spanid"), h.Get("B3"), id)
				}
			},
		},
		{
			name: "client forwarding headers and B3 kept",
			header: http.Header{
				"X-Forwarded-Proto": {"https"},
				"X-Request-Start":   {"1"},
				"X-B3-Traceid":      {"4bf92f3577b34da6a3ce929d0e0e4736"},
				"X-B3-Spanid":       {"00f067aa0ba902b7"},
				"X-B3-Parentspanid": {"0000000000000001"},
				"X-B3-Sampled":      {"1"},
			},
			check: func(t *testing.T, s seen, res *http.Response) {
				want := map[string]string{
					"X-Forwarded-Proto": "https",
					"X-Request-Start":   "1",
					"X-B3-Traceid":      "4bf92f3577b34da6a3ce929d0e0e4736",
					"X-B3-Spanid":       "00f067aa0ba902b7",
					"X-B3-Parentspanid": "0000000000000001",
					"B3":                "4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1-0000000000000001",
					"X-Vcap-Request-Id": "4bf92f35-77b3-4da6-a3ce-929d0e0e4736",
				}
				for k, v := range want {
					if got := s.Header.Get(k); got != v {
						t.Errorf("%s = %q, want %q", k, got, v)
					}
				}
			},
		},
		{
			name:   "app instance header not forwarded",
			header: http.Header{"X-Cf-App-Instance": {appGUID + ":0"}},
			check: func(t *testing.T, s seen, _ *http.Response) {
				if v, ok := s.Header["X-Cf-App-Instance"]; ok {
					t.Errorf("backend got X-Cf-App-Instance %q", v)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, body := do(t, rt, "GET", "app.local", "/path?q=1", tc.header, "")
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", res.StatusCode, body)
			}
			s := decodeSeen(t, body)
			if s.RequestURI != "/path?q=1" || s.Host != "app.local" {
				t.Errorf("backend saw %q for host %q", s.RequestURI, s.Host)
			}
			tc.check(t, s, res)
		})
	}
}

func TestRouting(t *testing.T) {
	t.Parallel()
	var backends []Backend
	for i := range 3 {
		backends = append(backends, Backend{Addr: startEcho(t, "b"+strconv.Itoa(i)), Index: i})
	}
	dead := deadAddr(t)
	table := newTable(map[string]Route{
		"app.local":   {AppGUID: appGUID, Backends: backends},
		"other.local": {AppGUID: otherGUID, Backends: []Backend{{Addr: startEcho(t, "other")}}},
		"empty.local": {AppGUID: "empty-app"},
		"dead.local":  {AppGUID: "dead-app", Backends: []Backend{{Addr: dead}}},
	})
	rt, sink := startRouter(t, table, nil)

	tests := []struct {
		name        string
		host        string
		header      http.Header
		status      int
		routerError string // prefix
		body        string // prefix
		backend     string
	}{
		{name: "pinned instance", host: "app.local", header: http.Header{"X-Cf-App-Instance": {appGUID + ":2"}}, status: 200, backend: "b2"},
		{name: "pinned instance again", host: "APP.local:80", header: http.Header{"X-Cf-App-Instance": {appGUID + ":2"}}, status: 200, backend: "b2"},
		{name: "unknown host", host: "nope.local", status: 404, routerError: "unknown_route",
			body: "404 Not Found: Requested route ('nope.local') does not exist.\n"},
		{name: "no endpoints", host: "empty.local", status: 503, routerError: "no_endpoints",
			body: "503 Service Unavailable: Requested route ('empty.local') has no available endpoints.\n"},
		{name: "dead backend", host: "dead.local", status: 502, routerError: "endpoint_failure (dial tcp " + dead,
			body: "502 Bad Gateway: Registered endpoint failed to handle the request.\n"},
		{name: "malformed app instance", host: "app.local", header: http.Header{"X-Cf-App-Instance": {"not-a-guid:1"}},
			status: 400, routerError: "invalid_cf_app_instance_header", body: "400 Bad Request: Invalid X-CF-App-Instance Header\n"},
		{name: "uppercase guid is malformed", host: "app.local", header: http.Header{"X-Cf-App-Instance": {strings.ToUpper(appGUID) + ":1"}},
			status: 400, routerError: "invalid_cf_app_instance_header"},
		{name: "unknown index", host: "app.local", header: http.Header{"X-Cf-App-Instance": {appGUID + ":7"}},
			status: 400, routerError: "unknown_route",
			body: "400 Bad Request: Requested instance ('7') with guid ('" + appGUID + "') does not exist for route ('app.local')\n"},
		{name: "index with leading zero", host: "app.local", header: http.Header{"X-Cf-App-Instance": {appGUID + ":01"}},
			status: 400, routerError: "unknown_route"},
		{name: "instance of another app", host: "app.local", header: http.Header{"X-Cf-App-Instance": {otherGUID + ":0"}},
			status: 400, routerError: "unknown_route"},
		{name: "instance on unknown host", host: "nope.local", header: http.Header{"X-Cf-App-Instance": {appGUID + ":0"}},
			status: 400, routerError: "unknown_route"},
		{name: "host is the client address", host: "127.0.0.1:1234", status: 400, routerError: "empty_host",
			body: "400 Bad Request: Request had empty Host header\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, body := do(t, rt, "GET", tc.host, "/", tc.header, "")
			line := sink.next(t)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d (body %q)", res.StatusCode, tc.status, body)
			}
			re := res.Header.Get("X-Cf-Routererror")
			if !strings.HasPrefix(re, tc.routerError) || (tc.routerError == "") != (re == "") {
				t.Errorf("X-Cf-Routererror %q, want prefix %q", re, tc.routerError)
			}
			if !strings.HasPrefix(body, tc.body) {
				t.Errorf("body %q, want prefix %q", body, tc.body)
			}
			if tc.backend != "" && decodeSeen(t, body).Backend != tc.backend {
				t.Errorf("served by %s, want %s", decodeSeen(t, body).Backend, tc.backend)
			}
			wantLogged := `x_cf_routererror:"-"`
			if tc.routerError != "" {
				wantLogged = `x_cf_routererror:` + strconv.Quote(re)
			}
			if !strings.Contains(line, " "+strconv.Itoa(tc.status)+" ") || !strings.Contains(line, wantLogged) {
				t.Errorf("log line lacks status %d or %s: %s", tc.status, wantLogged, line)
			}
		})
	}
}

// startUpgradeEcho starts a backend that switches to protocol "websocket"
// and echoes raw bytes.
func startUpgradeEcho(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			http.Error(w, "upgrade required", http.StatusUpgradeRequired)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		if brw.Flush() != nil {
			return
		}
		_, _ = io.Copy(conn, brw)
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// dialUpgrade opens a connection through the router and completes the
// Upgrade handshake.
func dialUpgrade(t testing.TB, rt *Router, host string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", rt.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_, err = io.WriteString(conn, "GET /ws HTTP/1.1\r\nHost: "+host+"\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d, want 101", res.StatusCode)
	}
	return conn, br
}

func TestWebSocketPassThrough(t *testing.T) {
	t.Parallel()
	addr := startUpgradeEcho(t)
	rt, sink := startRouter(t, newTable(map[string]Route{"ws.local": {AppGUID: appGUID, Backends: []Backend{{Addr: addr}}}}), nil)
	conn, br := dialUpgrade(t, rt, "ws.local")

	for _, msg := range []string{"hello", "through the router", strings.Repeat("x", 100_000)} {
		if _, err := io.WriteString(conn, msg); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(br, got); err != nil {
			t.Fatal(err)
		}
		if string(got) != msg {
			t.Fatalf("echo %.20q, want %.20q", got, msg)
		}
	}
	select {
	case l := <-sink.lines:
		t.Fatalf("access log written while the upgraded connection is open: %s", l)
	default:
	}
	_ = conn.Close()
	line := sink.next(t)
	if !strings.Contains(line, `"GET /ws HTTP/1.1" 101 `) || !strings.Contains(line, `"`+addr+`"`) {
		t.Errorf("log line %s: want a 101 via %s", line, addr)
	}
}

func TestClose(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		_, _ = io.WriteString(w, "done")
	}))
	t.Cleanup(slow.Close)
	table := newTable(map[string]Route{
		"slow.local": {AppGUID: appGUID, Backends: []Backend{{Addr: slow.Listener.Addr().String()}}},
		"ws.local":   {AppGUID: otherGUID, Backends: []Backend{{Addr: startUpgradeEcho(t)}}},
	})
	rt := New(Config{Table: table})
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); !errors.Is(err, ErrStarted) {
		t.Errorf("second Start: %v, want ErrStarted", err)
	}
	tunnel, br := dialUpgrade(t, rt, "ws.local")

	type result struct {
		status int
		body   string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest("GET", "http://"+rt.Addr()+"/", nil)
		req.Host = "slow.local"
		res, err := testClient.Do(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		done <- result{res.StatusCode, string(b), err}
	}()
	<-entered

	closed := make(chan error, 1)
	go func() { closed <- rt.Close() }()
	// Close stops accepting at once...
	deadline := time.Now().Add(waitLimit)
	for {
		c, err := net.Dial("tcp", rt.Addr())
		if err != nil {
			break
		}
		_ = c.Close()
		if time.Now().After(deadline) {
			t.Fatal("router still accepts connections after Close")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// ...but lets the in-flight request finish,
	close(release)
	if r := <-done; r.err != nil || r.status != http.StatusOK || r.body != "done" {
		t.Errorf("in-flight request: %+v, want 200 done", r)
	}
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
	// and cuts the upgraded connection.
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("tunnel read after Close: %v, want EOF", err)
	}
	_ = tunnel.Close()
	if err := rt.Wait(); err != nil {
		t.Errorf("Wait: %v", err)
	}
	if err := rt.Start(context.Background()); !errors.Is(err, ErrStarted) {
		t.Errorf("Start after Close: %v, want ErrStarted", err)
	}
}

func TestStartErrors(t *testing.T) {
	t.Parallel()
	if err := New(Config{}).Start(context.Background()); !errors.Is(err, ErrNoTable) {
		t.Errorf("no table: %v, want ErrNoTable", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := New(Config{Listen: ln.Addr().String(), Table: newTable(nil)}).Start(context.Background()); err == nil {
		t.Error("listening on a busy port succeeded")
	}
	rt := New(Config{Table: newTable(nil)})
	if err := rt.Close(); err != nil {
		t.Errorf("Close before Start: %v", err)
	}
	if err := rt.Start(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close: %v, want ErrClosed", err)
	}
}

func TestContextCancelCloses(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	rt := New(Config{Table: newTable(nil)})
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := rt.Wait(); err != nil {
		t.Errorf("Wait: %v", err)
	}
}

func TestConcurrentRequests(t *testing.T) {
	t.Parallel()
	var backends []Backend
	for i := range 3 {
		backends = append(backends, Backend{Addr: startEcho(t, "b"+strconv.Itoa(i)), Index: i})
	}
	rt, sink := startRouter(t, newTable(map[string]Route{"app.local": {AppGUID: appGUID, Backends: backends}}), nil)
	const workers, each = 8, 30
	var wg sync.WaitGroup
	counts := make([]atomic.Int64, 3)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				res, body := do(t, rt, "POST", "app.local", "/", nil, "payload")
				if res.StatusCode != http.StatusOK {
					t.Errorf("status %d", res.StatusCode)
					return
				}
				i, _ := strconv.Atoi(strings.TrimPrefix(decodeSeen(t, body).Backend, "b"))
				counts[i].Add(1)
			}
		}()
	}
	wg.Wait()
	for i := range counts {
		if n := counts[i].Load(); n != workers*each/3 {
			t.Errorf("backend %d served %d requests, want %d", i, n, workers*each/3)
		}
	}
	for range workers * each {
		if _, err := parseAccessLine(sink.next(t)); err != nil {
			t.Error(err)
		}
	}
}

// TestSpareConnectionsTracked checks the bookkeeping Close relies on to
// close connections that never sent a request (rather than let
// http.Server.Shutdown wait 5 s for them): a connection is tracked until
// its first request.
func TestSpareConnectionsTracked(t *testing.T) {
	t.Parallel()
	rt, _ := startRouter(t, newTable(map[string]Route{"app.local": {AppGUID: appGUID, Backends: []Backend{{Addr: startEcho(t, "b0")}}}}), nil)
	tracked := func() int {
		n := 0
		rt.newConns.Range(func(any, any) bool { n++; return true })
		return n
	}
	waitTracked := func(want int) {
		t.Helper()
		deadline := time.Now().Add(waitLimit)
		for tracked() != want {
			if time.Now().After(deadline) {
				t.Fatalf("%d connections tracked, want %d", tracked(), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	spare, err := net.Dial("tcp", rt.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer spare.Close()
	used, err := net.Dial("tcp", rt.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer used.Close()
	waitTracked(2)
	if _, err := io.WriteString(used, "GET / HTTP/1.1\r\nHost: app.local\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(used), nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	waitTracked(1)
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := spare.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("spare connection read after Close: %v, want EOF", err)
	}
}

// TestRoutePath: the table gets the request's escaped path (no query), so that a
// route with a path takes its requests, and the access log line is unchanged.
func TestRoutePath(t *testing.T) {
	t.Parallel()
	web := Backend{Addr: startEcho(t, "web"), Index: 0, InstanceGUID: "instance-web"}
	api := Backend{Addr: startEcho(t, "api"), Index: 0, InstanceGUID: "instance-api"}
	rt, sink := startRouter(t, newTable(map[string]Route{"app.local": {AppGUID: appGUID, Backends: []Backend{web}},
		"app.local/api/a%20b": {AppGUID: otherGUID, Backends: []Backend{api}}}), nil)
	for path, want := range map[string]string{"/api/a%20b?q=1": "api", "/api": "web", "/": "web"} {
		res, body := do(t, rt, "GET", "app.local:80", path, nil, "")
		if got := decodeSeen(t, body); res.StatusCode != 200 || got.Backend != want || got.RequestURI != path {
			t.Errorf("GET %s: %d %+v, want backend %s with the request URI unchanged", path, res.StatusCode, got, want)
		}
		if line := sink.next(t); !strings.HasPrefix(line, `app.local:80 - [`) || !strings.Contains(line, `"GET `+path+` HTTP/1.1" 200`) {
			t.Errorf("access log line %q", line)
		}
	}
}

// TestHTTP2Destination: a route whose destination protocol is http2 is served over
// HTTP/2 without TLS (h2c) to the instance, whatever the client spoke.
func TestHTTP2Destination(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto)
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	b := Backend{Addr: srv.Listener.Addr().String(), Index: 0, InstanceGUID: "instance-h2"}
	rt, sink := startRouter(t, newTable(map[string]Route{"h2.local": {AppGUID: appGUID, HTTP2: true, Backends: []Backend{b}},
		"h1.local": {AppGUID: otherGUID, Backends: []Backend{b}}}), nil)
	if res, body := do(t, rt, "GET", "h2.local", "/", nil, ""); res.StatusCode != 200 || body != "HTTP/2.0" {
		t.Errorf("an http2 destination: %d %q, want 200 from an HTTP/2.0 request", res.StatusCode, body)
	}
	sink.next(t)
	if res, _ := do(t, rt, "GET", "h1.local", "/", nil, ""); res.StatusCode != http.StatusBadGateway {
		t.Errorf("an http1 destination served by an h2c-only instance: %d, want 502 (the router spoke HTTP/1.1)", res.StatusCode)
	}
}
