package engine

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/platform"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// fakeInstances answers the watcher with the events and stats a test sets.
type fakeInstances struct {
	events    []platform.AuditEvent
	forbidden bool
	stats     map[string][]platform.InstanceStat // by process guid
	reads     int
	lastSince time.Time // of the latest read of the events
}

func (f *fakeInstances) InstanceEvents(_ context.Context, apps, _ []string, since time.Time) ([]platform.AuditEvent, error) {
	f.reads++
	f.lastSince = since
	if f.forbidden {
		return nil, fmt.Errorf("list audit events: %w", platform.ErrEventsForbidden)
	}
	var out []platform.AuditEvent
	for _, e := range f.events {
		if !e.Created.Before(since.Truncate(time.Second)) {
			out = append(out, e)
		}
	}
	return out, nil
}

func (f *fakeInstances) InstanceStats(_ context.Context, process string) ([]platform.InstanceStat, error) {
	return f.stats[process], nil
}

var watched = []watchedApp{
	{Name: "stub-fast", GUID: "app-1", ProcessGUID: "proc-1", Role: InstanceRoleApp},
	{Name: "study-gen-fast", GUID: "gen-1", ProcessGUID: "proc-gen", Role: InstanceRoleGenerator},
	{Name: "study-tunnel", GUID: "tun-1", ProcessGUID: "proc-tun", Role: InstanceRoleTunnel},
	{Name: "study-relay", GUID: "rel-1", ProcessGUID: "proc-rel", Role: InstanceRoleRelay},
}

func crashEvent(guid, typ, app string, index int, desc string, at time.Time) platform.AuditEvent {
	return platform.AuditEvent{GUID: guid, Type: typ, AppGUID: app, Index: index, Instance: "inst-" + app, Reason: "CRASHED",
		ExitDescription: desc, CrashCount: 1, CrashTime: at, Created: at.Truncate(time.Second)}
}

