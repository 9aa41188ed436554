package logcache

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	lcserver "github.com/cf-benchmark/cf-benchmark/foundation/logcache"
)

// acceptedTokens authorises the tokens it holds, as the local foundation's CC does
// Log Cache's reads; a token taken out is one that expired.
type acceptedTokens struct {
	mu    sync.Mutex
	valid map[string]bool
}

func (a *acceptedTokens) Authenticated(h string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.valid[h]
}

func (a *acceptedTokens) CanRead(h, _ string) bool { return a.Authenticated(h) }

func (a *acceptedTokens) set(tokens ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.valid = map[string]bool{}
	for _, t := range tokens {
		a.valid["bearer "+t] = true
	}
}

// renewingDoer sends its token and, when renewable, renews it to the next one
// acceptedTokens holds, as platform.AuthClient does with UAA.
type renewingDoer struct {
	mu        sync.Mutex
	token     string
	next      string // the renewed token; "" fails renewals
	renewals  int
	sentAfter time.Time
}

func (d *renewingDoer) Do(r *http.Request) (*http.Response, error) {
	d.mu.Lock()
	r.Header.Set("Authorization", "bearer "+d.token)
	d.mu.Unlock()
	return noKeepAlive.Do(r)
}

func (d *renewingDoer) RenewToken(_ context.Context, sent time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.renewals++
	d.sentAfter = sent
	if d.next == "" {
		return errors.New("UAA: 401 Unauthorized: invalid_token: Invalid refresh token")
	}
	d.token = d.next
	return nil
}

// localLogCache is the local foundation's Log Cache API in process, keeping at most
// maxPerSource envelopes a source.
func localLogCache(t *testing.T, maxPerSource int) (*lcserver.Store, *acceptedTokens, string) {
	t.Helper()
	store := lcserver.NewStore(maxPerSource)
	auth := &acceptedTokens{}
	srv := httptest.NewServer(lcserver.Handler(lcserver.APIConfig{Store: store, Auth: auth}))
	t.Cleanup(srv.Close)
	return store, auth, srv.URL
}

// sample is one container-metrics sample of instance 0 at ts, as the rep sends it: a
// counters envelope and a usage one a microsecond apart.
func sample(ts int64) []lcserver.Envelope {
	tags := map[string]string{"process_type": "web", "process_instance_id": "guid-0"}
	g := func(v float64) lcserver.GaugeValue { return lcserver.GaugeValue{Unit: "bytes", Value: v} }
	return []lcserver.Envelope{
		{Timestamp: ts, SourceID: appGUID, InstanceID: "0", Tags: tags, Gauge: map[string]lcserver.GaugeValue{
			"absolute_usage": g(float64(ts - t0)), "absolute_entitlement": g(float64(ts - t0)), "container_age": g(float64(ts - t0))}},
		{Timestamp: ts + 1000, SourceID: appGUID, InstanceID: "0", Tags: tags, Gauge: map[string]lcserver.GaugeValue{
			"cpu": g(1), "memory": g(1 << 20), "disk": g(1 << 20), "memory_quota": g(1 << 30)}},
	}
}

// samples puts one sample a second for [from, to) seconds after t0.
func samples(store *lcserver.Store, from, to int) {
	for s := from; s < to; s++ {
		store.Put(sample(t0 + int64(s)*int64(time.Second))...)
	}
}

// TestAnExpiredTokenIsRenewedNotReadAsNoData: when Log Cache stops taking the token
// (a bare 404 to every read, as to an unknown source) the poller renews it once and
// reads on; an unknown source stays nothing, with no renewal.
func TestAnExpiredTokenIsRenewedNotReadAsNoData(t *testing.T) {
	t.Parallel()
	store, auth, url := localLogCache(t, 0)
	auth.set("first")
	samples(store, 0, 5)
	d := &renewingDoer{token: "first", next: "second"}
	s := &sink{}
	c := newClock(t0 + 5*int64(time.Second))
	p := newPoller(t, url, s, c, func(cfg *Config) {
		cfg.Client = d
		cfg.Targets = append(cfg.Targets, Target{AppName: "gone", AppGUID: "deleted-app"})
	})
	if err := p.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(s.all()) != 5 || d.renewals != 0 {
		t.Fatalf("%d rows after %d renewals, want 5 and none (an unknown source is no rejection)", len(s.all()), d.renewals)
	}
	auth.set("second") // "first" expired
	samples(store, 5, 10)
	c.set(t0 + 10*int64(time.Second))
	before := time.Now()
	if err := p.Poll(t.Context()); err != nil {
		t.Fatalf("poll after the token expired: %v", err)
	}
	if len(s.all()) != 10 || d.renewals != 1 {
		t.Errorf("%d rows after %d renewals, want 10 after 1", len(s.all()), d.renewals)
	}
	if d.sentAfter.Before(before) {
		t.Errorf("renewed for a request sent at %s, before the poll", d.sentAfter)
	}
}

