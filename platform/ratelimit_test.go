package platform

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeTime is a clock that only sleeps move, recording each sleep.
type fakeTime struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
	cancel bool // sleeps fail, as when the context ends
}

func newFakeTime() *fakeTime { return &fakeTime{now: time.Unix(1_700_000_000, 0)} }

func (f *fakeTime) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeTime) Sleep(_ context.Context, d time.Duration) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sleeps = append(f.sleeps, d)
	f.now = f.now.Add(d)
	return !f.cancel
}

func (f *fakeTime) Sleeps() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.sleeps...)
}

// answer is one canned response of limitedCC.
type answer struct {
	status int
	header map[string]string
}

// limitedCC answers its script in order (then 200 without headers), recording each
// request's method, path and body.
type limitedCC struct {
	*httptest.Server
	mu     sync.Mutex
	script []answer
	got    []string
}

func newLimitedCC(t *testing.T, script ...answer) *limitedCC {
	c := &limitedCC{script: script}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.got = append(c.got, r.Method+" "+r.URL.Path+" "+string(body))
		a := answer{status: http.StatusOK}
		if len(c.script) > 0 {
			a, c.script = c.script[0], c.script[1:]
		}
		c.mu.Unlock()
		for k, v := range a.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(a.status)
		if a.status == http.StatusTooManyRequests {
			fmt.Fprint(w, `{"errors":[{"detail":"Rate Limit Exceeded","title":"CF-RateLimitExceeded","code":10013}]}`)
		}
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *limitedCC) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.got...)
}

func limits(limit, remaining int, reset time.Time) map[string]string {
	return map[string]string{"X-RateLimit-Limit": strconv.Itoa(limit), "X-RateLimit-Remaining": strconv.Itoa(remaining),
		"X-RateLimit-Reset": strconv.FormatInt(reset.Unix(), 10)}
}

func send(t *testing.T, hc *http.Client, method, url, body string) *http.Response {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestRateLimiterWaitsOutA429AndSendsAgain: a 429 is waited out for its Retry-After,
// or without one until X-RateLimit-Reset (and a second, as Reset is in whole seconds),
// and the request, a POST too, is sent again with its body.
func TestRateLimiterWaitsOutA429AndSendsAgain(t *testing.T) {
	ft := newFakeTime()
	reset := ft.Now().Add(30 * time.Second)
	for _, c := range []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"Retry-After", map[string]string{"Retry-After": "7", "X-RateLimit-Limit": "100", "X-RateLimit-Remaining": "0",
			"X-RateLimit-Reset": strconv.FormatInt(reset.Unix(), 10)}, 7 * time.Second},
		{"only the reset", limits(100, 0, reset), 31 * time.Second},
		{"no headers", nil, time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			ft := newFakeTime()
			cc := newLimitedCC(t, answer{http.StatusTooManyRequests, c.header})
			rl := NewRateLimiter(RateLimiterConfig{Clock: ft.Now, Sleep: ft.Sleep})
			resp := send(t, &http.Client{Transport: rl}, http.MethodPost, cc.URL+"/v3/apps", `{"name":"a"}`)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s, want the retry's 200", resp.Status)
			}
			want := []string{`POST /v3/apps {"name":"a"}`, `POST /v3/apps {"name":"a"}`}
			if got := cc.requests(); strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("requests %q, want %q", got, want)
			}
			if got := ft.Sleeps(); len(got) != 1 || got[0] != c.want {
				t.Errorf("waits %v, want one of %s", got, c.want)
			}
			st := rl.Stats()
			if st.Requests != 2 || st.Throttled != 1 || st.Waited != c.want {
				t.Errorf("stats %+v, want 2 requests, 1 throttled, %s waited", st, c.want)
			}
		})
	}
}

