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
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/internal/sample"
	"github.com/cf-benchmark/cf-benchmark/loadgen/worker"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

func TestMain(m *testing.M) {
	captureStderr()
	testpg.Main(m)
}

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

	// The router saw requests 1-5, the app timed 3-7 (and one of the other run's).
	idx, ms := 0, func(n int) *time.Duration { d := time.Duration(n) * time.Millisecond; return &d }
	var rr []resultsdb.RouterRequest
	for seq := 1; seq <= 5; seq++ {
		rr = append(rr, resultsdb.RouterRequest{TraceID: sample.NewTraceID(run.TraceTag, uint32(workers[0]), uint64(seq)), At: run.Epoch,
			AppName: "app", AppIndex: &idx, Status: 200, ResponseTime: ms(seq + 2), GorouterTime: ms(1)})
	}
	if err := store.StoreRouterBatch(ctx, &resultsdb.LogPull{RunID: run.ID, Source: "test", Cursor: []byte("{}")}, rr); err != nil {
		t.Fatal(err)
	}
	var at []resultsdb.AppTiming
	for seq := 3; seq <= 7; seq++ {
		at = append(at, resultsdb.AppTiming{TraceID: sample.NewTraceID(run.TraceTag, uint32(workers[0]), uint64(seq)), At: run.Epoch,
			PoolWait: time.Duration(seq) * time.Microsecond, Query: *ms(1), Total: *ms(2)})
	}
	at = append(at, resultsdb.AppTiming{TraceID: sample.NewTraceID(other.TraceTag, uint32(workers[1]), 1), At: run.Epoch})
	flush := resultsdb.AppTimingFlush{RunID: run.ID, Variant: "v", AppName: "app", Instance: 1, At: run.Epoch, Dropped: 4}
	if err := store.StoreAppTimings(ctx, &flush, at); err != nil {
		t.Fatal(err)
	}
	if flush.Received != 6 || flush.Stored != 5 || flush.Foreign != 1 {
		t.Fatalf("flush received %d stored %d foreign %d, want 6 5 1", flush.Received, flush.Stored, flush.Foreign)
	}

	wl := worker.Workload{Model: "closed", Users: 1, Timeout: time.Second,
		Requests: []worker.Request{{Name: "list", Method: "GET", Path: "/", Weight: 1}, {Name: "show", Method: "GET", Path: "/1", Weight: 2}}}
	if err := store.AddRunVariant(ctx, resultsdb.RunVariant{RunID: run.ID, Variant: "v", GeneratorApp: "gen", TargetURL: "http://app",
		AppName: "app", Workload: wl.Marshal(), Listed: "l", Matrix: map[string]string{"env.POOL": "60"}, Config: "c", Repeat: 2,
		App: &resultsdb.AppConfig{Manifest: "applications:\n- name: app\n", Env: map[string]string{"POOL": "60"}, MemoryMB: 512, Instances: 2}}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ComputeStepMetrics(ctx, run.ID, "v", 0, []resultsdb.AppRole{{Name: "app", Role: resultsdb.RoleApp}}); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	m, err := Export(ctx, store, run.ID, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantRows := map[string]int64{"runs": 1, "variants": 1, "requests": 2, "steps": 1, "step_metrics": 1, "step_app_metrics": 1,
		"workers": 1, "worker_steps": 0, "samples": 1000, "container_metrics": 0, "db_connections": 0, "router_requests": 5, "app_timings": 5,
		"app_timing_flushes": 1, "request_times": 1000, "run_events": 0, "step_series": 1, "router_log_pulls": 1, "step_router_metrics": 0}
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

	// request_times: client, router and app columns side by side where each saw the
	// request, empty where not.
	rt := readCSV(t, filepath.Join(dir, "request_times.csv"))
	want := map[string][5]string{ // seq: client, router, gorouter, app, pool wait
		"1": {"1", "3000", "1000", "", ""},
		"4": {"4", "6000", "1000", "2000", "4"},
		"7": {"7", "", "", "2000", "7"},
		"9": {"9", "", "", "", ""},
	}
	for _, rec := range rt[1:] {
		if w, ok := want[rec[3]]; ok {
			seq, _ := strconv.Atoi(rec[3])
			if got := [5]string{rec[7], rec[8], rec[9], rec[10], rec[11]}; got != w || rec[4] != sample.NewTraceID(run.TraceTag, uint32(workers[0]), uint64(seq)).String() {
				t.Errorf("request_times seq %s: client/router/gorouter/app/pool %v, want %v (row %v)", rec[3], got, w, rec)
			}
			delete(want, rec[3])
		}
	}
	if len(want) != 0 {
		t.Errorf("request_times lacks seq %v", want)
	}
	if fl := readCSV(t, filepath.Join(dir, "app_timing_flushes.csv")); fl[1][6] != "6" || fl[1][7] != "5" || fl[1][8] != "1" || fl[1][9] != "4" {
		t.Errorf("app_timing_flushes %v", fl)
	}

	// variants: each variant's configuration as pushed.
	vs := readCSV(t, filepath.Join(dir, "variants.csv"))
	got := map[string]string{}
	for i, h := range vs[0] {
		got[h] = vs[1][i]
	}
	for k, v := range map[string]string{"listed": "l", "matrix": `{"env.POOL": "60"}`, "app_memory_mb": "512", "app_instances": "2",
		"app_env": `{"POOL": "60"}`, "app_manifest": "applications:\n- name: app\n", "config": "c", "repeat": "2"} {
		if got[k] != v {
			t.Errorf("variants.csv %s = %q, want %q", k, got[k], v)
		}
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

// TestFilesHaveTheDocumentedColumns: every file's header is its definition's columns,
// COLUMNS.md documents exactly those, and every key column is an output column.
func TestFilesHaveTheDocumentedColumns(t *testing.T) {
	ctx := context.Background()
	store, err := resultsdb.Open(ctx, testpg.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	run := seedRun(t, store, 3)
	dir := t.TempDir()
	if _, err := Export(ctx, store, run.ID, dir, nil); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("COLUMNS.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string][]string{}
	var section string
	for _, line := range strings.Split(string(doc), "\n") {
		if name, ok := strings.CutPrefix(line, "## "); ok {
			section = strings.TrimSuffix(name, ".csv")
		}
		if m := regexp.MustCompile("^\\| `([a-z0-9_]+)` \\|").FindStringSubmatch(line); m != nil {
			documented[section] = append(documented[section], m[1])
		}
	}
	for _, table := range Tables {
		def := tableDefs[table]
		var names []string
		for _, c := range def.cols {
			names = append(names, c.name)
		}
		if header := readCSV(t, filepath.Join(dir, table+".csv"))[0]; !slices.Equal(header, names) {
			t.Errorf("%s.csv header %v, want %v", table, header, names)
		}
		if !slices.Equal(documented[table], names) {
			t.Errorf("COLUMNS.md documents %s as %v, the file has %v", table, documented[table], names)
		}
		if len(def.key) != len(def.keyCols) {
			t.Errorf("%s: %d key expressions, %d key columns", table, len(def.key), len(def.keyCols))
		}
		for _, k := range def.keyCols {
			if !slices.Contains(names, k) {
				t.Errorf("%s: key column %s is not exported", table, k)
			}
		}
	}
}

// TestSpreadsheetFormulasAreNeutralised: text cells that a spreadsheet would run as a
// formula start with ', numbers (negative ones too) stay numbers.
func TestSpreadsheetFormulasAreNeutralised(t *testing.T) {
	ctx := context.Background()
	store, err := resultsdb.Open(ctx, testpg.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	run := seedRun(t, store, 10)
	dir := t.TempDir()
	if _, err := Export(ctx, store, run.ID, dir, nil); err != nil {
		t.Fatal(err)
	}
	cell := func(table string, row int, col string) string {
		t.Helper()
		recs := readCSV(t, filepath.Join(dir, table+".csv"))
		i := slices.Index(recs[0], col)
		if i < 0 || row >= len(recs) {
			t.Fatalf("%s has no row %d column %s", table, row, col)
		}
		return recs[row][i]
	}
	for _, c := range []struct {
		table string
		row   int
		col   string
		want  string
	}{
		{"runs", 1, "name", "'@demo"},
		{"runs", 1, "reason", "'+reason"},
		{"runs", 1, "status", "completed"},
		{"steps", 1, "variant", "'-v"},
		{"steps", 2, "variant", "'=HYPERLINK(\"http://evil\",\"x\")"},
		{"steps", 3, "variant", "two\nlines, \"quoted\""},
		{"steps", 4, "variant", "x plain"},
		{"steps", 1, "stop_reason", "''already quoted"},
		{"steps", 1, "started_at", "2026-11-22 13:05:01.123456+00"},
		{"workers", 1, "app_name", "'+gen"},
		{"workers", 1, "host", "'\thost"},
		{"worker_steps", 1, "skew_us", "-1500"},
		{"worker_steps", 1, "late_join", "false"},
		{"worker_steps", 2, "late_join", "true"},
		{"samples", 1, "variant", "x plain"},
		{"samples", 1, "start_delay_us", "-3"},
		{"samples", 1, "warmup", "true"},
		{"samples", 1, "error", "timeout"},
		{"samples", 11, "variant", "'=HYPERLINK(\"http://evil\",\"x\")"},
		{"container_metrics", 1, "app_name", "'=app"},
		{"container_metrics", 1, "cpu", "-0.25"},
		{"container_metrics", 1, "mem_bytes", "-1"},
		{"container_metrics", 1, "id", "1"},
		{"container_metrics", 1, "source", "stats"},
		{"container_metrics", 1, "cpu_time_ns", ""},
		{"container_metrics", 2, "source", "logcache"},
		{"container_metrics", 2, "cpu_time_ns", "12345678901234567"},
		{"container_metrics", 2, "cpu", ""},
		{"router_requests", 1, "app_guid", "'@guid"},
		{"router_requests", 1, "gorouter_time_us", "-2"},
	} {
		if got := cell(c.table, c.row, c.col); got != c.want {
			t.Errorf("%s row %d %s = %q, want %q", c.table, c.row, c.col, got, c.want)
		}
	}
}

func TestKeyLiteralsReadBackWhatWasWritten(t *testing.T) {
	for _, c := range []struct {
		table, record string
		want          []string
		err           bool
	}{
		{"steps", "'=x,3,4,1,,,,,,,,\n", []string{"'=x'", "3"}, false},
		{"steps", "\"''it's\n\"\"q\"\"\",0,4,1,,,,,,,,\n", []string{"'''it''s\n\"q\"'", "0"}, false},
		{"steps", "v,x,4,1,,,,,,,,\n", nil, true},
		{"run_events", "12,,v,,check,warn,,m,\n", []string{"12"}, false},
		{"samples", "v,7,123,abc,0,0,0,0,0,0,0,\"\",true\n", []string{"7", "123"}, false},
		{"router_requests", "0123456789abcdef0123456789abcdef,,,,,,,,,,\n", []string{"'0123456789abcdef0123456789abcdef'::uuid"}, false},
		{"router_requests", "0123'; drop table runs; --,,,,,,,,,,\n", nil, true},
		{"runs", "20261122-130501-3f9a,n,f,s,r,,,,0000abcd,drain,\"name: n\nversion: 1\n\"\n", []string{"'20261122-130501-3f9a'"}, false},
		{"samples", "v,7,123\n", nil, true},
	} {
		got, err := tableDefs[c.table].keyLiterals([]byte(c.record))
		if (err != nil) != c.err || !slices.Equal(got, c.want) {
			t.Errorf("%s keyLiterals(%q) = %q, %v; want %q (error %t)", c.table, c.record, got, err, c.want, c.err)
		}
	}
}

// FuzzTableFile feeds a CSV stream to a tableFile in arbitrary pieces, cuts it after an
// arbitrary byte, rewinds, and continues with the records not yet whole: the file must
// end up as the stream, the checksum and record count must match it.
func FuzzTableFile(f *testing.F) {
	f.Add([]byte("a,b\n1,\"x\ny\"\n2,\"\"\"\"\n"), uint16(7), uint16(13), uint8(3))
	f.Add([]byte("h\n\"\n\n\"\n"), uint16(3), uint16(4), uint8(1))
	f.Fuzz(func(t *testing.T, seed []byte, cutAt, chunk uint16, fields uint8) {
		stream, recs := csvStream(seed, int(fields)%5+1)
		tmp, err := os.CreateTemp(t.TempDir(), "f")
		if err != nil {
			t.Fatal(err)
		}
		defer tmp.Close()
		tf := newTableFile(tmp)
		feed := func(b []byte) {
			step := int(chunk)%17 + 1
			for len(b) > 0 {
				n := min(step, len(b))
				tf.Write(b[:n])
				b = b[n:]
			}
		}
		cut := int(cutAt) % (len(stream) + 1)
		feed(stream[:cut])
		if err := tf.rewind(); err != nil {
			t.Fatal(err)
		}
		if tf.committed > int64(cut) || !bytes.HasPrefix(stream, stream[:tf.committed]) {
			t.Fatalf("committed %d after %d bytes", tf.committed, cut)
		}
		if tf.records > 0 && !bytes.HasSuffix(stream[:tf.committed], tf.last) {
			t.Fatalf("last record %q does not end the committed bytes", tf.last)
		}
		feed(stream[tf.committed:]) // what a resumed COPY sends: the records after the last whole one
		if err := tf.finish(); err != nil {
			t.Fatal(err)
		}
		body, _ := os.ReadFile(tmp.Name())
		sum := sha256.Sum256(body)
		if !bytes.Equal(body, stream) || tf.sum() != hex.EncodeToString(sum[:]) || tf.records != int64(len(recs)) {
			t.Fatalf("file %q (%d records, sum %s), want %q (%d records)", body, tf.records, tf.sum(), stream, len(recs))
		}
		// The last record parses back to the values written.
		if len(recs) > 0 {
			got, err := parseRecord(tf.last)
			if err != nil || !slices.Equal(got, recs[len(recs)-1]) {
				t.Fatalf("parseRecord(%q) = %q, %v; want %q", tf.last, got, err, recs[len(recs)-1])
			}
		}
	})
}

// csvStream turns fuzz bytes into CSV records as PostgreSQL writes them (fields quoted
// when they hold a comma, quote, CR or LF, or are empty) and returns them with the
// records' values.
func csvStream(seed []byte, fields int) ([]byte, [][]string) {
	var b bytes.Buffer
	var recs [][]string
	var rec []string
	vals := strings.Split(string(seed), "|")
	for i, v := range vals {
		rec = append(rec, v)
		if strings.ContainsAny(v, ",\"\r\n") || v == "" {
			b.WriteString(`"` + strings.ReplaceAll(v, `"`, `""`) + `"`)
		} else {
			b.WriteString(v)
		}
		if (i+1)%fields == 0 || i == len(vals)-1 {
			b.WriteByte('\n')
			recs, rec = append(recs, rec), nil
		} else {
			b.WriteByte(',')
		}
	}
	return b.Bytes(), recs
}
