package report

import (
	"context"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// One read of a LiveRun serves every view that asks within its interval; the next is
// made only once the database has rested ten times as long as the read took.
func TestLiveRunSharesOneRead(t *testing.T) {
	ctx := context.Background()
	store, err := resultsdb.Open(ctx, testpg.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	fixture{id: fixtureRun, epoch: time.Date(2026, 11, 22, 13, 5, 0, 0, time.UTC), tag: 7, speed: 1, perStep: 50}.seed(t, store)

	live := NewLiveRun(store, fixtureRun)
	first := live.Read(ctx, time.Hour)
	if first.Err != nil || first.Report == nil || first.At.IsZero() || first.Took <= 0 {
		t.Fatalf("first read: %+v", first)
	}
	if again := live.Read(ctx, time.Hour); !again.At.Equal(first.At) || again.Report != first.Report {
		t.Errorf("a view asking within the interval got a read of its own (at %s, the first at %s)", again.At, first.At)
	}
	var next LiveRead
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		if next = live.Read(ctx, 0); !next.At.Equal(first.At) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no new read within 30 s with an interval of 0")
		}
	}
	if rest := next.At.Sub(first.At); rest < time.Duration(float64(first.Took)/LiveDBShare) {
		t.Errorf("read again %s after a read of %s: the database must rest %s", rest, first.Took, time.Duration(float64(first.Took)/LiveDBShare))
	}

	if r := NewLiveRun(store, "20200101-000000-dead").Read(ctx, time.Second); r.Err == nil || r.At.IsZero() {
		t.Errorf("a run that does not exist: %+v, want its error", r)
	}
}
