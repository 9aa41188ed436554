package engine

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation"
	"github.com/cf-benchmark/cf-benchmark/foundation/testfoundation"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
	"github.com/cf-benchmark/cf-benchmark/platform"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// evacuateReporter crashes the tunnel app 3 s into step 1 and evacuates the
// generators' cell 3 s into step 2.
type evacuateReporter struct {
	discardReporter
	t      *testing.T
	f      *foundation.Foundation
	cf     *platform.CF
	tunnel string // the tunnel app's name
	mu     sync.Mutex
	notes  []string
	hits   []foundation.Hit
	done   chan struct{}

	crashed  foundation.Hit
	crashErr error
}

func (e *evacuateReporter) Note(msg string) {
	e.mu.Lock()
	e.notes = append(e.notes, msg)
	e.mu.Unlock()
	if strings.HasPrefix(msg, "fast: step 1/2 starts") {
		go e.crashTunnel()
	}
	if !strings.HasPrefix(msg, "fast: step 2/2 starts") {
		return
	}
	go func() {
		defer close(e.done)
		time.Sleep(3 * time.Second)
		hits, err := e.f.Evacuate("loadgen")
		if err != nil {
			e.t.Errorf("evacuate loadgen: %v", err)
		}
		e.mu.Lock()
		e.hits = hits
		e.mu.Unlock()
	}()
}

// crashTunnel kills the tunnel app's instance 3 s into step 1 (SIGKILL: its tunnels
// drop at once); the foundation restarts it on another port.
func (e *evacuateReporter) crashTunnel() {
	time.Sleep(3 * time.Second)
	ctx := context.Background()
	spaces, err := e.cf.Client().Spaces.ListAll(ctx, nil)
	if err != nil {
		e.t.Errorf("list spaces: %v", err)
		return
	}
	for _, s := range spaces {
		if a, err := e.cf.FindApp(ctx, s.GUID, e.tunnel); err == nil && a != nil {
			hit, err := e.f.Crash(a.ProcessGUID, 0)
			e.mu.Lock()
			e.crashed, e.crashErr = hit, err
			e.mu.Unlock()
			return
		}
	}
	e.t.Errorf("no tunnel app %s to crash", e.tunnel)
}

func (e *evacuateReporter) Done(Stage, *Outcome) {}

// TestARunOutlivesMovesOfItsTunnelAndGenerators: a whole run on the local foundation
// whose tunnel app (the run's way to its results database) crashes 3 s into step 1 and
// is restarted by the foundation on another port, and whose generators' cell is
// evacuated 3 s into step 2, as Diego drains a cell in a rolling upgrade: the generator
// instances and the tunnel app each get a replacement (a new guid and port) and then
// stop. The run completes: the tunnel client reconnects each time, the replaced
// generators are not taken for ones taken away (no generators_lost) and what they sent
// is stored (no samples_lost).
func TestARunOutlivesMovesOfItsTunnelAndGenerators(t *testing.T) {
	t.Parallel()
	f, cl := testfoundation.Start(t)
	cf := platform.New(cl)
	dir, bin := stubRunDir(t)
	sp, text := instanceRun(t, dir, "evac")
	rep := &evacuateReporter{t: t, f: f, cf: cf, tunnel: TunnelApp(sp), done: make(chan struct{})}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	o, err := RunSession(ctx, sp, text, SessionConfig{CF: cf, API: cl.Config.ApiURL(""), Pushed: Pushed{Binary: bin}, Reporter: rep,
		PollEvery: 200 * time.Millisecond, SpillDir: t.TempDir()})
	select {
	case <-rep.done:
	case <-time.After(time.Minute):
		t.Fatal("step 2 never started: nothing was evacuated")
	}
	rep.mu.Lock()
	hits, notes, crashed, crashErr := rep.hits, strings.Join(rep.notes, "\n"), rep.crashed, rep.crashErr
	rep.mu.Unlock()
	if crashErr != nil || crashed.InstanceGUID == "" {
		t.Errorf("crash the tunnel app: %+v, %v", crashed, crashErr)
	}
	if err != nil {
		t.Fatalf("run: %v\n%s", err, notes)
	}
	if o.Run.Status != resultsdb.RunCompleted {
		t.Fatalf("run %s (%s)\n%s", o.Run.Status, o.Run.Reason, notes)
	}
	moved := map[string]bool{}
	for _, h := range hits {
		moved[h.AppGUID] = true
	}
	var gen, tunnelApp bool
	for _, name := range []string{GeneratorApp(sp, "fast"), TunnelApp(sp)} {
		spaces, _ := cf.Client().Spaces.ListAll(ctx, nil)
		for _, s := range spaces {
			if a, err := cf.FindApp(ctx, s.GUID, name); err == nil && a != nil && moved[a.GUID] {
				gen, tunnelApp = gen || name == GeneratorApp(sp, "fast"), tunnelApp || name == TunnelApp(sp)
			}
		}
	}
	if !gen || !tunnelApp {
		t.Fatalf("evacuated %+v: want the generator and the tunnel app among them", hits)
	}
	for _, f := range o.Findings {
		t.Logf("finding %s at step %d: %s", f.Check, f.Step+1, f.Message)
		if f.Check == GeneratorsLostCheck || f.Check == LossCheck {
			t.Errorf("finding %s: %s", f.Check, f.Message)
		}
	}
}

