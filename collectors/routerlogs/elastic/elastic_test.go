package elastic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/routerlogstest"
)

// newSource returns a Source on c's copy of the shared data set.
func newSource(t testing.TB, c *cluster, mod func(*Config)) *Source {
	t.Helper()
	cfg := Config{URLs: []string{c.URL(t)}, Index: c.Loaded(t), PageSize: pageSize(), RetryBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSuite(t *testing.T) {
	t.Parallel()
	forEachCluster(t, func(t *testing.T, c *cluster) {
		routerlogstest.Run(t, routerlogstest.Backend{
			Source:   func(t *testing.T) routerlogs.Source { return newSource(t, c, nil) },
			Data:     sharedData(),
			Total:    true,
			Requests: true,
		})
	})
}

// pullComplete pulls d's window from s and checks it is complete.
func pullComplete(t *testing.T, s *Source, d *routerlogstest.Dataset, emit func(routerlogs.Batch)) routerlogs.Result {
	t.Helper()
	coll := routerlogstest.NewCollector(d)
	res, err := s.Pull(context.Background(), d.Query, routerlogs.Cursor{}, routerlogs.Budget{}, func(b routerlogs.Batch) error {
		if emit != nil {
			emit(b)
		}
		return coll.Emit(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	coll.CheckComplete(t)
	return res
}

// A fault is what faultyProxy does to a request.
type fault int

const (
	pass   fault = iota
	reject       // 429 without forwarding, as an overloaded cluster or a quota proxy does
	lose         // forward, then answer 502 instead of the cluster's answer
)

// faultyProxy is a reverse proxy on 127.0.0.1 to target that applies decide to the
// n-th request (from 1). counts says how many requests got each fault.
func faultyProxy(t *testing.T, target string, decide func(n int, r *http.Request) fault) (proxyURL string, counts func() map[fault]int) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	var mu sync.Mutex
	n := 0
	got := map[fault]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		f := decide(n, r)
		got[f]++
		mu.Unlock()
		switch f {
		case reject:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"root_cause":[{"type":"es_rejected_execution_exception","reason":"rejected by the test proxy"}],"type":"es_rejected_execution_exception","reason":"rejected by the test proxy"},"status":429}`)
		case lose:
			rp.ServeHTTP(httptest.NewRecorder(), r)
			w.WriteHeader(http.StatusBadGateway)
		default:
			rp.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() map[fault]int {
		mu.Lock()
		defer mu.Unlock()
		m := map[fault]int{}
		for k, v := range got {
			m[k] = v
		}
		return m
	}
}

// TestThrottled pulls the shared window through a proxy that rejects 30% of requests
// with 429 (pseudo-randomly, fixed seed): complete, no duplicates, throttling counted.
func TestThrottled(t *testing.T) {
	t.Parallel()
	forEachCluster(t, func(t *testing.T, c *cluster) {
		c.Loaded(t)
		rng := rand.New(rand.NewPCG(7, 30))
		proxy, counts := faultyProxy(t, c.URL(t), func(int, *http.Request) fault {
			if rng.Float64() < 0.3 {
				return reject
			}
			return pass
		})
		s := newSource(t, c, func(cfg *Config) { cfg.URLs = []string{proxy} })
		res := pullComplete(t, s, sharedData(), nil)
		rejected := counts()[reject]
		if res.Throttled == 0 || res.Throttled != rejected || res.Retries < res.Throttled-3 || res.Requests != rejected+counts()[pass] {
			t.Errorf("result %+v; the proxy rejected %d of %d requests", res, rejected, rejected+counts()[pass])
		}
		t.Logf("%s: %+v", c.name, res)
	})
}

// tap records the point-in-time and scroll ids a Source opens, and the ones it
// releases.
type tap struct {
	http.RoundTripper
	mu       sync.Mutex
	opened   map[string]bool
	released map[string]bool
}

func newTap() *tap {
	return &tap{RoundTripper: http.DefaultTransport, opened: map[string]bool{}, released: map[string]bool{}}
}

func (tp *tap) RoundTrip(r *http.Request) (*http.Response, error) {
	var reqBody []byte
	if r.Body != nil {
		reqBody, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	res, err := tp.RoundTripper.RoundTrip(r)
	if err != nil || res.StatusCode != http.StatusOK {
		return res, err
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(b))
	var v struct {
		ID       any `json:"id"`
		PitID    any `json:"pit_id"`
		ScrollID any `json:"_scroll_id"`
		Clear    any `json:"scroll_id"` // clear scroll's request
	}
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if r.Method == http.MethodDelete {
		if json.Unmarshal(reqBody, &v) == nil {
			for _, id := range ids(v.ID, v.PitID, v.Clear) {
				tp.released[id] = true
			}
		}
	} else if json.Unmarshal(b, &v) == nil {
		for _, id := range ids(v.ID, v.PitID, v.ScrollID) {
			tp.opened[id] = true
		}
	}
	return res, nil
}

func ids(vs ...any) []string {
	var out []string
	for _, v := range vs {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			for _, e := range x {
				if s, ok := e.(string); ok {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// dropContexts deletes every point in time and scroll the tap saw, as if they had
// expired.
func (tp *tap) dropContexts(t *testing.T, c *cluster) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	for id := range tp.opened {
		// Only one of these applies to an id; the others fail harmlessly.
		for _, r := range []struct {
			path string
			body any
		}{
			{"/_search/scroll", map[string]any{"scroll_id": []string{id}}},
			{"/_pit", map[string]any{"id": id}},
			{"/_search/point_in_time", map[string]any{"pit_id": []string{id}}},
		} {
			_ = httpDo("DELETE", c.URL(t)+r.path, r.body, nil)
		}
	}
}

// unreleased lists the contexts opened and never released (the last id of each is
// what counts: a context keeps one id per answer at most).
func (tp *tap) unreleased() []string {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	var out []string
	for id := range tp.opened {
		if !tp.released[id] {
			out = append(out, id[:min(len(id), 16)])
		}
	}
	return out
}

// TestContextLostMidPull deletes the point in time under a running pull, twice, and
// loses some answers after the cluster sent them: the pull opens another point in
// time and resumes from its position, without a gap or a duplicate.
func TestContextLostMidPull(t *testing.T) {
	t.Parallel()
	forEachCluster(t, func(t *testing.T, c *cluster) {
		c.Loaded(t)
		proxy, counts := faultyProxy(t, c.URL(t), func(n int, r *http.Request) fault {
			if n%7 == 3 && r.Method == http.MethodPost {
				return lose
			}
			return pass
		})
		tp := newTap()
		d := sharedData().ForApps(routerlogstest.GUID(routerlogstest.AppCart))
		s := newSource(t, c, func(cfg *Config) {
			cfg.Transport, cfg.URLs, cfg.PageSize = tp, []string{proxy}, d.Wanted/20 // pages for the faults to fall in
		})
		batches := 0
		res := pullComplete(t, s, d, func(routerlogs.Batch) {
			if batches++; batches == 2 || batches == 5 {
				tp.dropContexts(t, c)
			}
		})
		if res.Retries < 2+counts()[lose] {
			t.Errorf("result %+v: want a retry for each lost context and answer (%d answers lost)", res, counts()[lose])
		}
		t.Logf("%s: %+v", c.name, res)
	})
}

// TestScrollForced pages with scroll where a point in time exists, losing some scroll
// answers after the cluster sent them (a scroll must not be asked twice for a page: it
// would skip one) and deleting the scroll mid-pull.
func TestScrollForced(t *testing.T) {
	t.Parallel()
	forEachCluster(t, func(t *testing.T, c *cluster) {
		c.Loaded(t)
		scrolls := 0
		proxy, counts := faultyProxy(t, c.URL(t), func(n int, r *http.Request) fault {
			if r.URL.Path == "/_search/scroll" && r.Method == http.MethodPost {
				if scrolls++; scrolls%9 == 4 {
					return lose
				}
			}
			return pass
		})
		tp := newTap()
		s := newSource(t, c, func(cfg *Config) {
			cfg.Paging, cfg.Transport, cfg.URLs = PagingScroll, tp, []string{proxy}
			cfg.PageSize = sharedData().Wanted / 40 // 5,000 of 200,000: pages for the faults to fall in
		})
		batches := 0
		res := pullComplete(t, s, sharedData(), func(routerlogs.Batch) {
			if batches++; batches == 11 {
				tp.dropContexts(t, c)
			}
		})
		if res.Total != int64(sharedData().Wanted) {
			t.Errorf("Total = %d, want %d", res.Total, sharedData().Wanted)
		}
		if counts()[lose] == 0 || res.Retries < 1+counts()[lose] {
			t.Errorf("result %+v, %d scroll answers lost", res, counts()[lose])
		}
		t.Logf("%s: %+v", c.name, res)
	})
}

// TestRawMode parses @message instead of reading rtr.*; the suite compares rtr.*
// records with the parsed lines, this compares raw mode's with them.
func TestRawMode(t *testing.T) {
	t.Parallel()
	forEachCluster(t, func(t *testing.T, c *cluster) {
		s := newSource(t, c, func(cfg *Config) { cfg.Raw = true })
		pullComplete(t, s, sharedData().ForApps(routerlogstest.GUID(routerlogstest.AppCart)), nil)
	})
}

// minuteWindow is a small part of the shared data set: a minute and the shop app.
func minuteWindow() *routerlogstest.Dataset {
	from := routerlogstest.WindowStart.Add(5 * time.Minute)
	return sharedData().ForWindow(from, from.Add(time.Minute)).ForApps(routerlogstest.AppShop)
}

// TestUnfiltered reads whole answers and whole documents.
func TestUnfiltered(t *testing.T) {
	t.Parallel()
	forEachCluster(t, func(t *testing.T, c *cluster) {
		s := newSource(t, c, func(cfg *Config) { cfg.NoFilterPath, cfg.NoSourceFilter = true, true })
		pullComplete(t, s, minuteWindow(), nil)
	})
}

// TestContextsReleased checks that pulls close their points in time and scrolls,
// also when the close is throttled once, when the pull was interrupted and when it
// ran out of budget.
func TestContextsReleased(t *testing.T) {
	t.Parallel()
	forEachCluster(t, func(t *testing.T, c *cluster) {
		c.Loaded(t)
		for _, paging := range []Paging{PagingAuto, PagingScroll} {
			t.Run("paging="+string(paging), func(t *testing.T) {
				deletes := 0
				proxy, _ := faultyProxy(t, c.URL(t), func(n int, r *http.Request) fault {
					if r.Method == http.MethodDelete {
						if deletes++; deletes%2 == 1 {
							return reject
						}
					}
					return pass
				})
				tp := newTap()
				d := minuteWindow()
				// Eight pages, and a budget that runs out in the second, in either data set
				// (a fixed 1,000 and 1,500 outlasted the race detector's window of 804).
				page := d.Wanted / 8
				s := newSource(t, c, func(cfg *Config) {
					cfg.Transport, cfg.URLs, cfg.Paging, cfg.PageSize = tp, []string{proxy}, paging, page
				})
				pullComplete(t, s, d, nil)
				res, err := s.Pull(context.Background(), d.Query, routerlogs.Cursor{}, routerlogs.Budget{MaxDocuments: int64(page * 3 / 2)}, func(routerlogs.Batch) error { return nil })
				if err != nil || !res.BudgetExhausted {
					t.Fatalf("pull on a budget of %d: %+v, %v; want the budget exhausted", page*3/2, res, err)
				}
				if _, err := s.Pull(context.Background(), d.Query, routerlogs.Cursor{}, routerlogs.Budget{}, func(routerlogs.Batch) error { return errInterrupt }); err != errInterrupt {
					t.Fatalf("interrupted pull: %v", err)
				}
				if len(tp.opened) < 3 {
					t.Fatalf("%d contexts opened in 3 pulls", len(tp.opened))
				}
				if left := tp.unreleased(); len(left) > 0 {
					t.Errorf("%d of %d contexts not released: %s", len(left), len(tp.opened), strings.Join(left, " "))
				}
			})
		}
	})
}

var errInterrupt = errors.New("interrupted by the test")

// TestNoIndexMatches pulls from a pattern that matches no index: nothing, and no
// error (OpenSearch 2 refuses a point in time over no index; the pull scrolls then).
func TestNoIndexMatches(t *testing.T) {
	t.Parallel()
	forEachCluster(t, func(t *testing.T, c *cluster) {
		s, err := New(Config{URLs: []string{c.URL(t)}, Index: "nomatch-rl-*"})
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Pull(context.Background(), sharedData().Query, routerlogs.Cursor{}, routerlogs.Budget{}, func(b routerlogs.Batch) error {
			return errors.New("a batch from no index")
		})
		if err != nil || res.Retrieved != 0 || res.Total != 0 {
			t.Fatalf("result %+v, %v; want nothing and no error", res, err)
		}
	})
}
