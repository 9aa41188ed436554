//go:build linux

package foundation_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation"
	"github.com/cf-benchmark/cf-benchmark/foundation/cc"
	"github.com/cf-benchmark/cf-benchmark/foundation/testfoundation"
)

// api calls the foundation's API as its admin.
type api struct {
	t     *testing.T
	url   string
	token string
	c     *http.Client
}

func newAPI(t *testing.T, info foundation.Info) *api {
	a := &api{t: t, url: info.APIURL, c: &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}}
	t.Cleanup(a.c.CloseIdleConnections)
	form := url.Values{"grant_type": {"password"}, "username": {info.User}, "password": {info.Password}}
	req, _ := http.NewRequest("POST", a.url+"/oauth/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("cf", "")
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	a.do(req, 200, &tok)
	a.token = tok.AccessToken
	return a
}

func (a *api) do(req *http.Request, want int, out any) {
	a.t.Helper()
	resp, err := a.c.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		a.t.Fatalf("%s %s: %d %s, want %d", req.Method, req.URL.Path, resp.StatusCode, b, want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			a.t.Fatalf("%s %s: %v: %s", req.Method, req.URL.Path, err, b)
		}
	}
}

func (a *api) call(method, path string, body any, want int, out any) {
	a.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, a.url+path, r)
	req.Header.Set("Authorization", "bearer "+a.token)
	req.Header.Set("Content-Type", "application/json")
	a.do(req, want, out)
}

type event struct {
	Type string         `json:"type"`
	Data map[string]any `json:"data"`
}

func (a *api) events(app, typ string) []event {
	a.t.Helper()
	var out struct {
		Resources []event `json:"resources"`
	}
	a.call("GET", "/v3/audit_events?per_page=5000&target_guids="+app+"&types="+typ, nil, 200, &out)
	return out.Resources
}

type stat struct {
	Index        int    `json:"index"`
	State        string `json:"state"`
	Host         string `json:"host"`
	InstanceGUID string `json:"instance_guid"`
	Uptime       int    `json:"uptime"`
}

func (a *api) stats(proc string) []stat {
	a.t.Helper()
	var out struct {
		Resources []stat `json:"resources"`
	}
	a.call("GET", "/v3/processes/"+proc+"/stats", nil, 200, &out)
	return out.Resources
}

// running reports whether every instance of proc runs, none with a guid in not.
func (a *api) running(proc string, n int, not ...string) bool {
	st := a.stats(proc)
	if len(st) != n {
		return false
	}
	for _, s := range st {
		if s.State != "RUNNING" || s.InstanceGUID == "" {
			return false
		}
		for _, g := range not {
			if s.InstanceGUID == g {
				return false
			}
		}
	}
	return true
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
	}
}

