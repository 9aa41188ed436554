package stub

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
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
			resp, err := http.Get(srv.URL + c.path)
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
	resp, err := http.Get(srv.URL + "/hello?delay=30ms&dither=5ms")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// A lower bound only: sleeping can overshoot on a busy machine, never undershoot.
	if took := time.Since(start); took < 30*time.Millisecond {
		t.Fatalf("response after %v, want at least 30ms", took)
	}
}
