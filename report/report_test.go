package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs (run with -update after checking):\n--- got\n%s--- want\n%s", name, got, want)
	}
}

var rows = []resultsdb.StepSummary{
	{Variant: "java", Step: 0, Instances: 4, Users: 1, Seconds: 50, Count: 12345, Errors: 0, Throughput: 246.9,
		Mean: 3200 * time.Microsecond, P50: 2900 * time.Microsecond, P90: 5100 * time.Microsecond, P99: 14250 * time.Microsecond,
		Min: 812 * time.Microsecond, Max: 1234 * time.Millisecond},
	{Variant: "node", Step: 1, Instances: 8, Users: 1, Seconds: 50, Count: 2000, Errors: 20, Throughput: 40,
		Mean: 150 * time.Millisecond, P50: 120 * time.Millisecond, P90: 300 * time.Millisecond, P99: 900 * time.Millisecond,
		Min: 2 * time.Millisecond, Max: 10 * time.Second, Omitted: 400},
	{Variant: "node-open", Step: 0, Instances: 2, Seconds: 50, Count: 5000, Throughput: 100,
		Mean: 40 * time.Millisecond, P50: 30 * time.Millisecond, P90: 60 * time.Millisecond, P99: 2 * time.Second,
		Min: time.Millisecond, Max: 2100 * time.Millisecond, Missed: 75},
}

func TestSummaryTable(t *testing.T) {
	var b bytes.Buffer
	if err := Summary(&b, rows); err != nil {
		t.Fatal(err)
	}
	golden(t, "summary.txt", b.Bytes())
}

func TestStepLine(t *testing.T) {
	cpu, total, avail, cells, gen := 0.43, 0.86, 1.0, 1, 0.07
	seen := rows[1]
	seen.InstancesSeen = seen.Instances + 4
	seen.Apps = []resultsdb.AppStepMetrics{ // 2 instances sharing 1 core
		{App: "a", Role: resultsdb.RoleApp, Instances: 2, CPUSource: resultsdb.CPUFromCounters, CPUPoints: 4, CPUMeanCores: &cpu,
			CPUTotalCores: &total, CPUAvailableCores: &avail, Cells: &cells},
		{App: "g", Role: resultsdb.RoleGenerator, Instances: 5, CPUSource: resultsdb.CPUFromStats, CPUPoints: 6, CPUMeanCores: &gen},
	}
	open := rows[2]
	rate := 250.0
	open.Open, open.OfferedRate = true, &rate
	cases := []StepProgress{
		{StepSummary: rows[1], Steps: 3, Left: 62400 * time.Millisecond},
		{StepSummary: seen, Steps: 3, Left: time.Minute},
		{StepSummary: open, Steps: 3},
	}
	var got []byte
	for _, c := range cases {
		got = append(got, StepLine(c)+"\n"...)
	}
	golden(t, "stepline.txt", got)
}

func TestThousands(t *testing.T) {
	for x, want := range map[float64]string{0: "0", 999.6: "1,000", 103666: "103,666", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := Thousands(x); got != want {
			t.Errorf("Thousands(%g) = %q, want %q", x, got, want)
		}
	}
}
