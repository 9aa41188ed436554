//go:build linux

package cells

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func crashEvents(e *env, guid string) []Event {
	var out []Event
	for _, ev := range e.events.of(guid, 0) {
		if ev.State == StateCrashed {
			out = append(out, ev)
		}
	}
	return out
}

func TestCrashAndOOMOnDemand(t *testing.T) {
	t.Parallel()
	e := startCells(t, nil)
	e.c.Desire(fixtureSpec("p-chaos", 1, nil))
	eventually(t, 10*time.Second, "running", allRunning(e.c, "p-chaos", 1))
	first := e.c.Instances("p-chaos")[0]

	hit, err := e.c.Crash("p-chaos", 0)
	if err != nil {
		t.Fatal(err)
	}
	if hit.InstanceGUID != first.GUID || hit.Cell != first.Cell || hit.ProcessType != "web" || hit.AppGUID != "app-p-chaos" {
		t.Errorf("hit %+v, instance %+v", hit, first)
	}
	eventually(t, 10*time.Second, "a crash and a restart", func() bool {
		return len(crashEvents(e, "p-chaos")) == 1 && allRunning(e.c, "p-chaos", 1)()
	})
	crash := crashEvents(e, "p-chaos")[0]
	if crash.Details != "APP/PROC/WEB: Exited with status 137" || crash.InstanceGUID != first.GUID || crash.Crashes != 1 {
		t.Errorf("crash event %+v", crash)
	}
	second := e.c.Instances("p-chaos")[0]
	if second.GUID == first.GUID || second.GUID == "" {
		t.Errorf("restarted instance guid %q, first %q", second.GUID, first.GUID)
	}

	if _, err := e.c.OOM("p-chaos", 0); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "an OOM kill and a restart", func() bool {
		return len(crashEvents(e, "p-chaos")) == 2 && allRunning(e.c, "p-chaos", 1)()
	})
	oom := crashEvents(e, "p-chaos")[1]
	if oom.Details != "APP/PROC/WEB: Exited with status 137 (out of memory)" || oom.InstanceGUID != second.GUID || oom.Crashes != 2 {
		t.Errorf("oom event %+v", oom)
	}

	for _, c := range []struct {
		guid  string
		index int
	}{{"p-none", 0}, {"p-chaos", 1}} {
		if _, err := e.c.Crash(c.guid, c.index); !errors.Is(err, ErrNoInstance) {
			t.Errorf("Crash(%s, %d) = %v, want ErrNoInstance", c.guid, c.index, err)
		}
	}
}

func TestCrashClearsGUIDAndHost(t *testing.T) {
	t.Parallel()
	// A long backoff keeps the instance CRASHED long enough to look at it.
	e := startCells(t, func(c *Config) { c.RestartBackoff, c.MaxRestartBackoff = time.Minute, time.Minute })
	e.c.Desire(fixtureSpec("p-loop", 1, map[string]string{"CRASH_AFTER": "10ms"}))
	eventually(t, 15*time.Second, "3 crashes", func() bool { return len(crashEvents(e, "p-loop")) >= 3 })
	in := e.c.Instances("p-loop")[0]
	if in.State != StateCrashed || in.GUID != "" || in.Host != "" || in.CellAddr != "" || in.Port != 0 {
		t.Errorf("crashed instance %+v: want no guid, host or port", in)
	}
	for _, ev := range crashEvents(e, "p-loop") {
		if ev.InstanceGUID == "" {
			t.Errorf("crash event without the instance's guid: %+v", ev)
		}
	}
}

func TestEvacuate(t *testing.T) {
	t.Parallel()
	e := startCells(t, nil)
	e.c.Desire(fixtureSpec("p-evac", 2, nil))
	eventually(t, 10*time.Second, "running", allRunning(e.c, "p-evac", 2))
	before := e.c.Instances("p-evac")

	if _, err := e.c.Evacuate("nowhere"); !errors.Is(err, ErrNoCell) {
		t.Fatalf("Evacuate(nowhere) = %v, want ErrNoCell", err)
	}
	hits, err := e.c.Evacuate(before[0].Cell)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 2 || hits[0].InstanceGUID != before[0].GUID || hits[1].InstanceGUID != before[1].GUID {
		t.Fatalf("hits %+v, instances %+v", hits, before)
	}
	// Until its replacement runs, each old instance keeps serving: every index has an
	// instance serving throughout.
	eventually(t, 10*time.Second, "the replacements in place", func() bool {
		serving := e.c.Serving("p-evac")
		var guids []string
		for i := range 2 {
			if !slices.ContainsFunc(serving, func(in Instance) bool { return in.Index == i }) {
				t.Fatalf("index %d has no instance serving: %+v", i, serving)
			}
		}
		for _, in := range serving {
			guids = append(guids, in.GUID)
		}
		now := e.c.Instances("p-evac")
		return len(now) == 2 && now[0].State == StateRunning && now[1].State == StateRunning &&
			now[0].GUID != before[0].GUID && now[1].GUID != before[1].GUID && len(serving) == 2 &&
			!slices.Contains(guids, before[0].GUID) && !slices.Contains(guids, before[1].GUID)
	})
	after := e.c.Instances("p-evac")
	for i := range after {
		if after[i].Port == before[i].Port {
			t.Errorf("index %d kept port %d", i, after[i].Port)
		}
	}
	eventually(t, 5*time.Second, "the old processes gone", func() bool { return gone(before[0].PID)() && gone(before[1].PID)() })
	for _, ev := range e.events.of("p-evac", 0) {
		if ev.State == StateCrashed {
			t.Errorf("crash during the evacuation: %+v", ev)
		}
	}
}

// TestEvacuateThenRemove: while a replacement starts, process stats show it and the
// old instance alone serves; removing the process stops both.
func TestEvacuateThenRemove(t *testing.T) {
	t.Parallel()
	e := startCells(t, nil)
	e.c.Desire(fixtureSpec("p-evrm", 1, map[string]string{"READY_AFTER": "1s"}))
	eventually(t, 15*time.Second, "running", allRunning(e.c, "p-evrm", 1))
	old := e.c.Instances("p-evrm")[0]
	if _, err := e.c.Evacuate(old.Cell); err != nil {
		t.Fatal(err)
	}
	// Serving first: if the stats still show the replacement starting after it, the
	// old instance had not been swapped out when Serving looked.
	serving, shown := e.c.Serving("p-evrm"), e.c.Instances("p-evrm")
	if shown[0].GUID == old.GUID {
		t.Errorf("process stats during the evacuation show the old instance %s", old.GUID)
	}
	if shown[0].State == StateStarting && (len(serving) != 1 || serving[0].GUID != old.GUID) {
		t.Errorf("while the replacement starts, serving %+v, want the old instance %s", serving, old.GUID)
	}
	e.c.Remove("p-evrm")
	eventually(t, 10*time.Second, "the old process gone", gone(old.PID))
	if got := e.c.Serving("p-evrm"); len(got) != 0 {
		t.Errorf("serving after Remove: %+v", got)
	}
	if err := e.c.Close(); err != nil {
		t.Fatal(err)
	}
}