// TestInstanceEventsLandAtTheirStep: each kind of event makes its own finding, at the
// step during which it happened (an event between two steps at the step after, one
// after the last step's end at none), with the instance, the reason and the time; a
// crash CC records under both its types makes one finding.
func TestInstanceEventsLandAtTheirStep(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 7, 15, 0, 0, 0, time.UTC)
	win := func(idx int) *stepWindow {
		s := t0.Add(time.Duration(idx) * 20 * time.Second)
		return &stepWindow{variant: "fast", idx: idx, start: s, end: s.Add(15 * time.Second)}
	}
	at := func(step int, into time.Duration) time.Time { return win(step).start.Add(into) }
	for _, tc := range []struct {
		name    string
		event   platform.AuditEvent
		check   string
		step    int // 0-based; -1: no finding
		parts   []string
		reason  string
		role    string
		index   int
		evGUIDs int // events in the list (a crash twice: both types)
	}{
		{"crash", crashEvent("e1", platform.EventProcessCrash, "app-1", 0, "APP/PROC/WEB: Exited with status 9", at(1, 4*time.Second)),
			InstanceCrashedCheck, 1, []string{"instance 0 of stub-fast (the app under test) crashed 4s into step 2 (15:00:24.000 UTC): APP/PROC/WEB: Exited with status 9 (crash 1 in a row)", "not the load's"},
			"APP/PROC/WEB: Exited with status 9", InstanceRoleApp, 0, 1},
		{"oom", crashEvent("e2", platform.EventProcessCrash, "app-1", 1, "APP/PROC/WEB: Exited with status 137 (out of memory)", at(0, 7*time.Second)),
			InstanceOOMCheck, 0, []string{"instance 1 of stub-fast (the app under test) was killed at its memory limit (out of memory) 7s into step 1", "Try: more memory"},
			"APP/PROC/WEB: Exited with status 137 (out of memory)", InstanceRoleApp, 1, 1},
		{"moved generator", platform.AuditEvent{GUID: "e3", Type: platform.EventRescheduling, AppGUID: "gen-1", Index: 2, Instance: "g2", Reason: "Cell is being evacuated",
			CellID: "cell-a", Created: at(2, 3*time.Second)},
			InstanceMovedCheck, 2, []string{"instance 2 of study-gen-fast (a generator app) was moved to another cell 3s into step 3", "Cell is being evacuated", "replacement joined the step"},
			"Cell is being evacuated", InstanceRoleGenerator, 2, 1},
		{"restarted tunnel", platform.AuditEvent{GUID: "e4", Type: platform.EventTerminateInstance, AppGUID: "tun-1", Index: 0, Created: at(0, 10*time.Second)},
			InstanceRestartedCheck, 0, []string{"instance 0 of study-tunnel (the tunnel app, the run's way to the results database) was restarted 10s into step 1", "through the Cloud Controller API"},
			"restarted through the Cloud Controller API (DELETE …/instances/:index)", InstanceRoleTunnel, 0, 1},
		{"relay crash between steps goes to the step after", crashEvent("e5", platform.EventAppCrash, "rel-1", 0, "exited with status 2", at(1, 17*time.Second)),
			InstanceCrashedCheck, 2, []string{"instance 0 of study-relay (the relay app, the generators' way to the results database) crashed 3s before step 3 started"},
			"exited with status 2", InstanceRoleRelay, 0, 1},
		{"after the last step: none", crashEvent("e6", platform.EventProcessCrash, "app-1", 0, "x", at(2, 30*time.Second)), "", -1, nil, "", "", 0, 1},
		{"not a watched app", crashEvent("e7", platform.EventProcessCrash, "other", 0, "x", at(1, time.Second)), "", -1, nil, "", "", 0, 1},
		{"both types of one crash: one finding", crashEvent("e8", platform.EventProcessCrash, "app-1", 0, "exited with status 1", at(1, 2*time.Second)),
			InstanceCrashedCheck, 1, []string{"crashed 2s into step 2"}, "exited with status 1", InstanceRoleApp, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := &fakeInstances{events: []platform.AuditEvent{tc.event}}
			if tc.evGUIDs == 2 {
				twin := tc.event
				twin.GUID, twin.Type = "twin", platform.EventAppCrash
				src.events = append(src.events, twin)
			}
			w := newInstanceWatcher(context.Background(), src, watched, t0, slog.New(slog.DiscardHandler))
			if note := w.note(); note != "" {
				t.Fatalf("note %q with events readable", note)
			}
			var found []struct {
				idx int
				f   *Finding
			}
			for i := range 3 {
				for _, p := range w.step(context.Background(), win(i)) {
					f := InstanceFinding(spec.CheckWarn, p.InstanceEvent, p.w.idx, p.w.start)
					found = append(found, struct {
						idx int
						f   *Finding
					}{p.w.idx, f})
				}
			}
			for _, p := range w.step(context.Background(), nil) { // the run's last look
				t.Errorf("after the last step: %+v", p)
			}
			// Later reads begin at the newest event read, not at the run's start.
			if !src.lastSince.Equal(tc.event.Created) {
				t.Errorf("the last read was of the events since %s, want since %s", src.lastSince, tc.event.Created)
			}
			if tc.step < 0 {
				if len(found) != 0 {
					t.Fatalf("findings %+v, want none", found)
				}
				return
			}
			if len(found) != 1 {
				t.Fatalf("%d findings, want 1", len(found))
			}
			if found[0].idx != tc.step {
				t.Errorf("at step %d, want %d", found[0].idx+1, tc.step+1)
			}
			f := found[0].f
			wantFinding(t, f, tc.check, spec.CheckWarn, tc.parts...)
			ev := f.Evidence
			if ev["app"] == "" || ev["role"] != tc.role || ev["index"] != tc.index || ev["reason"] != tc.reason || ev["at"] != tc.event.At().Format(time.RFC3339Nano) ||
				ev["instance_guid"] != tc.event.Instance || ev["source"] != tc.event.Type {
				t.Errorf("evidence %v", ev)
			}
		})
	}
}

// TestInstanceEventsOff: checks.instance_events: off records nothing.
func TestInstanceEventsOff(t *testing.T) {
	t.Parallel()
	ev := InstanceEvent{Check: InstanceCrashedCheck, App: "a", Role: InstanceRoleApp, At: time.Now()}
	if f := InstanceFinding(spec.CheckOff, ev, 0, time.Now()); f != nil {
		t.Fatalf("finding %+v with the check off", f)
	}
	// A role without words of its own is still said.
	ev.Role, ev.Index = "drain", -1
	wantFinding(t, InstanceFinding(spec.CheckWarn, ev, 0, ev.At), InstanceCrashedCheck, spec.CheckWarn, "an instance of a (an app of the run) crashed")
}

