package export

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/testpg"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/sample"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

func TestMain(m *testing.M) { testpg.Main(m) }

func TestExportWritesEveryTableWithManifest(t *testing.T) {
	ctx := context.Background()
	store, err := resultsdb.Open(ctx, testpg.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	run, err := store.CreateRun(ctx, "demo", "demo.yml", "version: 1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// A second run whose rows must not leak into the export.
	other, err := store.CreateRun(ctx, "other", "o.yml", "version: 1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var workers []int32
	for _, r := range []*resultsdb.Run{run, other} {
		if err := store.StartStep(ctx, resultsdb.Step{RunID: r.ID, Variant: "v", Instances: 1, Users: 1, Started: r.Epoch, WarmupUntil: r.Epoch}); err != nil {
			t.Fatal(err)
		}
		id, err := store.RegisterWorker(ctx, resultsdb.Worker{RunID: r.ID, Variant: "v", AppName: "gen"})
		if err != nil {
			t.Fatal(err)
		}
		workers = append(workers, id)
		w, err := store.NewSampleWriter(id, resultsdb.WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 1000; i++ {
			w.Add(sample.Sample{Seq: uint32(i), LatencyUS: int32(i), Status: 200, Err: sample.ErrClass(i % 3)})
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}

	dir := t.TempDir()
	m, err := Export(ctx, store, run.ID, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantRows := map[string]int64{"runs": 1, "steps": 1, "workers": 1, "worker_steps": 0, "samples": 1000, "container_metrics": 0, "router_requests": 0, "app_timings": 0}
	if len(m.Files) != len(wantRows) {
		t.Fatalf("manifest lists %d files, want %d", len(m.Files), len(wantRows))
	}
	for _, f := range m.Files {
		body, err := os.ReadFile(filepath.Join(dir, f.Name))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(body)
		recs, err := csv.NewReader(bytes.NewReader(body)).ReadAll()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if f.Rows != wantRows[f.Table] || int64(len(recs)-1) != f.Rows || f.Bytes != int64(len(body)) || f.SHA256 != hex.EncodeToString(sum[:]) {
			t.Fatalf("%s: manifest says %d rows %d bytes %s; file has %d rows %d bytes; want %d rows", f.Name, f.Rows, f.Bytes, f.SHA256, len(recs)-1, len(body), wantRows[f.Table])
		}
	}

	recs := readCSV(t, filepath.Join(dir, "samples.csv"))
	wantHeader := []string{"variant", "worker_id", "seq", "trace_id", "step", "request", "intended_us", "start_delay_us", "latency_us", "status", "bytes", "error", "warmup"}
	if got := recs[0]; len(got) != len(wantHeader) {
		t.Fatalf("samples header %v, want %v", got, wantHeader)
	}
	for i, h := range wantHeader {
		if recs[0][i] != h {
			t.Fatalf("samples header %v, want %v", recs[0], wantHeader)
		}
	}
	first := recs[1]
	wantTrace := sample.NewTraceID(run.TraceTag, uint32(workers[0]), 1).String()
	if first[3] != wantTrace || first[2] != "1" || first[11] != "other" {
		t.Fatalf("first sample %v: want seq 1, trace id %s, error other", first, wantTrace)
	}

	var back Manifest
	body, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(body, &back); err != nil || back.RunID != run.ID || back.SchemaVersion != resultsdb.SchemaVersion() {
		t.Fatalf("manifest.json: %v %+v", err, back)
	}
}

func TestExportRejectsBadInput(t *testing.T) {
	ctx := context.Background()
	store, err := resultsdb.Open(ctx, testpg.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for name, c := range map[string]struct {
		run    string
		tables []string
	}{
		"malformed id":  {"x'; drop table runs; --", nil},
		"unknown run":   {"20000101-000000-0000", nil},
		"unknown table": {"20000101-000000-0000", []string{"passwords"}},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := Export(ctx, store, c.run, dir, c.tables); err == nil {
				t.Fatal("Export succeeded")
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Fatalf("a failed export left %d files", len(entries))
			}
		})
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestSpecTablesAreExportable: every table a spec may name under export.tables exists here.
func TestSpecTablesAreExportable(t *testing.T) {
	for _, tb := range spec.AllTables {
		if !slices.Contains(Tables, tb) {
			t.Errorf("spec table %q is not exportable", tb)
		}
	}
}
