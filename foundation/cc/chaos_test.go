package cc

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// fakeChaos records the faults asked of it.
type fakeChaos struct {
	mu       sync.Mutex
	calls    []string
	restarts int
}

func (f *fakeChaos) Crash(proc string, index int, oom bool) (ChaosInstance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if index > 0 {
		return ChaosInstance{}, fmt.Errorf("%w: no instance %d", ErrChaosNotFound, index)
	}
	f.calls = append(f.calls, fmt.Sprintf("crash %s %d %v", proc, index, oom))
	return ChaosInstance{ProcessGUID: proc, AppGUID: proc, ProcessType: "web", Index: index, InstanceGUID: "inst-0", Cell: "apps"}, nil
}

func (f *fakeChaos) Evacuate(cell string) ([]ChaosInstance, error) {
	if cell != "apps" {
		return nil, fmt.Errorf("%w: no cell %q", ErrChaosNotFound, cell)
	}
	return []ChaosInstance{{AppGUID: "a", ProcessType: "web", InstanceGUID: "i", Cell: "apps"}}, nil
}

func (f *fakeChaos) RestartRouter() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.restarts++
	return nil
}

// TestChaosEndpoint: the root links the chaos endpoint; the admin applies faults
// through it, with CC-shaped errors for what it cannot find or understand; anyone else
// is refused as CC refuses them; expire-tokens ends the tokens issued before.
func TestChaosEndpoint(t *testing.T) {
	e := newEnv(t, t.TempDir())
	if link := get(e.must(200, "GET", "/", nil), "links", "cfbench_chaos"); link != nil {
		t.Fatalf("cfbench_chaos without Config.Chaos: %v", link)
	}
	if code, _, _ := e.do("POST", ChaosPath, map[string]any{"action": "restart-router"}); code != 404 {
		t.Errorf("chaos without Config.Chaos: %d, want 404", code)
	}
	fc := &fakeChaos{}
	e.srv.cfg.Chaos = fc
	if href := get(e.must(200, "GET", "/", nil), "links", "cfbench_chaos", "href"); href != e.http.URL+ChaosPath {
		t.Fatalf("cfbench_chaos href %v", href)
	}
	app := e.push(e.space("apps"), "applications:\n- name: web\n")

	out := e.must(200, "POST", ChaosPath, map[string]any{"action": "oom", "app_guid": app})
	hits := out["instances"].([]any)
	if out["action"] != "oom" || len(hits) != 1 || get(hits[0], "instance_guid") != "inst-0" || get(hits[0], "cell") != "apps" ||
		get(hits[0], "process_type") != "web" || get(hits[0], "index") != float64(0) || get(hits[0], "app_guid") != app {
		t.Errorf("oom answer %v", out)
	}
	if _, err := time.Parse(time.RFC3339Nano, out["at"].(string)); err != nil {
		t.Errorf("at: %v", err)
	}
	e.must(200, "POST", ChaosPath, map[string]any{"action": "crash", "app_guid": app, "index": 0, "process_type": "web"})
	if want := fmt.Sprint([]string{"crash " + app + " 0 true", "crash " + app + " 0 false"}); fmt.Sprint(fc.calls) != want {
		t.Errorf("calls %v, want %v", fc.calls, want)
	}
	if out := e.must(200, "POST", ChaosPath, map[string]any{"action": "restart-router"}); len(out["instances"].([]any)) != 0 || fc.restarts != 1 {
		t.Errorf("restart-router: %v, %d restarts", out, fc.restarts)
	}
	e.must(200, "POST", ChaosPath, map[string]any{"action": "evacuate", "cell": "apps"})

	for _, c := range []struct {
		body  map[string]any
		code  int
		title string
	}{
		{map[string]any{"action": "crash", "app_guid": "nope"}, 404, "CF-ResourceNotFound"},
		{map[string]any{"action": "crash", "app_guid": app, "process_type": "worker"}, 404, "CF-ResourceNotFound"},
		{map[string]any{"action": "crash", "app_guid": app, "index": 3}, 404, "CF-ResourceNotFound"},
		{map[string]any{"action": "evacuate", "cell": "nowhere"}, 404, "CF-ResourceNotFound"},
		{map[string]any{"action": "evacuate"}, 422, "CF-UnprocessableEntity"},
		{map[string]any{"action": "crash"}, 422, "CF-UnprocessableEntity"},
		{map[string]any{"action": "crash", "app_guid": app, "index": -1}, 422, "CF-UnprocessableEntity"},
		{map[string]any{"action": "dance"}, 422, "CF-UnprocessableEntity"},
		{map[string]any{}, 422, "CF-UnprocessableEntity"},
	} {
		code, out, _ := e.do("POST", ChaosPath, c.body)
		if code != c.code || get(out["errors"].([]any)[0], "title") != c.title {
			t.Errorf("%v: %d %v, want %d %s", c.body, code, out, c.code, c.title)
		}
	}

	// Someone other than the admin may not.
	admin := e.token
	e.must(201, "POST", "/Users", map[string]any{"userName": "dev", "password": "s3cret", "origin": "uaa"})
	e.token = e.login("dev", "s3cret")
	if code, out, _ := e.do("POST", ChaosPath, map[string]any{"action": "restart-router"}); code != http.StatusForbidden ||
		get(out["errors"].([]any)[0], "title") != "CF-NotAuthorized" {
		t.Errorf("a user's chaos: %d %v, want 403 CF-NotAuthorized", code, out)
	}
	e.token = ""
	if code, _, _ := e.do("POST", ChaosPath, map[string]any{"action": "restart-router"}); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}

	// expire-tokens: the token that asked for it is among those it ends.
	e.token = admin
	e.must(200, "POST", ChaosPath, map[string]any{"action": "expire-tokens"})
	if code, out, _ := e.do("GET", "/v3/apps", nil); code != http.StatusUnauthorized || get(out["errors"].([]any)[0], "title") != "CF-InvalidAuthToken" {
		t.Errorf("a token issued before expire-tokens: %d %v, want 401 CF-InvalidAuthToken", code, out)
	}
	if fc.restarts != 1 {
		t.Errorf("%d router restarts", fc.restarts)
	}
}
