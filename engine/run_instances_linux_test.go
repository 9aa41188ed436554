package engine

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/client"

	"github.com/cf-benchmark/cf-benchmark/foundation/testfoundation"
	"github.com/cf-benchmark/cf-benchmark/platform"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// killInstance SIGKILLs the processes of the local foundation's instance guid (those
// whose environment has CF_INSTANCE_GUID=guid: the stub the test pushed), as a kill -9
// of an app's process does, and returns how many it killed.
func killInstance(guid string) int {
	want := []byte("CF_INSTANCE_GUID=" + guid + "\x00")
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	n := 0
	for _, d := range dirs {
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil && syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// noEvents is a Cloud Controller whose user may not read audit events (403).
type noEvents struct{ *platform.CF }

func (noEvents) InstanceEvents(context.Context, []string, []string, time.Time) ([]platform.AuditEvent, error) {
	return nil, fmt.Errorf("list audit events: %w", platform.ErrEventsForbidden)
}

// TestInstanceChecksOnTheLocalFoundation: the watcher of a run's instances against the
// local foundation, over steps of a few seconds. A clean step trips no instance check;
// the app under test's instance killed (SIGKILL) in the middle of the next step, and
// restarted at once by the foundation, makes exactly one instance_crashed finding at
// that step, naming the instance, the reason and the time; a user who may not read
// audit events gets it from process stats, as a restart, told once.
func TestInstanceChecksOnTheLocalFoundation(t *testing.T) {
	t.Parallel()
	_, cl := testfoundation.Start(t)
	cf := platform.New(cl)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	testfoundation.PushStub(t, cl, testfoundation.StubZip(t), "apps", "stub-fast", 1)
	opts := client.NewSpaceListOptions()
	opts.Names.EqualTo("apps")
	space, err := cl.Spaces.Single(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	app, err := cf.FindApp(ctx, space.GUID, "stub-fast")
	if err != nil || app == nil {
		t.Fatalf("find the app: %v", err)
	}
	if err := cf.WaitRunning(ctx, app.ProcessGUID, 1, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	apps := []watchedApp{{Name: app.Name, GUID: app.GUID, ProcessGUID: app.ProcessGUID, Role: InstanceRoleApp}}
	log := slog.New(slog.DiscardHandler)
	events := newInstanceWatcher(ctx, cf, apps, time.Now(), log)
	if note := events.note(); note != "" {
		t.Fatalf("note %q, want none: the local foundation's user reads audit events", note)
	}
	stats := newInstanceWatcher(ctx, noEvents{cf}, apps, time.Now(), log)
	if note := stats.note(); !strings.Contains(note, "403") {
		t.Fatalf("note %q, want one saying the events are forbidden", note)
	}
	// step runs a step of d (its window from now), doing mid halfway, and returns
	// each watcher's findings once its window is over.
	step := func(idx int, d time.Duration, mid func()) (fromEvents, fromStats []*Finding) {
		win := &stepWindow{variant: "fast", idx: idx, start: time.Now(), end: time.Now().Add(d)}
		time.Sleep(d / 2)
		if mid != nil {
			mid()
		}
		time.Sleep(time.Until(win.end))
		// As the ramp does: once the step's samples are in, a little after its end.
		time.Sleep(time.Second)
		for _, w := range []struct {
			w   *instanceWatcher
			out *[]*Finding
		}{{events, &fromEvents}, {stats, &fromStats}} {
			for _, p := range w.w.step(ctx, win) {
				if p.w.idx != idx {
					t.Errorf("event %+v at step %d, want %d", p.InstanceEvent, p.w.idx+1, idx+1)
				}
				*w.out = append(*w.out, InstanceFinding(spec.CheckWarn, p.InstanceEvent, p.w.idx, p.w.start))
			}
		}
		return fromEvents, fromStats
	}

	a, b := step(0, 3*time.Second, nil)
	if len(a)+len(b) != 0 {
		t.Fatalf("a clean step: findings %+v %+v, want none", a, b)
	}

	st, err := cf.InstanceStats(ctx, app.ProcessGUID)
	if err != nil || len(st) != 1 || st[0].GUID == "" {
		t.Fatalf("stats %+v, %v", st, err)
	}
	victim := st[0].GUID
	var killedAt time.Time
	a, b = step(1, 6*time.Second, func() {
		killedAt = time.Now()
		if killInstance(victim) == 0 {
			t.Errorf("no process of instance %s to kill", victim)
		}
	})
	if len(a) != 1 {
		t.Fatalf("from the events: %d findings %+v, want 1", len(a), a)
	}
	f := a[0]
	wantFinding(t, f, InstanceCrashedCheck, spec.CheckWarn, "instance 0 of stub-fast (the app under test) crashed", "into step 2", "Exited with status 137")
	at, err := time.Parse(time.RFC3339Nano, f.Evidence["at"].(string))
	if f.Evidence["index"] != 0 || f.Evidence["instance_guid"] != victim || f.Evidence["role"] != InstanceRoleApp || err != nil ||
		at.Before(killedAt.Add(-time.Second)) || at.After(killedAt.Add(5*time.Second)) {
		t.Errorf("evidence %v (at %v), want index 0, instance %s, at the kill (%s)", f.Evidence, err, victim, killedAt.UTC())
	}
	t.Logf("from the events: %s", f.Message)
	if len(b) != 1 || b[0].Check != InstanceRestartedCheck || b[0].Evidence["instance_guid"] != victim || b[0].Evidence["source"] != "process_stats" {
		t.Fatalf("from the stats: %+v, want one instance_restarted of %s", b, victim)
	}
	t.Logf("from the stats: %s", b[0].Message)
	// The run's last look finds nothing more: the crash is counted once.
	for _, w := range []*instanceWatcher{events, stats} {
		if more := w.step(ctx, nil); len(more) != 0 {
			t.Errorf("after the last step: %+v", more)
		}
	}
}
