package cc

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
)

// Terminate records the restart; an instance beyond the desired ones is not there.
func (f *fakeRuntime) Terminate(guid string, index int) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if index >= f.specs[guid].Instances {
		return "", errors.New("no such instance")
	}
	f.terminated = append(f.terminated, fmt.Sprintf("%s/%d", guid, index))
	return newGUID(), nil
}

// TestTerminateInstance: DELETE …/instances/:index of a process (by guid, or by app
// and type) restarts that instance and records audit.app.process.terminate_instance,
// as CC; an index out of range, or an unknown app or process, is CC's 404.
func TestTerminateInstance(t *testing.T) {
	t.Parallel()
	e := newEnv(t, t.TempDir())
	app := e.push(e.space("apps"), "applications:\n- name: three\n  instances: 3\n  no-route: true\n")
	for _, tt := range []struct {
		path   string
		status int
		detail string
	}{
		{"/v3/processes/" + app + "/instances/1", http.StatusNoContent, ""},
		{"/v3/apps/" + app + "/processes/web/instances/2", http.StatusNoContent, ""},
		{"/v3/processes/" + app + "/instances/3", http.StatusNotFound, "Instance not found"},
		{"/v3/processes/" + app + "/instances/-1", http.StatusNotFound, "Instance not found"},
		{"/v3/apps/" + app + "/processes/worker/instances/0", http.StatusNotFound, "Process not found"},
		{"/v3/apps/no-such-app/processes/web/instances/0", http.StatusNotFound, "App not found"},
		{"/v3/processes/no-such-process/instances/0", http.StatusNotFound, "Process not found"},
	} {
		t.Run(tt.path, func(t *testing.T) {
			code, out, _ := e.do("DELETE", tt.path, nil)
			if code != tt.status {
				t.Fatalf("%d %v, want %d", code, out, tt.status)
			}
			if tt.detail != "" {
				if err := out["errors"].([]any)[0]; get(err, "detail") != tt.detail || get(err, "title") != "CF-ResourceNotFound" || get(err, "code") != float64(10010) {
					t.Errorf("error %v, want CF-ResourceNotFound %q", err, tt.detail)
				}
			}
		})
	}
	e.rt.mu.Lock()
	got := slices.Clone(e.rt.terminated)
	e.rt.mu.Unlock()
	if want := []string{app + "/1", app + "/2"}; !slices.Equal(got, want) {
		t.Errorf("instances restarted %v, want %v", got, want)
	}
	events := e.must(200, "GET", "/v3/audit_events?types=audit.app.process.terminate_instance&target_guids="+app, nil)["resources"].([]any)
	if len(events) != 2 {
		t.Fatalf("%d terminate_instance events, want 2: %v", len(events), events)
	}
	data := get(events[0], "data").(map[string]any)
	if data["process_guid"] != app || data["process_type"] != "web" || data["process_index"] != float64(1) || len(data) != 3 {
		t.Errorf("event data %v, want process_guid, process_type web, process_index 1", data)
	}

	// A stopped app's instance: CC records the event and answers 204; nothing runs.
	e.must(200, "POST", "/v3/apps/"+app+"/actions/stop", nil)
	if code, out, _ := e.do("DELETE", "/v3/processes/"+app+"/instances/0", nil); code != http.StatusNoContent {
		t.Errorf("an instance of a stopped app: %d %v, want 204", code, out)
	}
}

// TestRubyToI: the index reads as CC's params[:index].to_i reads it.
func TestRubyToI(t *testing.T) {
	for in, want := range map[string]int{"0": 0, "2": 2, "12": 12, "-1": -1, "+3": 3, "abc": 0, "": 0, "1abc": 1} {
		if got := rubyToI(in); got != want {
			t.Errorf("rubyToI(%q) = %d, want %d", in, got, want)
		}
	}
	if got := rubyToI("99999999999999999999"); got < 1<<30 {
		t.Errorf("rubyToI of a huge index = %d, want one out of any process's range", got)
	}
}