// TestRateLimiterPacesALowBudgetUntilItsReset: with a quarter of the budget left the
// rest is spread evenly until the reset; a spent budget waits for the reset; a new
// window's budget is spent freely.
func TestRateLimiterPacesALowBudgetUntilItsReset(t *testing.T) {
	ft := newFakeTime()
	reset := ft.Now().Add(100 * time.Second)
	cc := newLimitedCC(t,
		answer{http.StatusOK, limits(100, 50, reset)}, // plenty: no pacing
		answer{http.StatusOK, limits(100, 10, reset)}, // 10 left for 100 s: one every 10 s
		answer{http.StatusOK, limits(100, 9, reset)},
		answer{http.StatusOK, limits(100, 0, reset)}, // spent: wait for the reset
		answer{http.StatusOK, limits(100, 99, reset.Add(time.Hour))},
	)
	rl := NewRateLimiter(RateLimiterConfig{Clock: ft.Now, Sleep: ft.Sleep})
	hc := &http.Client{Transport: rl}
	var waits [][]time.Duration
	for range 5 {
		before := len(ft.Sleeps())
		send(t, hc, http.MethodGet, cc.URL+"/v3/apps", "")
		waits = append(waits, ft.Sleeps()[before:])
	}
	// Request 2 follows an answer saying 50 left: free. Request 3 follows 10 left (the
	// first paced request goes at once, the next is due 10 s on). Request 4 follows
	// 9 left, due at the pace's next slot. Request 5 follows 0 left: the reset.
	if len(waits[0]) != 0 || len(waits[1]) != 0 || len(waits[2]) != 0 {
		t.Errorf("waits %v: the first three requests should go at once", waits)
	}
	if len(waits[3]) != 1 || waits[3][0] <= 0 || waits[3][0] > 11*time.Second {
		t.Errorf("request 4 waited %v, want about 10 s (budget 10 left for 100 s)", waits[3])
	}
	if len(waits[4]) != 1 || !ft.Now().After(reset) {
		t.Errorf("request 5 waited %v, until %s; want a wait past the reset %s", waits[4], ft.Now(), reset)
	}
	st := rl.Stats()
	if st.Limit != 100 || st.Requests != 5 {
		t.Errorf("stats %+v", st)
	}
	if got := st.String(); !strings.Contains(got, "CC requests: 5 (") || !strings.Contains(got, "budget: 100 per user per interval from X-RateLimit-Limit") {
		t.Errorf("line %q", got)
	}
}

// TestRateLimiterStopsWaitingWithTheContext: a wait the context ends fails the request
// with an error saying what it waited for.
func TestRateLimiterStopsWaitingWithTheContext(t *testing.T) {
	ft := newFakeTime()
	ft.cancel = true
	cc := newLimitedCC(t, answer{http.StatusTooManyRequests, map[string]string{"Retry-After": "3600"}})
	rl := NewRateLimiter(RateLimiterConfig{Clock: ft.Now, Sleep: ft.Sleep})
	req, _ := http.NewRequest(http.MethodGet, cc.URL+"/v3/apps", nil)
	_, err := (&http.Client{Transport: rl}).Do(req)
	if err == nil || !strings.Contains(err.Error(), "Retry-After") {
		t.Errorf("err %v, want the wait named", err)
	}
	if n := len(cc.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// TestRateLimiterCountsOnlyTheCC: requests Match leaves out (Log Cache, UAA) pass
// through uncounted; without X-RateLimit headers the line says none were seen.
func TestRateLimiterCountsOnlyTheCC(t *testing.T) {
	cc := newLimitedCC(t)
	rl := NewRateLimiter(RateLimiterConfig{Match: func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/v3/") }})
	hc := &http.Client{Transport: rl}
	send(t, hc, http.MethodGet, cc.URL+"/v3/apps", "")
	send(t, hc, http.MethodGet, cc.URL+"/api/v1/read/x", "")
	st := rl.Stats()
	if st.Requests != 1 {
		t.Errorf("%d requests counted, want 1", st.Requests)
	}
	if got := st.String(); !strings.HasPrefix(got, "CC requests: 1 (") || !strings.HasSuffix(got, "budget: none seen)") {
		t.Errorf("line %q", got)
	}
}

// TestRateLimiterGivesUpOnABodyItCannotResend: a 429 to a request whose body cannot
// be read again is the caller's to see.
func TestRateLimiterGivesUpOnABodyItCannotResend(t *testing.T) {
	ft := newFakeTime()
	cc := newLimitedCC(t, answer{http.StatusTooManyRequests, map[string]string{"Retry-After": "1"}})
	rl := NewRateLimiter(RateLimiterConfig{Clock: ft.Now, Sleep: ft.Sleep})
	req, _ := http.NewRequest(http.MethodPost, cc.URL+"/v3/apps", io.NopCloser(strings.NewReader("x")))
	req.GetBody = nil
	resp, err := rl.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || len(ft.Sleeps()) != 0 {
		t.Errorf("%s after waits %v, want the 429 at once", resp.Status, ft.Sleeps())
	}
}

// TestRateLimiterBoundsEachAttemptNotTheWaits: a wait for the reset longer than the
// attempt timeout does not fail the request; an attempt that hangs past it does.
func TestRateLimiterBoundsEachAttemptNotTheWaits(t *testing.T) {
	cc := newLimitedCC(t, answer{http.StatusTooManyRequests, map[string]string{"Retry-After": "1"}})
	rl := NewRateLimiter(RateLimiterConfig{AttemptTimeout: 300 * time.Millisecond})
	if resp := send(t, &http.Client{Transport: rl}, http.MethodGet, cc.URL+"/v3/apps", ""); resp.StatusCode != http.StatusOK {
		t.Errorf("after a 1 s wait with 300 ms attempts: %s, want 200", resp.Status)
	}
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer hang.Close()
	defer close(release)
	req, _ := http.NewRequest(http.MethodGet, hang.URL+"/v3/apps", nil)
	if _, err := (&http.Client{Transport: rl}).Do(req); err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Errorf("a hanging attempt: %v, want its deadline", err)
	}
}