// TestARejectedTokenIsAnError: a token Log Cache refuses and that cannot be renewed
// fails the poll with ErrTokenRejected, naming why, rather than storing nothing
// silently.
func TestARejectedTokenIsAnError(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		client Doer
		want   string
	}{
		{"no renewer", authDoer{token: "bearer stale"}, "expired or is invalid"},
		{"renewal fails", &renewingDoer{token: "stale"}, "Invalid refresh token"},
		{"renewed to a refused token", &renewingDoer{token: "stale", next: "also-stale"}, "expired or is invalid"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			store, auth, url := localLogCache(t, 0)
			auth.set("valid")
			samples(store, 0, 5)
			s := &sink{}
			p := newPoller(t, url, s, newClock(t0+5*int64(time.Second)), func(cfg *Config) { cfg.Client = c.client })
			err := p.Poll(t.Context())
			if !errors.Is(err, ErrTokenRejected) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("poll: %v, want ErrTokenRejected saying %q", err, c.want)
			}
			if len(s.all()) != 0 {
				t.Errorf("%d rows", len(s.all()))
			}
		})
	}
}

// TestEvictionsAreReported: with a small max_per_source, envelopes evicted between two
// polls are reported from the poller's previous read to the oldest Log Cache still
// holds, with meta's figures; polls that keep up report nothing.
func TestEvictionsAreReported(t *testing.T) {
	t.Parallel()
	store, auth, url := localLogCache(t, 20) // 10 samples
	auth.set("t")
	samples(store, 0, 10)
	s := &sink{}
	c := newClock(t0 + 10*int64(time.Second))
	p := newPoller(t, url, s, c, func(cfg *Config) { cfg.Client = &renewingDoer{token: "t"} })
	if err := p.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	samples(store, 10, 18) // 8 more: the oldest 8 drop, all of them read
	c.set(t0 + 18*int64(time.Second))
	if err := p.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	if ev := p.Evictions(); len(ev) != 0 {
		t.Fatalf("evictions %v of envelopes read before", ev)
	}
	samples(store, 18, 48) // 30 more: samples 18..37 drop unread
	c.set(t0 + 48*int64(time.Second))
	if err := p.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	ev := p.Evictions()
	if len(ev) != 1 {
		t.Fatalf("evictions %v, want 1", ev)
	}
	e := ev[0]
	sec := func(n int) time.Time { return time.Unix(0, t0+int64(n)*int64(time.Second)) }
	if e.AppGUID != appGUID || !e.From.Equal(sec(18)) || !e.Before.Equal(sec(38)) || e.Expired != 76 || e.Count != 20 || e.Restarted {
		t.Errorf("eviction %+v, want [18 s, 38 s), 76 expired, 20 held", e)
	}
	if got := e.String(); !strings.Contains(got, "container metrics for app bulletin-java") || !strings.Contains(got, "evicted from Log Cache") ||
		!strings.Contains(got, "expired 76") {
		t.Errorf("String() = %q", got)
	}
	if n := len(s.all()); n != 18+10 {
		t.Errorf("%d rows, want the 18 read before and the 10 left", n)
	}
}

// expiresAfterMeta is acceptedTokens whose first token expires right after the poll's
// meta took it: the read is the first to meet the refusal.
type expiresAfterMeta struct {
	acceptedTokens
	once sync.Once
}

func (a *expiresAfterMeta) Authenticated(h string) bool {
	ok := a.acceptedTokens.Authenticated(h)
	a.once.Do(func() { a.set("second") })
	return ok
}

// TestATokenExpiringBetweenMetaAndReadIsRenewed: a read's bare 404, which meta (with
// the same token) confirms is a refusal, renews the token once and reads the page again.
func TestATokenExpiringBetweenMetaAndReadIsRenewed(t *testing.T) {
	t.Parallel()
	store := lcserver.NewStore(0)
	auth := &expiresAfterMeta{}
	auth.set("first", "second")
	srv := httptest.NewServer(lcserver.Handler(lcserver.APIConfig{Store: store, Auth: auth}))
	t.Cleanup(srv.Close)
	samples(store, 0, 5)
	d := &renewingDoer{token: "first", next: "second"}
	s := &sink{}
	p := newPoller(t, srv.URL, s, newClock(t0+5*int64(time.Second)), func(cfg *Config) { cfg.Client = d })
	if err := p.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(s.all()) != 5 || d.renewals != 1 {
		t.Errorf("%d rows after %d renewals, want 5 after 1", len(s.all()), d.renewals)
	}
}