// TestChaos applies each fault to a running app on a real foundation and checks what
// Cloud Foundry would show of it: events, new instances, requests that never fail
// during an evacuation, a router restart that closes idle connections.
func TestChaos(t *testing.T) {
	f, cl := testfoundation.Start(t, func(c *foundation.Config) { c.RouterDrainWait = 500 * time.Millisecond })
	info := f.Info()
	a := newAPI(t, info)
	app := testfoundation.PushStub(t, cl, testfoundation.StubZip(t), "apps", "chaos", 2)
	waitFor(t, 60*time.Second, "2 instances running", func() bool { return a.running(app, 2) })

	var root struct {
		Links map[string]struct {
			Href string `json:"href"`
		} `json:"links"`
	}
	a.call("GET", "/", nil, 200, &root)
	if root.Links["cfbench_chaos"].Href != info.APIURL+cc.ChaosPath {
		t.Fatalf("links.cfbench_chaos = %+v", root.Links["cfbench_chaos"])
	}

	t.Run("crash", func(t *testing.T) {
		a.t = t
		hit, err := f.Crash(app, 0)
		if err != nil {
			t.Fatal(err)
		}
		if hit.Cell != "apps" || hit.InstanceGUID == "" || hit.AppGUID != app {
			t.Errorf("hit %+v", hit)
		}
		waitFor(t, 30*time.Second, "the crash recorded and the instance running again", func() bool {
			return len(a.events(app, "audit.app.process.crash")) == 1 && len(a.events(app, "app.crash")) == 1 &&
				a.running(app, 2, hit.InstanceGUID)
		})
		ev := a.events(app, "audit.app.process.crash")[0]
		want := map[string]any{"instance": hit.InstanceGUID, "index": 0.0, "cell_id": "apps", "reason": "CRASHED",
			"exit_description": "APP/PROC/WEB: Exited with status 137", "crash_count": 1.0, "process_type": "web"}
		for k, v := range want {
			if ev.Data[k] != v {
				t.Errorf("audit.app.process.crash data %s = %v, want %v (%v)", k, ev.Data[k], v, ev.Data)
			}
		}
		if _, err := f.Crash(app, 5); !errors.Is(err, foundation.ErrNoInstance) {
			t.Errorf("Crash of index 5: %v, want ErrNoInstance", err)
		}
	})

	t.Run("oom through the API", func(t *testing.T) {
		a.t = t
		var out struct {
			Action    string `json:"action"`
			Instances []struct {
				InstanceGUID string `json:"instance_guid"`
				Cell         string `json:"cell"`
				Index        int    `json:"index"`
			} `json:"instances"`
		}
		a.call("POST", cc.ChaosPath, map[string]any{"action": "oom", "app_guid": app, "index": 1}, 200, &out)
		if out.Action != "oom" || len(out.Instances) != 1 || out.Instances[0].Index != 1 || out.Instances[0].Cell != "apps" {
			t.Fatalf("answer %+v", out)
		}
		guid := out.Instances[0].InstanceGUID
		waitFor(t, 30*time.Second, "the OOM kill recorded and the instance running again", func() bool {
			for _, ev := range a.events(app, "audit.app.process.crash") {
				if ev.Data["instance"] == guid {
					return a.running(app, 2, guid)
				}
			}
			return false
		})
		for _, ev := range a.events(app, "audit.app.process.crash") {
			if ev.Data["instance"] == guid && ev.Data["exit_description"] != "APP/PROC/WEB: Exited with status 137 (out of memory)" {
				t.Errorf("OOM exit_description %v", ev.Data["exit_description"])
			}
		}
		a.call("POST", cc.ChaosPath, map[string]any{"action": "oom", "app_guid": app, "index": 9}, 404, nil)
		a.call("POST", cc.ChaosPath, map[string]any{"action": "evacuate", "cell": "nowhere"}, 404, nil)
	})

	t.Run("evacuate", func(t *testing.T) {
		a.t = t
		before := a.stats(app)
		load := startLoad(t, info.RouterAddr, "chaos."+info.AppsDomain)
		waitFor(t, 30*time.Second, "requests through the router", func() bool { return load.ok.Load() >= 20 })
		hits, err := f.Evacuate("apps")
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 2 {
			t.Fatalf("hits %+v", hits)
		}
		old := []string{before[0].InstanceGUID, before[1].InstanceGUID}
		waitFor(t, 60*time.Second, "both instances replaced", func() bool { return a.running(app, 2, old...) })
		// Requests sent after the old instances stopped.
		n := load.ok.Load()
		waitFor(t, 30*time.Second, "requests through the router after the move", func() bool { return load.ok.Load() >= n+20 })
		load.stop()
		if failed := load.failures(); len(failed) > 0 {
			t.Errorf("%d of %d requests failed during the evacuation, first: %s", len(failed), load.ok.Load()+int64(len(failed)), failed[0])
		}
		evs := a.events(app, "audit.app.process.rescheduling")
		if len(evs) != 2 {
			t.Fatalf("%d rescheduling events, want 2", len(evs))
		}
		for _, ev := range evs {
			if ev.Data["reason"] != "Cell is being evacuated" || ev.Data["cell_id"] != "apps" || ev.Data["process_type"] != "web" {
				t.Errorf("rescheduling event data %v", ev.Data)
			}
		}
		if _, err := f.Evacuate("nowhere"); !errors.Is(err, foundation.ErrNoCell) {
			t.Errorf("Evacuate(nowhere): %v, want ErrNoCell", err)
		}
	})

	t.Run("restart-router", func(t *testing.T) {
		a.t = t
		conn, err := net.Dial("tcp", info.RouterAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		br := newKeepAlive(t, conn, "chaos."+info.AppsDomain)
		br.get() // the connection is now idle, kept alive
		done, err := f.RestartRouter(0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.RestartRouter(0); err == nil {
			t.Error("a second restart while one is under way: no error")
		}
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the router did not come back")
		}
		// The idle keep-alive connection was closed by the drain.
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := conn.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Errorf("idle keep-alive connection after the restart: read %d bytes, %v; want EOF or a reset", n, err)
		}
		// And the router answers again, on the same address.
		conn2, err := net.Dial("tcp", info.RouterAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn2.Close()
		newKeepAlive(t, conn2, "chaos."+info.AppsDomain).get()
	})
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// keepAlive sends requests on one connection.
type keepAlive struct {
	t    *testing.T
	conn net.Conn
	host string
	r    *bufio.Reader
}

func newKeepAlive(t *testing.T, conn net.Conn, host string) *keepAlive {
	return &keepAlive{t: t, conn: conn, host: host, r: bufio.NewReader(conn)}
}

func (k *keepAlive) get() {
	k.t.Helper()
	k.conn.SetDeadline(time.Now().Add(30 * time.Second))
	defer k.conn.SetDeadline(time.Time{})
	req, _ := http.NewRequest("GET", "http://"+k.host+"/hello", nil)
	if err := req.Write(k.conn); err != nil {
		k.t.Fatal(err)
	}
	resp, err := http.ReadResponse(k.r, req)
	if err != nil {
		k.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		k.t.Fatalf("GET through the router: %d", resp.StatusCode)
	}
}

// load sends GETs through the router, one after the other on a keep-alive client,
// until stop, counting what succeeded and keeping what failed.
type load struct {
	ok     atomic.Int64
	mu     sync.Mutex
	failed []string
	quit   chan struct{}
	done   chan struct{}
}

func startLoad(t *testing.T, router, host string) *load {
	l := &load{quit: make(chan struct{}), done: make(chan struct{})}
	c := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	go func() {
		defer close(l.done)
		defer c.CloseIdleConnections()
		for {
			select {
			case <-l.quit:
				return
			default:
			}
			req, _ := http.NewRequest("GET", "http://"+router+"/hello", nil)
			req.Host = host
			resp, err := c.Do(req)
			if err != nil {
				l.fail(err.Error())
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode/100 != 2 {
				l.fail(fmt.Sprintf("%d %s", resp.StatusCode, resp.Header.Get("X-Cf-Routererror")))
				continue
			}
			l.ok.Add(1)
		}
	}()
	t.Cleanup(l.stop)
	return l
}

func (l *load) fail(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failed = append(l.failed, s)
}

func (l *load) stop() {
	select {
	case <-l.quit:
	default:
		close(l.quit)
	}
	<-l.done
}

func (l *load) failures() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.failed...)
}
