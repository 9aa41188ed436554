package cc

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// A deployment rolls the web process onto the droplet and reports ACTIVE/DEPLOYING
// until the roll ends, then FINALIZED/DEPLOYED; a newer one supersedes it; a cancel
// rolls back to the previous droplet and is FINALIZED/CANCELED at once, as CC's updater
// makes it without waiting for the previous droplet's instances to be healthy.
func TestDeploymentLifecycle(t *testing.T) {
	e := newEnv(t, t.TempDir())
	e.rt.holdRolls = true
	space := e.space("apps")
	app := e.push(space, "applications:\n- name: rolled\n  instances: 3\n  buildpacks: [binary_buildpack]\n  command: ./run\n")
	first := get(e.must(200, "GET", "/v3/apps/"+app+"/relationships/current_droplet", nil), "data", "guid").(string)
	second := e.stageAgain(app)
	body := func(droplet string, maxInFlight int) map[string]any {
		return map[string]any{"droplet": map[string]any{"guid": droplet}, "strategy": "rolling", "options": map[string]any{"max_in_flight": maxInFlight},
			"relationships": map[string]any{"app": map[string]any{"data": map[string]any{"guid": app}}}}
	}
	status := func(d string) string {
		got := e.must(200, "GET", "/v3/deployments/"+d, nil)
		return get(got, "status", "value").(string) + "/" + get(got, "status", "reason").(string) + " " + got["state"].(string)
	}
	roll := func(i int) fakeRoll {
		e.rt.mu.Lock()
		defer e.rt.mu.Unlock()
		if len(e.rt.rolls) <= i {
			t.Fatalf("%d rolls, want roll %d", len(e.rt.rolls), i+1)
		}
		return e.rt.rolls[i]
	}
	webDir := func(droplet string) string { return e.srv.dropletDir(droplet) + "/app" }

	d1 := e.must(201, "POST", "/v3/deployments", body(second, 2))
	g1 := d1["guid"].(string)
	if got := get(d1, "status", "value").(string) + "/" + get(d1, "status", "reason").(string); got != "ACTIVE/DEPLOYING" {
		t.Errorf("new deployment: %s", got)
	}
	if get(d1, "previous_droplet", "guid") != first || get(d1, "droplet", "guid") != second {
		t.Errorf("droplets: %v -> %v, want %s -> %s", get(d1, "previous_droplet", "guid"), get(d1, "droplet", "guid"), first, second)
	}
	if r := roll(0); r.maxInFlight != 2 || r.spec.Dir != webDir(second) || r.spec.Instances != 3 {
		t.Errorf("roll: max in flight %d, dir %s, instances %d", r.maxInFlight, r.spec.Dir, r.spec.Instances)
	}
	if cur := get(e.must(200, "GET", "/v3/apps/"+app+"/relationships/current_droplet", nil), "data", "guid"); cur != second {
		t.Errorf("current droplet %v, want the deployment's %s", cur, second)
	}
	if n := len(e.must(200, "GET", "/v3/deployments?app_guids="+app+"&status_values=ACTIVE", nil)["resources"].([]any)); n != 1 {
		t.Errorf("%d active deployments, want 1", n)
	}
	roll(0).done(nil)
	if got := status(g1); got != "FINALIZED/DEPLOYED DEPLOYED" {
		t.Errorf("after its roll: %s", got)
	}

	// A second deployment supersedes a third's predecessor; its cancel rolls back.
	g2 := e.must(201, "POST", "/v3/deployments", body(first, 1))["guid"].(string)
	g3 := e.must(201, "POST", "/v3/deployments", body(second, 1))["guid"].(string)
	if got := status(g2); got != "FINALIZED/SUPERSEDED DEPLOYED" {
		t.Errorf("superseded: %s", got)
	}
	roll(1).done(errors.New("superseded")) // g2's roll, taken over by g3's: changes nothing
	if got := status(g2); got != "FINALIZED/SUPERSEDED DEPLOYED" {
		t.Errorf("superseded, after its roll ended: %s", got)
	}
	e.must(200, "POST", "/v3/deployments/"+g3+"/actions/cancel", nil)
	if got := status(g3); got != "FINALIZED/CANCELED CANCELED" {
		t.Errorf("cancelled: %s", got)
	}
	if r := roll(3); r.spec.Dir != webDir(first) {
		t.Errorf("roll back to %s, want the previous droplet's %s", r.spec.Dir, webDir(first))
	}
	if cur := get(e.must(200, "GET", "/v3/apps/"+app+"/relationships/current_droplet", nil), "data", "guid"); cur != first {
		t.Errorf("current droplet after cancel %v, want the previous %s", cur, first)
	}
	roll(2).done(errors.New("superseded")) // the forward roll, taken over by the roll back
	roll(3).done(errors.New("never healthy"))
	if got := status(g3); got != "FINALIZED/CANCELED CANCELED" {
		t.Errorf("after the forward roll and the roll back ended: %s", got)
	}
	if _, b, _ := e.do("POST", "/v3/deployments/"+g3+"/actions/cancel", nil); !strings.Contains(errDetail(b), "Cannot cancel a deployment with status: FINALIZED") {
		t.Errorf("second cancel: %v", b)
	}
	if _, b, _ := e.do("POST", "/v3/deployments/"+g3+"/actions/continue", nil); !strings.Contains(errDetail(b), "Cannot continue a deployment") {
		t.Errorf("continue: %v", b)
	}
	events := e.must(200, "GET", "/v3/audit_events?target_guids="+app+"&types=audit.app.deployment.create,audit.app.deployment.cancel", nil)
	if n := len(events["resources"].([]any)); n != 4 {
		t.Errorf("%d deployment audit events, want 3 creates and 1 cancel", n)
	}

	// A stopped app is started on the droplet, its deployment DEPLOYED at once.
	e.must(200, "POST", "/v3/apps/"+app+"/actions/stop", nil)
	rolls := len(e.rt.rolls)
	g4 := e.must(201, "POST", "/v3/deployments", body(second, 1))
	if got := get(g4, "status", "value").(string) + "/" + get(g4, "status", "reason").(string); got != "FINALIZED/DEPLOYED" {
		t.Errorf("deployment of a stopped app: %s", got)
	}
	if st := e.must(200, "GET", "/v3/apps/"+app, nil)["state"]; st != "STARTED" || len(e.rt.rolls) != rolls {
		t.Errorf("stopped app after a deployment: %v, %d new rolls", st, len(e.rt.rolls)-rolls)
	}

	for _, bad := range []map[string]any{
		{"relationships": map[string]any{"app": map[string]any{"data": map[string]any{"guid": "nope"}}}},
		{"strategy": "blue-green", "relationships": map[string]any{"app": map[string]any{"data": map[string]any{"guid": app}}}},
		{"options": map[string]any{"max_in_flight": 0}, "relationships": map[string]any{"app": map[string]any{"data": map[string]any{"guid": app}}}},
		{"revision": map[string]any{"guid": "r"}, "relationships": map[string]any{"app": map[string]any{"data": map[string]any{"guid": app}}}},
		{"droplet": map[string]any{"guid": "nope"}, "relationships": map[string]any{"app": map[string]any{"data": map[string]any{"guid": app}}}},
	} {
		if code, b, _ := e.do("POST", "/v3/deployments", bad); code != 422 {
			t.Errorf("POST /v3/deployments %v = %d %v, want 422", bad, code, b)
		}
	}
	e.must(404, "GET", "/v3/deployments/nope", nil)

	// A restarted foundation finds nothing ACTIVE.
	g5 := e.must(201, "POST", "/v3/deployments", body(first, 1))["guid"].(string)
	e.srv.Reconcile()
	if got := status(g5); got != "FINALIZED/DEPLOYED DEPLOYED" {
		t.Errorf("after Reconcile: %s", got)
	}
}

