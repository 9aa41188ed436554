package capacity

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/testlog"
	"github.com/cf-benchmark/cf-benchmark/internal/testpg"
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
	last := res.Steps[len(res.Steps)-1]
	if last.Late < res.LateInTime || last.Late > 5 {
		t.Errorf("%d late joins in the last step; want between the %d late instances that registered while it ran and the 5 started", last.Late, res.LateInTime)
	}
	if res.LateInTime < 5 {
		t.Logf("only %d of the 5 late instances registered before the last step ended: the machine was too busy", res.LateInTime)
	}
	for i, st := range res.Steps {
		planned, joined := 50*(i+1), 50*(i+1)
		if i == 1 {
			joined += last.Late
		}
		if st.Planned != planned || st.Joined != joined || st.Done != joined {
			t.Errorf("step %d: planned %d, joined %d, done %d; want %d planned, %d joined and done", i+1, st.Planned, st.Joined, st.Done, planned, joined)
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
