package cc

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAuditEventsAndAppLog: what cf events and cf logs show of an app's life — the
// events CC records, the app's creation, staging output as STG lines, and a crash's
// reason.
func TestAuditEventsAndAppLog(t *testing.T) {
	e := newEnv(t, t.TempDir())
	var (
		mu    sync.Mutex
		lines []string
	)
	e.srv.cfg.AppLog = func(app, sourceType, instance, line string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf("%s/%s %s", sourceType, instance, line))
	}
	space := e.space("apps")
	app := e.push(space, "applications:\n- name: web\n")
	e.must(202, "POST", "/v3/apps/"+app+"/processes/web/actions/scale", map[string]any{"instances": 2})
	proc := first(e.must(200, "GET", "/v3/apps/"+app+"/processes?types=web", nil))["guid"].(string)
	e.srv.InstanceCrashed(proc, 1, "inst-1", "apps", "APP/PROC/WEB: Exited with status 3", 1, time.Unix(100, 0))
	e.must(200, "POST", "/v3/apps/"+app+"/actions/stop", nil)

	events := e.must(200, "GET", "/v3/audit_events?target_guids="+app+"&order_by=-created_at", nil)["resources"].([]any)
	var types []string
	for _, ev := range events {
		types = append(types, ev.(map[string]any)["type"].(string))
	}
	want := []string{"audit.app.stop", "audit.app.process.crash", "app.crash", "audit.app.process.scale", "audit.app.start", "audit.app.droplet.mapped",
		"audit.app.build.create", "audit.app.upload-bits", "audit.app.apply_manifest", "audit.app.create"}
	if !slices.Equal(types, want) {
		t.Errorf("events, newest first:\n got  %v\n want %v", types, want)
	}
	crash := events[1].(map[string]any)
	if get(crash, "data", "exit_description") != "APP/PROC/WEB: Exited with status 3" || get(crash, "data", "index") != float64(1) ||
		get(crash, "data", "cell_id") != "apps" || get(crash, "data", "process_type") != "web" || get(crash, "target", "name") != "web" {
		t.Errorf("crash event %v", crash)
	}
	if appCrash := events[2].(map[string]any); fmt.Sprint(appCrash["data"]) != fmt.Sprint(crash["data"]) {
		t.Errorf("app.crash data %v, audit.app.process.crash data %v", appCrash["data"], crash["data"])
	}
	if n := len(e.must(200, "GET", "/v3/audit_events?types=audit.app.process.crash", nil)["resources"].([]any)); n != 1 {
		t.Errorf("types filter: %d crash events, want 1", n)
	}
	guid := crash["guid"].(string)
	if got := e.must(200, "GET", "/v3/audit_events/"+guid, nil)["type"]; got != "audit.app.process.crash" {
		t.Errorf("GET /v3/audit_events/%s: type %v", guid, got)
	}

	mu.Lock()
	defer mu.Unlock()
	var stg, api, created bool
	for _, l := range lines {
		created = created || l == "API/0 Created app with guid "+app
		stg = stg || l == "STG/0 -----> fake staging"
		api = api || strings.HasPrefix(l, "API/0 ") && strings.Contains(l, `"exit_description"=>"APP/PROC/WEB: Exited with status 3"`)
	}
	if !stg {
		t.Errorf("app log has no STG line of the staging output: %q", lines)
	}
	if !api {
		t.Errorf("app log has no API line with the crash's reason: %q", lines)
	}
	if !created {
		t.Errorf("app log has no API line of the app's creation (as CC writes it): %q", lines)
	}
}

// TestAuditEventsAreBounded: the oldest events go once there are maxAuditEvents.
func TestAuditEventsAreBounded(t *testing.T) {
	st := newState()
	a := &App{GUID: "a", Name: "a"}
	for i := 0; i < maxAuditEvents+10; i++ {
		st.audit(fmt.Sprint("e", i), a, nil)
	}
	if len(st.AuditEvents) != maxAuditEvents || st.AuditEvents[0].Type != "e10" {
		t.Errorf("%d events, oldest %s; want %d, oldest e10", len(st.AuditEvents), st.AuditEvents[0].Type, maxAuditEvents)
	}
}

func TestLineWriter(t *testing.T) {
	var got []string
	w := &lineWriter{emit: func(l string) { got = append(got, l) }}
	fmt.Fprint(w, "one\r\ntw")
	fmt.Fprint(w, "o\nthree")
	w.Close()
	if want := []string{"one", "two", "three"}; !slices.Equal(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
}
