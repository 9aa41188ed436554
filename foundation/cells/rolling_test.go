//go:build linux

package cells

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// A roll replaces every instance with one of the new spec while each index keeps a
// RUNNING instance throughout, so the router always has every index to send to.
func TestRollKeepsEveryIndexRunning(t *testing.T) {
	t.Parallel()
	e := startCells(t, nil)
	const n = 3
	e.c.Desire(fixtureSpec("p-roll", n, map[string]string{"V": "1"}))
	eventually(t, 20*time.Second, "3 running instances", allRunning(e.c, "p-roll", n))
	before := map[string]bool{}
	for _, in := range e.c.Instances("p-roll") {
		before[in.GUID] = true
	}

	r := e.c.Roll(fixtureSpec("p-roll", n, map[string]string{"V": "2"}), 1)
	polls := 0
	for done := false; !done; polls++ {
		select {
		case <-r.Done():
			done = true
		case <-time.After(60 * time.Second):
			t.Fatal("the roll did not end within 60s")
		default:
			time.Sleep(2 * time.Millisecond)
		}
		insts := e.c.Instances("p-roll")
		if len(insts) != n {
			t.Fatalf("poll %d: %d instances, want %d: %+v", polls, len(insts), n, insts)
		}
		for _, in := range insts {
			if in.State != StateRunning {
				t.Fatalf("poll %d: index %d is %s during the roll", polls, in.Index, in.State)
			}
		}
	}
	if err := r.Err(); err != nil {
		t.Fatalf("roll: %v", err)
	}
	for _, in := range e.c.Instances("p-roll") {
		if before[in.GUID] {
			t.Errorf("index %d still runs its old instance %s", in.Index, in.GUID)
		}
		if v := getEnv(t, in)["V"]; v != "2" {
			t.Errorf("index %d runs V=%q, want 2", in.Index, v)
		}
	}
	// Every old instance is stopped (DOWN; the last one after the roll ends), none crashed.
	oldDown := func() (down, crashed int) {
		for i := range n {
			for _, ev := range e.events.of("p-roll", i) {
				switch {
				case before[ev.InstanceGUID] && ev.State == StateDown:
					down++
				case ev.State == StateCrashed:
					crashed++
				}
			}
		}
		return down, crashed
	}
	eventually(t, 20*time.Second, "every old instance to stop", func() bool { d, _ := oldDown(); return d == n })
	if _, crashed := oldDown(); crashed != 0 {
		t.Errorf("%d crashes during the roll", crashed)
	}
	// A roll to the spec that already runs restarts every instance all the same, as a
	// rolling restart must.
	rolled := map[string]bool{}
	for _, in := range e.c.Instances("p-roll") {
		rolled[in.GUID] = true
	}
	if err := e.c.Roll(fixtureSpec("p-roll", n, map[string]string{"V": "2"}), n).Err(); err != nil {
		t.Errorf("a rolling restart: %v", err)
	}
	for _, in := range e.c.Instances("p-roll") {
		if rolled[in.GUID] || in.State != StateRunning {
			t.Errorf("after a rolling restart index %d is %s %s", in.Index, in.GUID, in.State)
		}
	}
}

// A roll whose new instances never become healthy leaves the old ones serving until
// something supersedes it; a Desire does, and stops the instances the roll started.
func TestRollSupersededKeepsOldInstances(t *testing.T) {
	t.Parallel()
	e := startCells(t, nil)
	old := fixtureSpec("p-stuck", 2, map[string]string{"V": "1"})
	e.c.Desire(old)
	eventually(t, 20*time.Second, "2 running instances", allRunning(e.c, "p-stuck", 2))
	guids := func() []string {
		var g []string
		for _, in := range e.c.Instances("p-stuck") {
			g = append(g, in.GUID)
		}
		return g
	}
	before := guids()

	r := e.c.Roll(fixtureSpec("p-stuck", 2, map[string]string{"V": "2", "NO_LISTEN": "1"}), 2)
	// Two new instances start (max in flight 2) and never pass the port check.
	eventually(t, 20*time.Second, "the roll's two instances to start", func() bool {
		starting := 0
		for _, ev := range e.events.of("p-stuck", 0) {
			if ev.State == StateStarting && !slices.Contains(before, ev.InstanceGUID) {
				starting++
			}
		}
		return starting > 0
	})
	time.Sleep(300 * time.Millisecond)
	select {
	case <-r.Done():
		t.Fatalf("the roll ended (%v) though its instances never became healthy", r.Err())
	default:
	}
	if got := guids(); !slices.Equal(got, before) || !allRunning(e.c, "p-stuck", 2)() {
		t.Errorf("during a stuck roll the instances are %v (%+v), want the old %v running", got, e.c.Instances("p-stuck"), before)
	}

	e.c.Desire(old)
	if err := r.Err(); !errors.Is(err, ErrSuperseded) {
		t.Errorf("superseded roll: err = %v, want ErrSuperseded", err)
	}
	// The old instances run the desired spec again: nothing restarts; the roll's
	// instances are stopped.
	eventually(t, 20*time.Second, "the roll's instances to stop", func() bool {
		stopped := map[string]bool{}
		for i := range 2 {
			for _, ev := range e.events.of("p-stuck", i) {
				if !slices.Contains(before, ev.InstanceGUID) && ev.State == StateDown {
					stopped[ev.InstanceGUID] = true
				}
			}
		}
		return len(stopped) == 2
	})
	if got := guids(); !slices.Equal(got, before) {
		t.Errorf("after the superseding Desire the instances are %v, want the old %v", got, before)
	}
}

// A canary step replaces only the indexes it names; the next step carries the roll on
// from there without restarting the instances already replaced.
func TestRollIndexesReplacesOnlyItsIndexes(t *testing.T) {
	t.Parallel()
	e := startCells(t, nil)
	const n = 3
	e.c.Desire(fixtureSpec("p-canary", n, map[string]string{"V": "1"}))
	eventually(t, 20*time.Second, "3 running instances", allRunning(e.c, "p-canary", n))
	guids := func() []string {
		var g []string
		for _, in := range e.c.Instances("p-canary") {
			g = append(g, in.GUID)
		}
		return g
	}
	versions := func() []string {
		var v []string
		for _, in := range e.c.Instances("p-canary") {
			v = append(v, getEnv(t, in)["V"])
		}
		return v
	}
	before := guids()
	next := fixtureSpec("p-canary", n, map[string]string{"V": "2"})
	if err := e.c.RollIndexes(next, 1, 0, 1).Err(); err != nil {
		t.Fatalf("canary step: %v", err)
	}
	step1 := guids()
	if got := versions(); !slices.Equal(got, []string{"2", "1", "1"}) {
		t.Errorf("after the canary step the instances run V=%v, want [2 1 1]", got)
	}
	if step1[0] == before[0] || step1[1] != before[1] || step1[2] != before[2] {
		t.Errorf("canary step: instances %v, were %v: want only index 0 replaced", step1, before)
	}
	if err := e.c.RollIndexes(next, 2, 1, n).Err(); err != nil {
		t.Fatalf("the rest: %v", err)
	}
	if got := versions(); !slices.Equal(got, []string{"2", "2", "2"}) {
		t.Errorf("after the rest the instances run V=%v, want [2 2 2]", got)
	}
	if got := guids(); got[0] != step1[0] || got[1] == step1[1] || got[2] == step1[2] {
		t.Errorf("the rest: instances %v, were %v: want indexes 1 and 2 replaced, the canary kept", got, step1)
	}
}