// TestInstanceEventsFromStatsWhenForbidden: a user who may not read audit events (403)
// gets the checks from process stats, told once; a restart between two reads shows as
// a new instance guid, an uptime reset or a state, a move as a new host; scaling
// (indexes new or gone, instances new since before the step) and a running instance
// tell nothing.
func TestInstanceEventsFromStatsWhenForbidden(t *testing.T) {
	t.Parallel()
	run := func(guid, host string, up time.Duration) platform.InstanceStat {
		return platform.InstanceStat{GUID: guid, State: "RUNNING", Host: host, Uptime: up}
	}
	for _, tc := range []struct {
		name       string
		before     []platform.InstanceStat
		after      []platform.InstanceStat
		check, has string
	}{
		{"running on", []platform.InstanceStat{run("g0", "h1", 10*time.Second)}, []platform.InstanceStat{run("g0", "h1", 10*time.Second+time.Hour)}, "", ""},
		{"new guid", []platform.InstanceStat{run("g0", "h1", time.Hour)}, []platform.InstanceStat{run("g1", "h1", time.Second)}, InstanceRestartedCheck, "new instance (guid g1"},
		{"new host", []platform.InstanceStat{run("g0", "h1", time.Hour)}, []platform.InstanceStat{run("g1", "h2", time.Second)}, InstanceMovedCheck, "another host (h2, was h1)"},
		{"uptime reset", []platform.InstanceStat{run("g0", "h1", time.Hour)}, []platform.InstanceStat{run("g0", "h1", 3*time.Second)}, InstanceRestartedCheck, "uptime reset"},
		{"starting", []platform.InstanceStat{run("g0", "h1", time.Hour)}, []platform.InstanceStat{{State: "STARTING"}}, InstanceRestartedCheck, "STARTING, RUNNING before"},
		{"crashed", []platform.InstanceStat{run("g0", "h1", time.Hour)}, []platform.InstanceStat{{State: "CRASHED"}}, InstanceCrashedCheck, "CRASHED"},
		{"scaled up", nil, []platform.InstanceStat{run("g0", "h1", time.Second)}, "", ""},
		// A repeat's generators scaled to 0 and up again before the step began.
		{"replaced before the step", []platform.InstanceStat{run("g0", "h1", time.Hour)}, []platform.InstanceStat{run("g1", "h1", 5*time.Minute)}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := &fakeInstances{forbidden: true, stats: map[string][]platform.InstanceStat{"proc-1": tc.before}}
			w := newInstanceWatcher(context.Background(), src, watched[:1], time.Now(), slog.New(slog.DiscardHandler))
			if note := w.note(); !strings.Contains(note, "403") || !strings.Contains(note, "process stats only") {
				t.Fatalf("note %q, want one saying the events are forbidden and stats stand in", note)
			}
			if again := w.note(); again != "" {
				t.Fatalf("said twice: %q", again)
			}
			src.stats["proc-1"] = tc.after
			now := time.Now()
			got := w.step(context.Background(), &stepWindow{variant: "fast", idx: 0, start: now.Add(-time.Minute), end: now.Add(time.Second)})
			if src.reads != 1 {
				t.Errorf("events read %d times, want once (then stats only)", src.reads)
			}
			if tc.check == "" {
				if len(got) != 0 {
					t.Fatalf("events %+v, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].Check != tc.check || !strings.Contains(got[0].Reason, tc.has) || got[0].Source != "process_stats" || got[0].InstanceGUID != tc.before[0].GUID {
				t.Fatalf("events %+v, want one %s saying %q", got, tc.check, tc.has)
			}
			f := InstanceFinding(spec.CheckWarn, got[0].InstanceEvent, 0, now.Add(-time.Minute))
			wantFinding(t, f, tc.check, spec.CheckWarn, "instance 0 of stub-fast", "Seen in process stats")
		})
	}
}
