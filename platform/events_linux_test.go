package platform

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation/testfoundation"
)

// killInstance SIGKILLs the processes of the local foundation's instance guid (those
// whose environment has CF_INSTANCE_GUID=guid: the stub the test pushed), as a kill -9
// of an app's process would, and returns how many it killed.
func killInstance(t testing.TB, guid string) int {
	t.Helper()
	want := []byte("CF_INSTANCE_GUID=" + guid + "\x00")
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	n := 0
	for _, d := range dirs {
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(d))
		if err == nil && syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// TestInstanceEventsOfACrash: an instance of the stub killed with SIGKILL on the local
// foundation is restarted at once, and its crash is in the app's audit events (CC's
// audit.app.process.crash, also as app.crash) with its index, its guid then, the
// reason and the time; before it, and for other types, there are none.
func TestInstanceEventsOfACrash(t *testing.T) {
	t.Parallel()
	_, cl := testfoundation.Start(t)
	c := New(cl)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	app := testfoundation.PushStub(t, cl, testfoundation.StubZip(t), "apps", "crashy", 1)
	a, err := c.FindApp(ctx, spaceGUID(t, c, "apps"), "crashy")
	if err != nil || a == nil || a.GUID != app {
		t.Fatalf("find the app: %+v, %v", a, err)
	}
	if err := c.WaitRunning(ctx, a.ProcessGUID, 1, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	since := time.Now()
	if evs, err := c.InstanceEvents(ctx, []string{app}, nil, since); err != nil || len(evs) != 0 {
		t.Fatalf("events before the crash: %+v, %v; want none", evs, err)
	}
	stats, err := c.InstanceStats(ctx, a.ProcessGUID)
	if err != nil || len(stats) != 1 || stats[0].GUID == "" || stats[0].State != "RUNNING" {
		t.Fatalf("stats %+v, %v; want one running instance with a guid", stats, err)
	}
	before := stats[0]
	if n := killInstance(t, before.GUID); n == 0 {
		t.Fatalf("no process of instance %s found to kill", before.GUID)
	}
	killed := time.Now()
	var crashes []AuditEvent
	for deadline := time.Now().Add(time.Minute); len(crashes) == 0; {
		evs, err := c.InstanceEvents(ctx, []string{app}, nil, since)
		if err != nil {
			t.Fatal(err)
		}
		crashes = evs
		if len(crashes) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("no crash event a minute after the kill")
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	types := map[string]int{}
	for _, e := range crashes {
		types[e.Type]++
		if e.Type != EventProcessCrash && e.Type != EventAppCrash {
			t.Errorf("event %s, want only crashes", e.Type)
		}
		if e.AppGUID != app || e.AppName != "crashy" || e.Index != 0 || e.Instance != before.GUID || e.ExitDescription == "" || e.Reason != "CRASHED" {
			t.Errorf("crash event %+v: want app crashy, index 0, instance %s, a reason", e, before.GUID)
		}
		if at := e.At(); at.Before(since.Add(-time.Second)) || at.After(time.Now()) {
			t.Errorf("crash at %s, want between %s and now (killed at %s)", at, since, killed)
		}
	}
	if types[EventProcessCrash] != 1 {
		t.Errorf("crash events by type %v, want one %s", types, EventProcessCrash)
	}
	t.Logf("crash: %+v", crashes[0])
	if evs, err := c.InstanceEvents(ctx, []string{app}, []string{EventRescheduling}, since); err != nil || len(evs) != 0 {
		t.Errorf("rescheduling events %+v, %v; want none", evs, err)
	}
	if evs, err := c.InstanceEvents(ctx, []string{app}, nil, time.Now().Add(time.Hour)); err != nil || len(evs) != 0 {
		t.Errorf("events since an hour ahead %+v, %v; want none", evs, err)
	}
	// Restarted at once: a new instance guid.
	if err := c.WaitRunning(ctx, a.ProcessGUID, 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	if stats, err := c.InstanceStats(ctx, a.ProcessGUID); err != nil || len(stats) != 1 || stats[0].GUID == before.GUID {
		t.Errorf("stats after the restart %+v, %v; want a new instance guid", stats, err)
	}
}

func spaceGUID(t *testing.T, c *CF, name string) string {
	t.Helper()
	_, s, err := c.space(t.Context(), "cfbench", name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