// A canary deployment replaces its first step's instances and pauses; each continue
// takes it a step further, and the one after its last step replaces the rest and
// deploys it. A paused canary can be cancelled, which rolls every instance back.
func TestCanaryDeployment(t *testing.T) {
	e := newEnv(t, t.TempDir())
	e.rt.holdRolls = true
	space := e.space("apps")
	app := e.push(space, "applications:\n- name: canary\n  instances: 10\n  buildpacks: [binary_buildpack]\n  command: ./run\n")
	first := get(e.must(200, "GET", "/v3/apps/"+app+"/relationships/current_droplet", nil), "data", "guid").(string)
	second := e.stageAgain(app)
	body := func(droplet string, weights ...int) map[string]any {
		opts := map[string]any{"max_in_flight": 2}
		if len(weights) > 0 {
			var steps []any
			for _, w := range weights {
				steps = append(steps, map[string]any{"instance_weight": w})
			}
			opts["canary"] = map[string]any{"steps": steps}
		}
		return map[string]any{"droplet": map[string]any{"guid": droplet}, "strategy": "canary", "options": opts,
			"relationships": map[string]any{"app": map[string]any{"data": map[string]any{"guid": app}}}}
	}
	status := func(d string) string {
		got := e.must(200, "GET", "/v3/deployments/"+d, nil)
		s := get(got, "status", "value").(string) + "/" + get(got, "status", "reason").(string)
		if c, ok := get(got, "status", "canary", "steps").(map[string]any); ok {
			s += fmt.Sprintf(" step %v/%v", c["current"], c["total"])
		}
		if _, ok := get(got, "links").(map[string]any)["continue"]; ok {
			s += " continuable"
		}
		return s
	}
	lastRoll := func() string {
		e.rt.mu.Lock()
		defer e.rt.mu.Unlock()
		r := e.rt.rolls[len(e.rt.rolls)-1]
		go r.done(nil)
		return fmt.Sprintf("%d-%d", r.from, r.to)
	}
	waitStatus := func(d, want string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); status(d) != want; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("deployment status %q, want %q", status(d), want)
			}
		}
	}

	g := e.must(201, "POST", "/v3/deployments", body(second, 20, 50))["guid"].(string)
	if got := status(g); got != "ACTIVE/DEPLOYING step 1/2" {
		t.Errorf("new canary deployment: %s", got)
	}
	for i, want := range []struct{ roll, after string }{
		{"0-2", "ACTIVE/PAUSED step 1/2 continuable"}, // 20% of 10
		{"2-5", "ACTIVE/PAUSED step 2/2 continuable"}, // 50%: three more
		{"5-10", "FINALIZED/DEPLOYED step 2/2"},       // the rest
	} {
		if i > 0 {
			e.must(200, "POST", "/v3/deployments/"+g+"/actions/continue", nil)
			if got := status(g); !strings.HasPrefix(got, "ACTIVE/DEPLOYING") {
				t.Errorf("continued to step %d: %s", i+1, got)
			}
		}
		if got := lastRoll(); got != want.roll {
			t.Errorf("step %d rolled indexes %s, want %s", i+1, got, want.roll)
		}
		waitStatus(g, want.after)
	}
	if _, b, _ := e.do("POST", "/v3/deployments/"+g+"/actions/continue", nil); !strings.Contains(errDetail(b), "Cannot continue a deployment with status: FINALIZED and reason: DEPLOYED") {
		t.Errorf("continue of a deployed canary: %v", b)
	}

	// Without steps: one canary instance; a cancel while paused rolls all back.
	g2 := e.must(201, "POST", "/v3/deployments", body(first))["guid"].(string)
	if got := lastRoll(); got != "0-1" {
		t.Errorf("a canary without steps rolled indexes %s, want 0-1", got)
	}
	waitStatus(g2, "ACTIVE/PAUSED step 1/1 continuable")
	e.must(200, "POST", "/v3/deployments/"+g2+"/actions/cancel", nil)
	if got := lastRoll(); got != "0-10" {
		t.Errorf("cancel rolled indexes %s, want 0-10", got)
	}
	waitStatus(g2, "FINALIZED/CANCELED step 1/1")
	if cur := get(e.must(200, "GET", "/v3/apps/"+app+"/relationships/current_droplet", nil), "data", "guid"); cur != second {
		t.Errorf("current droplet after the cancelled canary %v, want %s", cur, second)
	}
	events := e.must(200, "GET", "/v3/audit_events?target_guids="+app+"&types=audit.app.deployment.continue", nil)
	if n := len(events["resources"].([]any)); n != 2 {
		t.Errorf("%d continue audit events, want 2", n)
	}

	for name, steps := range map[string][]any{
		"descending": {map[string]any{"instance_weight": 50}, map[string]any{"instance_weight": 10}},
		"over 100":   {map[string]any{"instance_weight": 101}},
		"no weight":  {map[string]any{}},
	} {
		b := body(second)
		b["options"] = map[string]any{"canary": map[string]any{"steps": steps}}
		if code, got, _ := e.do("POST", "/v3/deployments", b); code != 422 {
			t.Errorf("canary steps %s: %d %v, want 422", name, code, got)
		}
	}
	rolling := body(second, 10)
	rolling["strategy"] = "rolling"
	if _, got, _ := e.do("POST", "/v3/deployments", rolling); errDetail(got) != "Options canary are only valid for Canary deployments" {
		t.Errorf("canary steps on a rolling deployment: %v", got)
	}
}

func errDetail(b map[string]any) string {
	errs, _ := b["errors"].([]any)
	if len(errs) == 0 {
		return ""
	}
	d, _ := errs[0].(map[string]any)["detail"].(string)
	return d
}

// stageAgain uploads a new package of the app and stages it, returning the droplet.
func (e *env) stageAgain(app string) string {
	e.t.Helper()
	pkg := e.must(201, "POST", "/v3/packages", map[string]any{"type": "bits", "relationships": map[string]any{"app": map[string]any{"data": map[string]any{"guid": app}}}})["guid"].(string)
	body, ctype := zipUpload(e.t)
	e.upload("/v3/packages/"+pkg+"/upload", body, ctype)
	build := e.must(201, "POST", "/v3/builds", map[string]any{"package": map[string]any{"guid": pkg}})["guid"].(string)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b := e.must(200, "GET", "/v3/builds/"+build, nil)
		if b["state"] == "STAGED" {
			return get(b, "droplet", "guid").(string)
		}
		if b["state"] == "FAILED" || time.Now().After(deadline) {
			e.t.Fatalf("build state %v", b["state"])
		}
	}
}
