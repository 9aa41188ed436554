package resultsdb

import (
	"context"
	"math"
	"reflect"
	"testing"
	"time"
)

// metricsRun creates a run and stores the container metrics rows returns for it.
func metricsRun(t *testing.T, s *Store, rows func(runID string) []ContainerMetric) string {
	t.Helper()
	ctx := context.Background()
	run, err := s.CreateRun(ctx, "demo", "demo.yml", "version: 1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.InsertContainerMetrics(ctx, rows(run.ID)); err != nil {
		t.Fatal(err)
	}
	return run.ID
}

// cm is a RUNNING row with usage; cpu < 0 means no usage, ent < 0 no entitlement.
func cm(run string, at time.Time, app string, idx int, host string, cpu, ent float64, mem int64) ContainerMetric {
	m := ContainerMetric{RunID: run, At: at, AppName: app, AppGUID: app + "-guid", ProcessType: "web", InstanceIndex: idx,
		State: "RUNNING", Host: host}
	if cpu >= 0 {
		m.CPU, m.MemBytes = &cpu, &mem
	}
	if ent >= 0 {
		m.CPUEntitlement = &ent
	}
	return m
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestStepMetrics(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 22, 13, 0, 0, 0, time.UTC)
	from, to := t0.Add(10*time.Second), t0.Add(30*time.Second)
	run := metricsRun(t, s, func(r string) []ContainerMetric {
		down := cm(r, from, "api", 2, "", -1, -1, 0)
		down.State = "DOWN"
		starting := cm(r, to, "api", 3, "10.0.0.9", -1, -1, 0) // no usage yet
		starting.State = "STARTING"
		return []ContainerMetric{
			// Outside the window on both sides: must not count.
			cm(r, from.Add(-time.Microsecond), "api", 0, "10.0.0.7", 0.99, 0.99, 9000),
			cm(r, to.Add(time.Microsecond), "api", 0, "10.0.0.7", 0.99, 0.99, 9000),
			// First poll, exactly at from.
			cm(r, from, "api", 0, "10.0.0.1", 0.2, 0.4, 1000),
			cm(r, from, "api", 1, "10.0.0.2", 0.4, -1, 3000),
			down,
			// A poll in which no instance had usage yet (log-cache gap).
			cm(r, from.Add(5*time.Second), "api", 0, "10.0.0.1", -1, -1, 0),
			// Last poll, exactly at to.
			cm(r, to, "api", 0, "10.0.0.1", 0.6, 0.8, 2000),
			starting,
			// Generators: no entitlement anywhere.
			cm(r, from, "gen", 0, "10.0.0.3", 0.9, -1, 500),
			cm(r, to, "gen", 0, "10.0.0.3", 0.7, -1, 700),
			// Another app the caller did not ask for.
			cm(r, from, "db-proxy", 0, "10.0.0.4", 0.1, 0.1, 100),
		}
	})

	t.Run("apps asked for, in their order", func(t *testing.T) {
		got, err := s.StepMetrics(ctx, run, from, to, []string{"gen", "api", "missing", "gen"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got[0].App != "gen" || got[1].App != "api" || got[2].App != "missing" {
			t.Fatalf("StepMetrics apps = %+v, want gen, api, missing", got)
		}
		api := got[1]
		if api.Instances != 2 || api.Polls != 2 {
			t.Errorf("api: %d instances, %d polls; want 2 instances (0, 1 had usage), 2 polls (from, to)", api.Instances, api.Polls)
		}
		if !near(api.MeanCPU, 0.4) || !near(api.MaxCPU, 0.6) || !near(api.MeanMemBytes, 2000) {
			t.Errorf("api: mean cpu %v, max cpu %v, mean mem %v; want 0.4, 0.6, 2000", api.MeanCPU, api.MaxCPU, api.MeanMemBytes)
		}
		if api.MeanEntitlement == nil || api.MaxEntitlement == nil || !near(*api.MeanEntitlement, 0.6) || !near(*api.MaxEntitlement, 0.8) {
			t.Errorf("api entitlement mean %v max %v, want 0.6, 0.8", api.MeanEntitlement, api.MaxEntitlement)
		}
		if want := []string{"10.0.0.1", "10.0.0.2"}; !reflect.DeepEqual(api.Hosts, want) {
			t.Errorf("api hosts %v, want %v (RUNNING only, inside the window)", api.Hosts, want)
		}
		gen := got[0]
		if gen.Instances != 1 || gen.Polls != 2 || !near(gen.MeanCPU, 0.8) || !near(gen.MaxCPU, 0.9) ||
			gen.MeanEntitlement != nil || gen.MaxEntitlement != nil || !reflect.DeepEqual(gen.Hosts, []string{"10.0.0.3"}) {
			t.Errorf("gen = %+v", gen)
		}
		if m := got[2]; m.Instances != 0 || m.Polls != 0 || m.MeanCPU != 0 || m.MeanEntitlement != nil || len(m.Hosts) != 0 {
			t.Errorf("an app without rows = %+v, want zero", m)
		}
	})

	t.Run("no apps means every app with rows", func(t *testing.T) {
		got, err := s.StepMetrics(ctx, run, from, to, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, m := range got {
			names = append(names, m.App)
		}
		if want := []string{"api", "db-proxy", "gen"}; !reflect.DeepEqual(names, want) {
			t.Fatalf("apps %v, want %v", names, want)
		}
	})

	t.Run("a window between polls is empty", func(t *testing.T) {
		got, err := s.StepMetrics(ctx, run, from.Add(time.Second), from.Add(2*time.Second), []string{"api"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Polls != 0 || got[0].Instances != 0 {
			t.Fatalf("StepMetrics = %+v, want api with no polls", got)
		}
	})

	t.Run("a window holding only rows without usage", func(t *testing.T) {
		at := from.Add(5 * time.Second)
		got, err := s.StepMetrics(ctx, run, at, at, []string{"api"})
		if err != nil {
			t.Fatal(err)
		}
		if m := got[0]; m.Polls != 0 || m.Instances != 0 || m.MeanCPU != 0 || m.MeanEntitlement != nil ||
			!reflect.DeepEqual(m.Hosts, []string{"10.0.0.1"}) {
			t.Fatalf("StepMetrics = %+v, want no usage but the host seen running", m)
		}
	})

	t.Run("other runs do not count", func(t *testing.T) {
		other := metricsRun(t, s, func(r string) []ContainerMetric {
			return []ContainerMetric{cm(r, from, "api", 0, "10.0.0.1", 0.2, 0.4, 1000)}
		})
		got, err := s.StepMetrics(ctx, other, from, to, []string{"api"})
		if err != nil {
			t.Fatal(err)
		}
		if got[0].Polls != 1 || got[0].Instances != 1 || !near(got[0].MaxCPU, 0.2) {
			t.Fatalf("StepMetrics of another run = %+v", got[0])
		}
	})
}

func TestLatestHostsReadsTheLatestPoll(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 22, 13, 0, 0, 0, time.UTC)
	run := metricsRun(t, s, func(r string) []ContainerMetric {
		crashed := cm(r, t0.Add(10*time.Second), "api", 2, "10.0.0.8", -1, -1, 0)
		crashed.State = "CRASHED"
		return []ContainerMetric{
			// An older poll: instance 0 was elsewhere and instance 1 has since gone.
			cm(r, t0, "api", 0, "10.0.0.9", 0.1, 0.1, 1),
			cm(r, t0, "api", 1, "10.0.0.2", 0.1, 0.1, 1),
			// The latest poll of api; instance 1 reported twice, as CC may.
			cm(r, t0.Add(10*time.Second), "api", 1, "10.0.0.2", 0.1, 0.1, 1),
			cm(r, t0.Add(10*time.Second), "api", 0, "10.0.0.1", -1, -1, 0), // running without usage
			cm(r, t0.Add(10*time.Second), "api", 1, "10.0.0.2", 0.1, 0.1, 1),
			crashed,
			// gen's latest poll is older than api's: each app has its own.
			cm(r, t0.Add(5*time.Second), "gen", 0, "10.0.0.1", 0.5, -1, 1),
			cm(r, t0.Add(5*time.Second), "gen", 1, "10.0.0.3", 0.5, -1, 1),
			// All of other's instances are down at its latest poll.
			cm(r, t0, "other", 0, "10.0.0.5", 0.1, 0.1, 1),
			func() ContainerMetric {
				m := cm(r, t0.Add(20*time.Second), "other", 0, "10.0.0.5", -1, -1, 0)
				m.State = "DOWN"
				return m
			}(),
		}
	})

	got, err := s.LatestHosts(ctx, run, []string{"api", "gen", "other", "missing"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]InstanceHost{
		"api": {{"api", 0, "10.0.0.1"}, {"api", 1, "10.0.0.2"}},
		"gen": {{"gen", 0, "10.0.0.1"}, {"gen", 1, "10.0.0.3"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("LatestHosts =\n%v\nwant\n%v", got, want)
	}

	t.Run("only the apps asked for", func(t *testing.T) {
		got, err := s.LatestHosts(ctx, run, []string{"gen"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || len(got["gen"]) != 2 {
			t.Fatalf("LatestHosts(gen) = %v", got)
		}
	})

	t.Run("no apps means all", func(t *testing.T) {
		got, err := s.LatestHosts(ctx, run, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("LatestHosts(nil) = %v, want %v", got, want)
		}
	})
}
