package engine

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// runLevels runs a one-variant spec whose workload and ramp are given against a local
// target, and returns the run.
func runLevels(t *testing.T, workload, ramp string) (*Result, string, *recorder) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	t.Cleanup(srv.Close)
	text := "version: 1\nname: levels\nvariants:\n  - {name: a, url: " + srv.URL + "}\nworkload:\n" + workload +
		"  requests: [{name: r, path: /}]\nramp:\n" + ramp + "  hold: 2s\n"
	sp, err := spec.Parse("levels.yml", []byte(text), ".")
	if err != nil {
		t.Fatal(err)
	}
	dsn := testpg.DSN(t)
	store, err := resultsdb.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	rep := &recorder{}
	res, err := Run(context.Background(), sp, text, Options{PollEvery: 100 * time.Millisecond, Store: store, Reporter: rep})
	if err != nil {
		t.Fatal(err)
	}
	if res.Run.Status != resultsdb.RunCompleted {
		t.Fatalf("run %s (%s)", res.Run.Status, res.Run.Reason)
	}
	return res, dsn, rep
}

// A ramp of rates: every step offers its rate in all, split over the ramp's two
// generator instances, and the step's figures say what was offered. The open loop's
// sends follow the schedule, so sent + missed is the rate × the window whatever the
// machine's load.
func TestRampOfRatesSpreadsEachRateOverTheGenerators(t *testing.T) {
	t.Parallel()
	res, dsn, rep := runLevels(t, "  model: open\n", "  rates: [40, 100]\n  generators: 2\n")
	if len(res.Summaries) != 2 {
		t.Fatalf("%d steps, want 2", len(res.Summaries))
	}
	for i, want := range []float64{40, 100} {
		s := res.Summaries[i]
		if s.Instances != 2 || s.OfferedRate == nil || *s.OfferedRate != want {
			t.Fatalf("step %d: %d instances, offered %v; want 2 instances offering %v req/s in all", i+1, s.Instances, s.OfferedRate, want)
		}
		if got := query[float64](t, dsn, `SELECT rate FROM steps WHERE run_id = $1 AND idx = $2`, res.Run.ID, i); got != want {
			t.Errorf("steps.rate of step %d = %v, want %v", i+1, got, want)
		}
		// Each instance sent half: rate/2 per second over the 2 s step (±2 for the
		// slots at the window's edges).
		perWorker := query[[]int64](t, dsn, `SELECT array_agg(n ORDER BY n) FROM (
			SELECT count(*) + max(ws.missed) AS n FROM samples s JOIN workers w ON w.id = s.worker_id
			JOIN worker_steps ws ON ws.worker_id = w.id AND ws.step = s.step
			WHERE w.run_id = $1 AND s.step = $2 GROUP BY w.id) x`, res.Run.ID, i)
		half := int64(want) // rate/2 × 2 s
		if len(perWorker) != 2 || perWorker[0] < half-2 || perWorker[1] > half+2 {
			t.Errorf("step %d: sends per instance %v, want 2 × %d (%v req/s in all over 2 instances for 2 s)", i+1, perWorker, half, want)
		}
	}
	if !hasNote(rep.notes, "a: step 2/2 starts: 100 req/s in all over 2 generator instance(s) (50 each)") {
		t.Errorf("notes %q: want the step's rate in all and each instance's", rep.notes)
	}
}

// A ramp of users: each step runs its users in all, split over the generator instances.
func TestRampOfUsersSplitsTheUsersOverTheGenerators(t *testing.T) {
	t.Parallel()
	res, dsn, _ := runLevels(t, "  model: closed\n", "  users: [2, 6]\n  generators: 2\n")
	for i, want := range []int{1, 3} {
		s := res.Summaries[i]
		if s.Instances != 2 || s.Users != want || s.Count == 0 {
			t.Fatalf("step %d: %d instances × %d users, %d requests; want 2 × %d", i+1, s.Instances, s.Users, s.Count, want)
		}
		if got := query[int](t, dsn, `SELECT users FROM steps WHERE run_id = $1 AND idx = $2`, res.Run.ID, i); got != want {
			t.Errorf("steps.users of step %d = %d, want %d per instance", i+1, got, want)
		}
	}
}

func hasNote(notes []string, want string) bool {
	for _, n := range notes {
		if strings.Contains(n, want) {
			return true
		}
	}
	return false
}

// A step's progress line says what the level asks of each generator instance and in all.
func TestLevelNote(t *testing.T) {
	t.Parallel()
	closed := spec.Workload{Model: spec.ModelClosed, Users: 2}
	cases := []struct {
		ramp spec.Ramp
		w    spec.Workload
		l    spec.Level
		n    int
		want string
	}{
		{spec.Ramp{Rates: []float64{700}, Generators: 2}, spec.Workload{Model: spec.ModelOpen, RatePer: spec.RatePerTotal}, spec.Level{Generators: 2, Rate: 700}, 2,
			"700 req/s in all over 2 generator instance(s) (350 each)"},
		{spec.Ramp{Users: []int{8}, Generators: 2}, closed, spec.Level{Generators: 2, Users: 4}, 2, "8 users in all (4 each of 2 generator instance(s))"},
		{spec.Ramp{AppInstances: []int{3}, Generators: 2}, closed, spec.Level{Generators: 6, Users: 2, AppInstances: 3}, 6,
			"3 app instance(s), 6 generator instance(s), 2 users each"},
		{spec.Ramp{Start: 1, Step: 1, Max: 3}, closed, spec.Level{Generators: 3, Users: 2}, 5, "5 generator instance(s), 2 users each"},
	}
	for _, c := range cases {
		sp := &spec.Spec{Ramp: c.ramp, Workload: c.w}
		if got := levelNote(sp, c.l, c.n); got != c.want {
			t.Errorf("levelNote(%+v, %d) = %q, want %q", c.l, c.n, got, c.want)
		}
	}
}
