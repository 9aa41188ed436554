package stub

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
)

func TestHandler(t *testing.T) {
	srv := httptest.NewServer(Handler(Config{Size: 10}))
	defer srv.Close()
	cases := []struct {
		path   string
		status int
		body   string
	}{
		{"/hello", 200, "hello\n"},
		{"/healthz", 200, "ok\n"},
		{"/bytes", 200, "xxxxxxxxxx"},
		{"/bytes?size=3", 200, "xxx"},
		{"/bytes?size=-1", 400, "size: want 0..67108864 bytes, got \"-1\"\n"},
		{"/hello?delay=soon", 400, "delay: want a duration like 5ms, got \"soon\"\n"},
		{"/nothing", 404, "404 page not found\n"},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			resp, err := testhttp.Client.Get(srv.URL + c.path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status || string(body) != c.body {
				t.Fatalf("GET %s = %d %q, want %d %q", c.path, resp.StatusCode, body, c.status, c.body)
			}
		})
	}
}

func TestDelayIsAtLeastTheConfiguredLatency(t *testing.T) {
	srv := httptest.NewServer(Handler(Config{}))
	defer srv.Close()
	start := time.Now()
	resp, err := testhttp.Client.Get(srv.URL + "/hello?delay=30ms&dither=5ms")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// A lower bound only: sleeping can overshoot on a busy machine, never undershoot.
	if took := time.Since(start); took < 30*time.Millisecond {
		t.Fatalf("response after %v, want at least 30ms", took)
	}
}

func TestFreezeHoldsOnceFromTheFirstRequest(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	now := t0
	f := &freeze{after: 4 * time.Second, length: 2 * time.Second, now: func() time.Time { return now }}
	for _, c := range []struct {
		at   time.Duration // since the first request
		want time.Duration
	}{
		{0, 0},                             // the first request starts the clock
		{3 * time.Second, 0},               // before the freeze
		{4 * time.Second, 2 * time.Second}, // it begins: held for all of it
		{5500 * time.Millisecond, 500 * time.Millisecond},
		{6 * time.Second, 0},  // it is over
		{10 * time.Second, 0}, // and does not come back
	} {
		now = t0.Add(c.at)
		if got := f.hold(); got != c.want {
			t.Errorf("hold at %v after the first request = %v, want %v", c.at, got, c.want)
		}
	}
	if got := (&freeze{now: time.Now}).hold(); got != 0 {
		t.Errorf("hold without a freeze = %v, want 0", got)
	}
}

func TestFrozenStubHoldsRequestsButNotHealthz(t *testing.T) {
	srv := httptest.NewServer(Handler(Config{FreezeAfter: 0, FreezeFor: 300 * time.Millisecond}))
	defer srv.Close()
	get := func(path string) time.Duration {
		t.Helper()
		start := time.Now()
		resp, err := testhttp.Client.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d", path, resp.StatusCode)
		}
		return time.Since(start)
	}
	// The first request starts the clock and, with FreezeAfter 0, the freeze: it is
	// held for all of it. Lower bounds only: a busy machine can only add time.
	if took := get("/hello"); took < 300*time.Millisecond {
		t.Errorf("a request at the start of a 300ms freeze took %v", took)
	}
	srv2 := httptest.NewServer(Handler(Config{FreezeAfter: 0, FreezeFor: time.Hour}))
	defer srv2.Close()
	done := make(chan error, 1)
	go func() {
		resp, err := testhttp.Client.Get(srv2.URL + "/hello")
		if err == nil {
			resp.Body.Close()
			err = fmt.Errorf("answered %d during an hour's freeze", resp.StatusCode)
		}
		done <- err
	}()
	// /healthz is answered while /hello is held; a stub that did not hold /hello would
	// have answered it long before the 200ms that it is given here.
	resp, err := testhttp.Client.Get(srv2.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case err := <-done:
		t.Fatalf("/hello during the freeze: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	srv2.CloseClientConnections()
	<-done
}

// ?cpu= costs the CPU time asked for, counted on the thread's CPU clock: the process's
// CPU time grows by at least that much, however busy the machine is.
func TestCPUCostsItsCPUTime(t *testing.T) {
	srv := httptest.NewServer(Handler(Config{}))
	defer srv.Close()
	before := processCPU(t)
	resp, err := testhttp.Client.Get(srv.URL + "/hello?cpu=50ms")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if used := processCPU(t) - before; used < 50*time.Millisecond {
		t.Fatalf("a request asking for 50ms of CPU cost the process %v", used)
	}
	resp, err = testhttp.Client.Get(srv.URL + "/hello?cpu=lots")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("cpu=lots: %d, want 400", resp.StatusCode)
	}
}
