package resultsdb

import (
	"context"
	"reflect"
	"testing"
	"time"
)

// Log Cache readings, each one instance's at its own time and without host or state,
// do not hide the latest poll of CC's stats, even when newer; and their counters are
// stored as given.
func TestLatestHostsIgnoresLogCacheRows(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 22, 13, 0, 0, 0, time.UTC)
	used, age := int64(12_345_678_901), int64(60e9)
	run := metricsRun(t, s, func(r string) []ContainerMetric {
		reading := ContainerMetric{RunID: r, At: t0.Add(7 * time.Second), AppName: "api", AppGUID: "api-guid", ProcessType: "web",
			InstanceIndex: 1, CPUTimeNS: &used, ContainerAgeNS: &age, Source: SourceLogCache}
		return []ContainerMetric{
			cm(r, t0, "api", 0, "10.0.0.1", 0.1, 0.1, 1),
			cm(r, t0, "api", 1, "10.0.0.2", 0.1, 0.1, 1),
			reading,
		}
	})
	got, err := s.LatestHosts(ctx, run, []string{"api"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]InstanceHost{"api": {{"api", 0, "10.0.0.1"}, {"api", 1, "10.0.0.2"}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("LatestHosts = %v, want %v", got, want)
	}
	var source, state string
	var gotUsed, gotAge int64
	var ent *int64
	if err := s.Pool().QueryRow(ctx, `SELECT source, state, cpu_time_ns, container_age_ns, entitlement_ns FROM container_metrics
		WHERE run_id = $1 AND at = $2`, run, t0.Add(7*time.Second)).Scan(&source, &state, &gotUsed, &gotAge, &ent); err != nil {
		t.Fatal(err)
	}
	if source != SourceLogCache || state != "" || gotUsed != used || gotAge != age || ent != nil {
		t.Errorf("stored reading: %s %q %d %d %v", source, state, gotUsed, gotAge, ent)
	}
}