// passwordToken logs in to f's UAA with the password grant, as cf login does.
func passwordToken(t *testing.T, info foundation.Info) platform.Token {
	t.Helper()
	form := url.Values{"grant_type": {"password"}, "username": {info.User}, "password": {info.Password}}
	req, _ := http.NewRequest(http.MethodPost, info.APIURL+"/oauth/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("cf", "")
	resp, err := testhttp.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		Access  string `json:"access_token"`
		Refresh string `json:"refresh_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.Access == "" {
		t.Fatalf("password grant: %s, %v", resp.Status, err)
	}
	return platform.Token{Access: tok.Access, Refresh: tok.Refresh}
}

// expireReporter expires every access token 3 s into each step.
type expireReporter struct {
	discardReporter
	f       *foundation.Foundation
	mu      sync.Mutex
	notes   []string
	expired int
}

func (e *expireReporter) Note(msg string) {
	e.mu.Lock()
	e.notes = append(e.notes, msg)
	e.mu.Unlock()
	if strings.HasPrefix(msg, "fast: step ") && strings.Contains(msg, " starts") {
		go func() {
			time.Sleep(3 * time.Second)
			e.f.ExpireTokens(time.Now())
			e.mu.Lock()
			e.expired++
			e.mu.Unlock()
		}()
	}
}

func (e *expireReporter) Done(Stage, *Outcome) {}

// TestARunOutlivesShortTokensAndTheRateLimit: a whole run on the local foundation with
// 5-second access tokens, every token expired 3 s into each step, and CC's rate
// limiter on for its admin at 60 requests per 10 s (a run asks about 250 in its minute),
// through platform.Connect as the plugin connects: it completes, renewing its token many
// times, and reads the budget the CC announced. Whether it must wait for that budget
// depends on the host's pace (on a busy one the run asks less often than 60 per 10 s:
// CI once saw 186 a minute and no wait), so the pacing itself is platform's tests'
// (TestRateLimiterPacesALowBudgetUntilItsReset).
func TestARunOutlivesShortTokensAndTheRateLimit(t *testing.T) {
	t.Parallel()
	f, _ := testfoundation.Start(t, func(c *foundation.Config) {
		c.AccessTokenTTL = 5 * time.Second
		c.RateLimit, c.RateLimitInterval, c.RateLimitAdmins = 60, 10*time.Second, true
	})
	info := f.Info()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cf, err := platform.Connect(ctx, platform.Login{API: info.APIURL, Token: passwordToken(t, info)})
	if err != nil {
		t.Fatal(err)
	}
	dir, bin := stubRunDir(t)
	sp, text := instanceRun(t, dir, "tokens")
	rep := &expireReporter{f: f}
	o, err := RunSession(ctx, sp, text, SessionConfig{CF: cf, API: info.APIURL, Pushed: Pushed{Binary: bin}, Reporter: rep,
		PollEvery: 200 * time.Millisecond, SpillDir: t.TempDir()})
	rep.mu.Lock()
	notes, expired := strings.Join(rep.notes, "\n"), rep.expired
	rep.mu.Unlock()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, notes)
	}
	if o.Run.Status != resultsdb.RunCompleted {
		t.Fatalf("run %s (%s)\n%s", o.Run.Status, o.Run.Reason, notes)
	}
	for _, f := range o.Findings {
		t.Logf("finding %s at step %d: %s", f.Check, f.Step+1, f.Message)
		if f.Check == GeneratorsLostCheck || f.Check == LossCheck {
			t.Errorf("finding %s: %s", f.Check, f.Message)
		}
	}
	st := cf.Requests()
	t.Logf("%s; %d token renewals; tokens expired %d times", st, cf.TokenRenewals(), expired)
	if expired < 2 || cf.TokenRenewals() < 3 || st.Limit != 60 {
		t.Errorf("%d expiries, %d renewals, limit %d: want every step's expiry, renewals, and the CC's budget seen", expired, cf.TokenRenewals(), st.Limit)
	}
}
