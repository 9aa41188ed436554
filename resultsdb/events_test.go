package resultsdb

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestEventsRoundTripInOrder(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	run, err := s.CreateRun(ctx, "demo", "demo.yml", "version: 1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	other, err := s.CreateRun(ctx, "demo", "demo.yml", "version: 1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 22, 13, 5, 1, 123456000, time.UTC)
	// Written out of time order: Events follows the order of writing, not At.
	want := []Event{
		{RunID: run.ID, At: at, Variant: "java", Step: 2, Kind: "check", Level: "warn", Message: "generator near its entitlement"},
		{RunID: run.ID, At: at.Add(-time.Minute), Variant: "", Step: -1, Kind: "info", Level: "info", Message: "run started"},
		{RunID: run.ID, At: at.Add(time.Second), Variant: "node", Step: 0, Kind: "stop", Level: "fail", Message: "co-located: gen/0 on 10.0.0.1"},
	}
	for i, e := range want {
		if err := s.AddEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := s.AddEvent(ctx, Event{RunID: other.ID, At: at, Step: -1, Kind: "info", Level: "info", Message: "other run"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := s.Events(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i].At = got[i].At.UTC()
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Events =\n%+v\nwant\n%+v", got, want)
	}

	t.Run("zero time is the database's now and negative step is none", func(t *testing.T) {
		before := time.Now().Add(-time.Minute) // the server's clock is this machine's
		if err := s.AddEvent(ctx, Event{RunID: other.ID, Step: -7, Kind: "scale", Level: "info", Message: "scaled"}); err != nil {
			t.Fatal(err)
		}
		evs, err := s.Events(ctx, other.ID)
		if err != nil {
			t.Fatal(err)
		}
		last := evs[len(evs)-1]
		if last.At.Before(before) || last.At.After(time.Now().Add(time.Minute)) || last.Step != -1 || last.Variant != "" {
			t.Fatalf("event %+v: want At about now, Step -1, no variant", last)
		}
	})

	t.Run("unknown level is refused", func(t *testing.T) {
		if err := s.AddEvent(ctx, Event{RunID: run.ID, Step: -1, Kind: "check", Level: "error", Message: "x"}); err == nil {
			t.Fatal("AddEvent stored level \"error\"")
		}
	})

	t.Run("unknown run is refused", func(t *testing.T) {
		if err := s.AddEvent(ctx, Event{RunID: "20000101-000000-0000", Step: -1, Kind: "info", Level: "info", Message: "x"}); err == nil {
			t.Fatal("AddEvent stored an event of no run")
		}
	})

	t.Run("a run without events has none", func(t *testing.T) {
		evs, err := s.Events(ctx, "20000101-000000-0000")
		if err != nil || len(evs) != 0 {
			t.Fatalf("Events = %v, %v; want none", evs, err)
		}
	})

	t.Run("events go with their run", func(t *testing.T) {
		if _, err := s.Pool().Exec(ctx, `DELETE FROM runs WHERE id = $1`, run.ID); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM run_events WHERE run_id = $1`, run.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("%d events left of a deleted run", n)
		}
	})
}

func TestSetInstancesSeenKeepsTheMost(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	run, err := s.CreateRun(ctx, "demo", "demo.yml", "version: 1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for idx := range 2 {
		st := Step{RunID: run.ID, Variant: "v", Index: idx, Instances: 2, Users: 5, Started: now, WarmupUntil: now, Ends: now.Add(time.Minute)}
		if err := s.StartStep(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	seen := func(idx int) *int {
		t.Helper()
		var n *int
		if err := s.Pool().QueryRow(ctx, `SELECT instances_seen FROM steps WHERE run_id = $1 AND variant = 'v' AND idx = $2`, run.ID, idx).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := seen(0); n != nil {
		t.Fatalf("instances_seen of a fresh step = %d, want NULL", *n)
	}
	for _, c := range []struct{ set, want int }{{0, 0}, {3, 3}, {1, 3}, {5, 5}, {5, 5}, {4, 5}} {
		if err := s.SetInstancesSeen(ctx, run.ID, "v", 0, c.set); err != nil {
			t.Fatal(err)
		}
		if n := seen(0); n == nil || *n != c.want {
			t.Fatalf("after SetInstancesSeen(%d): instances_seen = %v, want %d", c.set, n, c.want)
		}
	}
	if n := seen(1); n != nil {
		t.Fatalf("the other step's instances_seen = %d, want NULL", *n)
	}
	if err := s.SetInstancesSeen(ctx, run.ID, "v", 7, 1); !errors.Is(err, ErrStepNotFound) {
		t.Fatalf("SetInstancesSeen of a missing step: %v, want ErrStepNotFound", err)
	}
	if err := s.SetInstancesSeen(ctx, run.ID, "v", 1, -1); err == nil {
		t.Fatal("SetInstancesSeen accepted a negative count")
	}
}

// TestAddEventOnceRecordsAnEventOnce: trying again after an insert whose answer was
// lost records the event once; another event of the same time does get its row.
func TestAddEventOnceRecordsAnEventOnce(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	run, err := s.CreateRun(ctx, "demo", "demo.yml", "version: 1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 7, 20, 5, 42, 123456789, time.UTC) // finer than the column keeps
	e := Event{RunID: run.ID, At: at, Variant: "fast", Step: 2, Kind: "fault", Level: "info", Message: "evacuate cell loadgen"}
	if err := s.AddEvent(ctx, e); err != nil { // landed, its answer lost
		t.Fatal(err)
	}
	if err := s.AddEventOnce(ctx, e); err != nil { // the retry
		t.Fatal(err)
	}
	other := e
	other.Message = "crash instance 0 of app"
	if err := s.AddEventOnce(ctx, other); err != nil {
		t.Fatal(err)
	}
	got, err := s.Events(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Message != e.Message || got[1].Message != other.Message {
		t.Fatalf("events = %+v, want the evacuation once, then the crash", got)
	}
	if err := s.AddEventOnce(ctx, Event{RunID: run.ID, Kind: "fault", Message: "no time"}); err == nil {
		t.Error("AddEventOnce took an event without a time")
	}
}
