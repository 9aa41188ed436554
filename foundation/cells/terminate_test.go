//go:build linux

package cells

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// TestTerminateRestartsOneInstance: Terminate stops the instance gracefully and starts
// another in its slot (a new guid, no crash), and leaves the other instances alone.
func TestTerminateRestartsOneInstance(t *testing.T) {
	t.Parallel()
	e := startCells(t, nil)
	e.c.Desire(fixtureSpec("p-term", 2, nil))
	eventually(t, 10*time.Second, "2 running instances", allRunning(e.c, "p-term", 2))
	before := e.c.Instances("p-term")

	guid, err := e.c.Terminate("p-term", 0)
	if err != nil || guid != before[0].GUID {
		t.Fatalf("Terminate = %q, %v; want %q", guid, err, before[0].GUID)
	}
	eventually(t, 10*time.Second, "index 0 running again as a new instance", func() bool {
		in := e.c.Instances("p-term")
		return len(in) == 2 && in[0].State == StateRunning && in[0].GUID != before[0].GUID
	})
	eventually(t, 5*time.Second, "the old process gone", gone(before[0].PID))
	after := e.c.Instances("p-term")
	if after[0].Crashes != 0 || after[1].GUID != before[1].GUID {
		t.Errorf("after: %+v; want index 0 without crashes and index 1 untouched (%s)", after, before[1].GUID)
	}
	states := states(e.events.of("p-term", 0))
	if slices.Contains(states, StateCrashed) {
		t.Errorf("index 0 went through %v: a terminate is no crash", states)
	}
	if i := slices.Index(states, StateDown); i < 0 || !slices.Contains(states[i:], StateRunning) {
		t.Errorf("index 0 went through %v, want DOWN then RUNNING again", states)
	}

	for _, tt := range []struct {
		guid  string
		index int
	}{{"p-term", 2}, {"p-term", -1}, {"no-such-process", 0}} {
		if _, err := e.c.Terminate(tt.guid, tt.index); !errors.Is(err, ErrNoInstance) {
			t.Errorf("Terminate(%s, %d) = %v, want ErrNoInstance", tt.guid, tt.index, err)
		}
	}
}
