package drain

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/rfc5424"
	"github.com/cf-benchmark/cf-benchmark/internal/sample"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

const (
	runTag   = 0x5eed
	appGUID  = "b7e4c2a9-3f1d-4a6e-9c8b-2d5f7e1a0c3b"
	appName  = "shop"
	user     = "cfbench"
	password = "0123456789abcdef0123"
)

// fakeStore keeps what the receiver stores; fail, while set, makes every call fail.
type fakeStore struct {
	mu    sync.Mutex
	rows  []resultsdb.RouterRequest
	pull  resultsdb.LogPull
	calls int
	fail  error
	prev  *resultsdb.LogPull
}

func (f *fakeStore) StoreRouterBatch(_ context.Context, p *resultsdb.LogPull, rows []resultsdb.RouterRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.fail != nil {
		return f.fail
	}
	f.rows = append(f.rows, rows...)
	p.Stored += int64(len(rows))
	f.pull = *p
	return nil
}

func (f *fakeStore) LogPull(context.Context, string, string) (*resultsdb.LogPull, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	return f.prev, nil
}

func (f *fakeStore) setFail(err error) {
	f.mu.Lock()
	f.fail = err
	f.mu.Unlock()
}

func (f *fakeStore) snapshot() ([]resultsdb.RouterRequest, resultsdb.LogPull) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]resultsdb.RouterRequest(nil), f.rows...), f.pull
}

// rtrLine is a gorouter line of request seq of worker 1 of the run tagged tag.
func rtrLine(tag uint32, seq uint64, app string) string {
	id := sample.NewTraceID(tag, 1, seq)
	return fmt.Sprintf(`shop.apps.localhost - [2026-11-24T18:57:01.%06dZ] "GET / HTTP/1.1" 200 0 2 "-" "cfbench-worker" "127.0.0.1:5000" "127.0.0.1:6000" x_forwarded_for:"-" x_forwarded_proto:"http" vcap_request_id:"%s" response_time:0.001500 gorouter_time:0.000100 app_id:"%s" app_index:"0" x_cf_routererror:"-" x_b3_traceid:"%s"`,
		seq%1000000, id.UUID(), app, id)
}

func message(app, procID, line string) []byte {
	return rfc5424.Append(nil, &rfc5424.Message{Priority: rfc5424.PriorityOut, Timestamp: time.Now(), Hostname: "cfbench.apps." + appName,
		AppName: app, ProcID: procID, StructuredData: []byte(`[tags@47450 source_type="RTR"]`), Msg: []byte(line)})
}

func rtr(seq uint64) []byte { return message(appGUID, "[RTR/0]", rtrLine(runTag, seq, appGUID)) }

