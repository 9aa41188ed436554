package capacity

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/internal/testlog"
	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
)

// TestHundredInstancesOnTwentyConnections is the simulation made small: 100 generator
// instances through a relay of 4 connections on a database that allows 20 (each
// instance on its own pool would need 100 and more), and 5 more started by hand once
// the last step runs. Every instance joins every step, each late one that registered
// while the step ran joins it late, and every sample sent is stored; no timing is
// asserted (a machine too busy to start the 5 within the step's 4 s is said, not failed).
func TestHundredInstancesOnTwentyConnections(t *testing.T) {
	testtier.External(t, "a real PostgreSQL server")
	dir := testpg.Dir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var logs testlog.Buffer
	defer func() {
		if t.Failed() {
			t.Logf("warnings:\n%s", tail(logs.String(), 8000))
		}
	}()
	res, err := Run(ctx, Config{Dir: dir, Instances: 100, Steps: 2, Rate: 20, Hold: 4 * time.Second, LateJoiners: 5,
		MaxConnections: 20, RelayConns: 4, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	if res.RunErr != nil {
		t.Fatalf("run: %v", res.RunErr)
	}
	if len(res.Steps) != 2 {
		t.Fatalf("%d steps recorded, want 2: %+v", len(res.Steps), res.Steps)
	}
	// The last step's extra joiners are the instances started by hand: every one that
	// registered while it ran, at most the 5, each of them late. An instance of the
	// plan may join late too, when its poll took longer than the step's lead (run 99
	// of issue 32: 10 of 100 on a busy machine): said, not failed, like the timing.
	last := res.Steps[len(res.Steps)-1]
	if byHand := last.Joined - last.Planned; byHand < res.LateInTime || byHand > 5 || last.Late < byHand {
		t.Errorf("last step: %d joined beyond the %d planned, %d of all late; want between the %d late instances that registered while it ran and the 5 started, each late",
			byHand, last.Planned, last.Late, res.LateInTime)
	}
	if res.LateInTime < 5 {
		t.Logf("only %d of the 5 late instances registered before the last step ended: the machine was too busy", res.LateInTime)
	}
	for i, st := range res.Steps {
		if planned := 50 * (i + 1); st.Planned != planned || st.Joined < planned || st.Done != st.Joined {
			t.Errorf("step %d: planned %d, joined %d, done %d; want %d planned, all of them and any late ones joined and done", i+1, st.Planned, st.Joined, st.Done, planned)
		}
		if i < len(res.Steps)-1 && st.Joined != st.Planned {
			t.Errorf("step %d: joined %d, want the %d planned (no one starts by hand before the last step)", i+1, st.Joined, st.Planned)
		}
		if late := st.Late - (st.Joined - st.Planned); late > 0 {
			t.Logf("step %d: %d planned instance(s) joined late: the machine was too busy for their polls", i+1, late)
		}
	}
	if res.Sent == 0 || res.Stored != res.Sent || res.Dropped != 0 {
		t.Errorf("sent %d, stored %d, dropped %d: want every sample sent stored", res.Sent, res.Stored, res.Dropped)
	}
	if res.MaxConns == 0 || res.MaxConns > 20 {
		t.Errorf("at most %d connections seen in use; want between 1 and max_connections (20)", res.MaxConns)
	}
	t.Logf("%+v", *res)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