func newReceiver(t *testing.T, store Store, mod func(*Config)) *Receiver {
	t.Helper()
	cfg := Config{HTTPAddr: "127.0.0.1:0", SyslogAddr: "127.0.0.1:0", User: user, Password: password,
		RunID: "20261124-185701-abcd", TraceTag: runTag, Apps: map[string]string{appGUID: appName}, Store: store, Grace: time.Minute,
		TLS: mustPKI(t).server}
	if mod != nil {
		mod(&cfg)
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

var client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Minute}

func post(t *testing.T, r *Receiver, userinfo string, body []byte) int {
	t.Helper()
	resp, err := client.Post("http://"+userinfo+r.HTTPAddr()+"/", "text/plain", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestHTTPDrain posts what the agent's HTTPS writers post and what it never would.
func TestHTTPDrain(t *testing.T) {
	store := &fakeStore{}
	r := newReceiver(t, store, nil)
	creds := user + ":" + password + "@"
	var batch []byte
	for seq := uint64(2); seq <= 5; seq++ {
		batch = append(batch, rtr(seq)...)
	}
	batch = append(batch, message(appGUID, "[APP/PROC/WEB/0]", "listening on 8080\nsecond line")...)
	for _, c := range []struct {
		name, userinfo string
		body           []byte
		status         int
	}{
		{"one message", creds, rtr(1), 200},
		{"a batch", creds, batch, 200},
		{"no credentials", "", rtr(100), 401},
		{"wrong password", user + ":" + strings.Repeat("x", 20) + "@", rtr(101), 401},
		{"wrong user", "other:" + password + "@", rtr(102), 401},
		{"another app", creds, message("0000-other", "[RTR/0]", rtrLine(runTag, 103, "0000-other")), 200},
		{"another app's line in this app's drain", creds, message(appGUID, "[RTR/0]", rtrLine(runTag, 104, "0000-other")), 200},
		{"another run", creds, message(appGUID, "[RTR/0]", rtrLine(runTag+1, 105, appGUID)), 200},
		{"cut line", creds, message(appGUID, "[RTR/0]", rtrLine(runTag, 106, appGUID)[:80]), 200},
		{"bad header", creds, []byte("<14>1 yesterday h a [RTR/0] - - x\n<200>1 - - - - - -\n"), 200},
		{"too large", creds, bytes.Repeat([]byte("x"), 5<<20), 413},
	} {
		if got := post(t, r, c.userinfo, c.body); got != c.status {
			t.Errorf("%s: status %d, want %d", c.name, got, c.status)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	rows, pull := store.snapshot()
	if len(rows) != 5 {
		t.Fatalf("%d rows stored, want 5", len(rows))
	}
	for i, row := range rows {
		if _, _, seq := row.TraceID.Parts(); seq != uint64(i+1) || row.AppGUID != appGUID || row.AppName != appName ||
			row.ResponseTime == nil || *row.ResponseTime != 1500*time.Microsecond || row.Status != 200 {
			t.Errorf("row %d: %+v", i, row)
		}
	}
	want := Counters{Router: 7, Unparseable: 1, Foreign: 1, Other: 1, RefusedApp: 2, RefusedAuth: 3,
		BadFrames: map[string]int64{"timestamp": 1, "priority": 1, "body-size": 1}, RouterByApp: map[string]int64{appGUID: 7}}
	// The port is one of 127.0.0.1's, and a test of another package that dials a port it
	// found closed may reach it meanwhile (once in CI: a fourth request without
	// credentials). Those count, rightly, as refused; the three above must.
	if got := r.Counters().RefusedAuth; got > want.RefusedAuth {
		t.Logf("%d requests without the credentials, %d of them from outside this test", got, got-want.RefusedAuth)
		want.RefusedAuth = got
	}
	if got := r.Counters(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("counters %+v, want %+v", got, want)
	}
	var stored Counters
	if err := json.Unmarshal(pull.Counters, &stored); err != nil || fmt.Sprint(stored) != fmt.Sprint(want) {
		t.Errorf("stored counters %s (%v), want %+v", pull.Counters, err, want)
	}
	if pull.Source != Source || pull.Retrieved != 7 || pull.Stored != 5 || pull.Unparseable != 1 || pull.Foreign != 1 {
		t.Errorf("pull %+v", pull)
	}
}

// TestSyslogStream sends an octet-counted stream, with bad frames, on two connections.
func TestSyslogStream(t *testing.T) {
	store := &fakeStore{}
	r := newReceiver(t, store, nil)
	var wg sync.WaitGroup
	for c := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := tls.Dial("tcp", r.SyslogAddr(), mustPKI(t).client)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			var stream []byte
			for i := range 500 {
				stream = rfc5424.AppendFrame(stream, rtr(uint64(c*1000+i)))
			}
			stream = append(stream, "garbage\n"...)
			stream = rfc5424.AppendFrame(stream, message(appGUID, "[CELL/0]", "Cell abc successfully created container"))
			stream = rfc5424.AppendFrame(stream, rtr(uint64(c*1000+999)))
			stream = append(stream, "300 <14>1 cut"...)
			if _, err := conn.Write(stream); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// The connections are closed: wait until the receiver has read them to their end.
	deadline := time.Now().Add(time.Minute)
	for r.Counters().BadFrames["frame-cut"] < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	rows, _ := store.snapshot()
	want := Counters{Router: 1002, Other: 2, BadFrames: map[string]int64{"frame-length": 2, "frame-cut": 2}, RouterByApp: map[string]int64{appGUID: 1002}}
	if got := r.Counters(); fmt.Sprint(got) != fmt.Sprint(want) || len(rows) != 1002 {
		t.Errorf("%d rows; counters %+v, want %+v", len(rows), got, want)
	}
}

// TestDatabaseOutage stores nothing while the database is away, buffers up to the
// bound, counts what is dropped beyond it and stores the rest once it is back.
func TestDatabaseOutage(t *testing.T) {
	store := &fakeStore{}
	store.setFail(errors.New("connection refused"))
	r := newReceiver(t, store, func(c *Config) { c.MaxBuffered = 100 })
	creds := user + ":" + password + "@"
	var body []byte
	for seq := range uint64(150) {
		body = append(body, rtr(seq)...)
	}
	if got := post(t, r, creds, body); got != 200 {
		t.Fatalf("status %d", got)
	}
	if c := r.Counters(); c.Dropped != 50 || c.Router != 150 {
		t.Fatalf("counters while away: %+v", c)
	}
	store.setFail(nil)
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	rows, pull := store.snapshot()
	if len(rows) != 100 || pull.Stored != 100 {
		t.Fatalf("%d rows stored (%d), want the 100 buffered", len(rows), pull.Stored)
	}
	for i, row := range rows {
		if _, _, seq := row.TraceID.Parts(); seq != uint64(i) {
			t.Fatalf("row %d is request %d: order or content lost", i, seq)
		}
	}
	if !strings.Contains(string(pull.Counters), `"dropped":50`) {
		t.Errorf("stored counters %s lack the drops", pull.Counters)
	}
}

// TestCloseWithoutDatabaseReportsUnstored closes while the database is still away:
// Wait says how many rows were lost.
func TestCloseWithoutDatabaseReportsUnstored(t *testing.T) {
	store := &fakeStore{}
	store.setFail(errors.New("connection refused"))
	r := newReceiver(t, store, func(c *Config) { c.Grace = 300 * time.Millisecond })
	if got := post(t, r, user+":"+password+"@", append(rtr(1), rtr(2)...)); got != 200 {
		t.Fatalf("status %d", got)
	}
	err := r.Close()
	if !errors.Is(err, ErrUnstored) || !strings.Contains(err.Error(), ": 2") {
		t.Fatalf("Close: %v, want ErrUnstored for 2 rows", err)
	}
}

// TestResumesTotals starts a receiver for a run another one already stored for.
func TestResumesTotals(t *testing.T) {
	store := &fakeStore{prev: &resultsdb.LogPull{Stored: 10, Counters: json.RawMessage(`{"router_messages":12,"refused_auth":3,"bad_frames":{"frame-cut":1}}`)}}
	r := newReceiver(t, store, nil)
	post(t, r, user+":"+password+"@", rtr(1))
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	_, pull := store.snapshot()
	var c Counters
	if err := json.Unmarshal(pull.Counters, &c); err != nil {
		t.Fatal(err)
	}
	if pull.Stored != 11 || pull.Retrieved != 13 || c.Router != 13 || c.RefusedAuth != 3 || c.BadFrames["frame-cut"] != 1 {
		t.Errorf("pull %+v, counters %+v", pull, c)
	}
}

func TestConfigChecks(t *testing.T) {
	ok := Config{HTTPAddr: ":0", User: "u", Password: password, RunID: "r", Apps: map[string]string{"g": "a"}, Store: &fakeStore{}}
	for name, mod := range map[string]func(*Config){
		"no address":     func(c *Config) { c.HTTPAddr = "" },
		"short password": func(c *Config) { c.Password = "short" },
		"no run":         func(c *Config) { c.RunID = "" },
		"no apps":        func(c *Config) { c.Apps = nil },
		"no store":       func(c *Config) { c.Store = nil },
		"plain syslog":   func(c *Config) { c.SyslogAddr = ":0" },
		"syslog without client certificates": func(c *Config) {
			c.SyslogAddr, c.TLS = ":0", &tls.Config{Certificates: mustPKI(t).server.Certificates}
		},
	} {
		c := ok
		mod(&c)
		if _, err := New(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := New(ok); err != nil {
		t.Errorf("valid config: %v", err)
	}
}
