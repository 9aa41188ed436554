package resultsdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/pgserver"
	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/internal/sample"
	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { testpg.Main(m) }

func openStore(t *testing.T) (*Store, string) {
	t.Helper()
	dsn := testpg.DSN(t)
	s, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, dsn
}

func TestMigrateIsIdempotentAndSafeConcurrently(t *testing.T) {
	ctx := context.Background()
	_, dsn := openStore(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(ctx, dsn)
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent Open: %v", err)
		}
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n, v int
	if err := conn.QueryRow(ctx, `SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &v); err != nil {
		t.Fatal(err)
	}
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	// One row per migration, each once (versions may have gaps while branches land).
	if n != len(ms) || v != SchemaVersion() {
		t.Fatalf("schema_migrations has %d rows up to version %d, want %d up to %d", n, v, len(ms), SchemaVersion())
	}

	// A database migrated by a newer binary must be refused, not written into.
	if _, err := conn.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES (9999, 'future')`); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, dsn); err == nil {
		t.Fatal("Open accepted a schema newer than the binary")
	}
}

func TestOpenRejectsMalformedDSNWithoutEchoingIt(t *testing.T) {
	_, err := Open(context.Background(), "postgres://user:s3cret@host:notaport/db")
	if err == nil {
		t.Fatal("Open accepted a malformed DSN")
	}
	if got := err.Error(); got != "results db: malformed connection string (want postgres://user:password@host:port/db)" {
		t.Fatalf("error %q", got)
	}
}

func TestCreateRunGeneratesDistinctIDs(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	epoch := time.Now()
	seen := map[string]bool{}
	for range 20 {
		r, err := s.CreateRun(ctx, "demo", "demo.yml", "version: 1", epoch)
		if err != nil {
			t.Fatal(err)
		}
		if !ValidRunID(r.ID) || seen[r.ID] || r.TraceTag == 0 {
			t.Fatalf("run id %q (seen before: %v), trace tag %x", r.ID, seen[r.ID], r.TraceTag)
		}
		seen[r.ID] = true
	}
	for _, bad := range []string{"", "42", "20261122-130501-3F9A", "20261122-130501-3f9a'; drop table runs; --"} {
		if ValidRunID(bad) {
			t.Errorf("ValidRunID(%q) = true", bad)
		}
	}
	if _, err := s.GetRun(ctx, "20000101-000000-0000"); err == nil {
		t.Fatal("GetRun of an unknown id succeeded")
	}
}

// newWorker creates a run with one step and one worker.
func newWorker(t testing.TB, s *Store) (*Run, int32) {
	t.Helper()
	ctx := context.Background()
	run, err := s.CreateRun(ctx, "demo", "demo.yml", "version: 1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.RegisterWorker(ctx, Worker{RunID: run.ID, Variant: "v", AppName: "gen", InstanceIndex: 0})
	if err != nil {
		t.Fatal(err)
	}
	return run, id
}

func TestSampleWriterStoresEverySampleExactly(t *testing.T) {
	s, dsn := openStore(t)
	ctx := context.Background()
	_, worker := newWorker(t, s)
	w, err := s.NewSampleWriter(worker, WriterOptions{BatchSize: 1000, FlushEvery: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	w.Start(ctx)
	const n = 25_000
	var wg sync.WaitGroup
	for g := range 5 { // concurrent producers, as users of a generator are
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += 5 {
				w.Add(sample.Sample{Seq: uint32(i + 1), IntendedUS: int64(i) * 1000, StartDelayUS: int32(i % 7), LatencyUS: int32(i),
					Bytes: int32(i % 100), Status: int16(200 + i%3), Step: uint8(i % 4), Request: uint8(i % 2), Err: sample.ErrClass(i % 8),
					Flags: uint8(i % 2)})
			}
		}()
	}
	wg.Wait()
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if w.Written() != n || w.Dropped() != 0 || w.Buffered() != 0 {
		t.Fatalf("written %d dropped %d buffered %d, want %d/0/0", w.Written(), w.Dropped(), w.Buffered(), n)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var bad int
	// Every column must round-trip: recompute each value from seq and compare.
	err = conn.QueryRow(ctx, `SELECT count(*) FROM samples WHERE worker_id = $1 AND NOT (
		intended_us = (seq-1)*1000 AND start_delay_us = (seq-1)%7 AND latency_us = seq-1 AND bytes = (seq-1)%100 AND
		status = 200+(seq-1)%3 AND step = (seq-1)%4 AND request = (seq-1)%2 AND error = (seq-1)%8 AND warmup = ((seq-1)%2 = 1))`, worker).Scan(&bad)
	if err != nil {
		t.Fatal(err)
	}
	var count, distinct int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT seq) FROM samples WHERE worker_id = $1`, worker).Scan(&count, &distinct); err != nil {
		t.Fatal(err)
	}
	if count != n || distinct != n || bad != 0 {
		t.Fatalf("stored %d rows (%d distinct seq), %d with wrong values; want %d", count, distinct, bad, n)
	}
}

func TestSampleWriterRetryDoesNotDuplicate(t *testing.T) {
	s, dsn := openStore(t)
	ctx := context.Background()
	_, worker := newWorker(t, s)
	w, err := s.NewSampleWriter(worker, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	batch := []sample.Sample{{Seq: 1, Status: 200}, {Seq: 2, Status: 200}}
	// As if the first COPY committed but its acknowledgement was lost: the same rows
	// arrive again, together with a new one.
	if err := s.CopySamples(ctx, w.worker, [][]sample.Sample{batch}); err != nil {
		t.Fatal(err)
	}
	if err := s.CopySamples(ctx, w.worker, [][]sample.Sample{append(batch, sample.Sample{Seq: 3, Status: 503})}); err != nil {
		t.Fatalf("retry of a partly stored batch: %v", err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM samples WHERE worker_id = $1`, worker).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Fatalf("%d rows stored, want 3", n)
	}
}

func TestSampleWriterDropsAndCountsBeyondItsBound(t *testing.T) {
	s, _ := openStore(t)
	w, err := s.NewSampleWriter(1, WriterOptions{MaxBuffered: 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 15 {
		w.Add(sample.Sample{Seq: uint32(i + 1)})
	}
	if w.Buffered() != 10 || w.Dropped() != 5 {
		t.Fatalf("buffered %d dropped %d, want 10 and 5", w.Buffered(), w.Dropped())
	}
}

func TestStepSummaryFromRows(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	run, worker := newWorker(t, s)
	start := run.Epoch
	if err := s.StartStep(ctx, Step{RunID: run.ID, Variant: "v", Index: 0, Instances: 1, Users: 2, Started: start, WarmupUntil: start.Add(time.Second),
		Ends: start.Add(11 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	w, err := s.NewSampleWriter(worker, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Latencies 1..100 ms, one of them failed, plus warm-up samples that must not count.
	for i := 1; i <= 100; i++ {
		smp := sample.Sample{Seq: uint32(i), LatencyUS: int32(i * 1000), Status: 200, Bytes: 10}
		if i == 50 {
			smp.Status = 500
		}
		w.Add(smp)
	}
	for i := 101; i <= 110; i++ {
		w.Add(sample.Sample{Seq: uint32(i), LatencyUS: 9_000_000, Status: 0, Err: sample.ErrTimeout, Flags: sample.FlagWarmup})
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// Ended late (waiting for samples, flushing app timings): the window stays the plan's.
	if err := s.EndStep(ctx, run.ID, "v", 0, start.Add(13*time.Second), ""); err != nil {
		t.Fatal(err)
	}
	live, err := s.StepSummary(ctx, run.ID, "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	// Connections to the apps' database: the busiest reading inside the window counts.
	for _, c := range []DBConnections{{At: start, InUse: 99, MaxConnections: 100}, {At: start.Add(5 * time.Second), InUse: 40, ToDatabase: 30,
		MaxConnections: 100}, {At: start.Add(6 * time.Second), InUse: 20, MaxConnections: 100}} {
		c.RunID, c.Service = run.ID, "db"
		if err := s.AddDBConnections(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	stored, err := s.ComputeStepMetrics(ctx, run.ID, "v", 0, []AppRole{{Name: "app", Role: RoleApp}})
	if err != nil {
		t.Fatal(err)
	}
	read, err := s.StepSummary(ctx, run.ID, "v", 0)
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	want := StepSummary{Variant: "v", Step: 0, Instances: 1, InstancesSeen: 1, Users: 2, Seconds: 10, Count: 100, Errors: 1, Bytes: 1000,
		Mean: 50500 * time.Microsecond, P50: 50 * ms, P90: 90 * ms, P99: 99 * ms, P999: 100 * ms, Min: ms, Max: 100 * ms, Throughput: 10}
	for name, got := range map[string]StepSummary{"live": live, "computed": stored, "read back": read} {
		if got.ErrorsByClass["http_500"] != 1 || len(got.ErrorsByClass) != 1 {
			t.Errorf("%s: errors by class = %v, want http_500: 1", name, got.ErrorsByClass)
		}
		start := start.Truncate(time.Microsecond) // as Postgres keeps it
		if !got.From.Equal(start.Add(time.Second)) || !got.To.Equal(start.Add(11*time.Second)) {
			t.Errorf("%s: window %s..%s, want %s..%s", name, got.From, got.To, start.Add(time.Second), start.Add(11*time.Second))
		}
		if got.Stored != (name != "live") {
			t.Errorf("%s: stored = %v", name, got.Stored)
		}
		if name != "live" && (len(got.Apps) != 1 || got.Apps[0].App != "app" || got.Apps[0].CPUSource != "" || got.Apps[0].CPUMeanCores != nil) {
			t.Errorf("%s: apps = %+v, want app without readings", name, got.Apps)
		}
		if name != "live" && (got.DBConnections == nil || *got.DBConnections != 40 || *got.DBMaxConnections != 100) {
			t.Errorf("%s: db connections %v of %v, want 40 of 100", name, got.DBConnections, got.DBMaxConnections)
		}
		got.ErrorsByClass, got.From, got.To, got.Stored, got.Apps = nil, time.Time{}, time.Time{}, false, nil
		got.DBConnections, got.DBMaxConnections = nil, nil
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s summary\n got %+v\nwant %+v", name, got, want)
		}
	}
	if _, err := s.StepSummary(ctx, run.ID, "v", 1); err == nil {
		t.Fatal("summary of a missing step succeeded")
	}
	// The step's per-second series is stored with its metrics, warm-up included: all
	// 110 requests intended in second 0, 11 failed, p50 the 55th latency (55 ms), p99
	// the 109th (9 s).
	var secs, counts, errs, p50, p99 []int64
	if err := s.Pool().QueryRow(ctx, `SELECT second, count, errors, p50_us, p99_us FROM step_series WHERE run_id = $1 AND variant = 'v' AND step = 0`,
		run.ID).Scan(&secs, &counts, &errs, &p50, &p99); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(secs, counts, errs, p50, p99) != "[0] [110] [11] [55000] [9000000]" {
		t.Errorf("stored series: seconds %v, counts %v, errors %v, p50 %v, p99 %v; want [0] [110] [11] [55000] [9000000]", secs, counts, errs, p50, p99)
	}
}

// TestSampleWriterSurvivesADatabaseRestart stops the results DB in the middle of a
// stream of samples and starts it again: samples taken meanwhile go to the spill file
// and to memory, and all of them are stored once it is back.
func TestSampleWriterSurvivesADatabaseRestart(t *testing.T) {
	testtier.External(t, "a real PostgreSQL server")
	ctx := context.Background()
	dir := testpg.Dir(t)
	srv := pgserver.New(pgserver.Options{Dir: dir, Fast: true})
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Close() }()
	s, err := Open(ctx, srv.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, worker := newWorker(t, s)
	spill := filepath.Join(t.TempDir(), "spill")
	// A spill file for 3,000 samples and room for 2,000 in memory: 5,000 in all.
	w, err := s.NewSampleWriter(worker, WriterOptions{BatchSize: 500, FlushEvery: 5 * time.Millisecond,
		MaxBuffered: 2000, SpillPath: spill, MaxSpillBytes: 3000 * 32})
	if err != nil {
		t.Fatal(err)
	}
	w.Start(ctx)
	seq := uint32(0)
	add := func(n int) {
		for range n {
			seq++
			w.Add(sample.Sample{Seq: seq, Status: 200})
		}
	}
	add(1000)
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	port := srv.Port()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	spilled := func(want uint64) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); w.Spilled() < want; {
			if time.Now().After(deadline) {
				t.Fatalf("%d samples spilled while the database was down, want %d", w.Spilled(), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	add(1000)
	spilled(1000)
	add(2000)
	spilled(3000) // the spill file is full now
	add(2000)     // and memory takes the rest, up to its bound
	if w.Buffered() != 2000 || w.Dropped() != 0 {
		t.Fatalf("in memory %d, dropped %d; want 2000 and 0", w.Buffered(), w.Dropped())
	}
	add(1) // one beyond every bound is dropped, and counted
	if w.Dropped() != 1 {
		t.Fatalf("dropped %d, want 1", w.Dropped())
	}
	seq-- // that one will not be stored
	srv = pgserver.New(pgserver.Options{Dir: dir, Fast: true, Port: port})
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(spill); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("spill file left behind after a complete flush: %v", err)
	}
	var n, distinct int
	if err := s.pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT seq) FROM samples WHERE worker_id = $1`, worker).Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	if w.Dropped() != 1 || n != int(seq) || distinct != n || w.Written() != uint64(n) {
		t.Fatalf("stored %d (%d distinct), written %d, dropped %d; want all %d", n, distinct, w.Written(), w.Dropped(), seq)
	}
}

func TestSpillFileRoundTrip(t *testing.T) {
	f, err := openSpill(filepath.Join(t.TempDir(), "s"), 3*recordSize)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in := []sample.Sample{
		{IntendedUS: -5, Seq: 1, StartDelayUS: -1, LatencyUS: 1 << 30, Bytes: 7, Status: 503, Step: 255, Request: 3, Err: sample.ErrReset, Flags: sample.FlagWarmup},
		{IntendedUS: 1 << 40, Seq: 1<<32 - 1},
	}
	if err := f.Append([][]sample.Sample{in}); err != nil {
		t.Fatal(err)
	}
	if err := f.Append([][]sample.Sample{in[:1], in[1:]}); !errors.Is(err, ErrSpillFull) || f.Len() != 2 || f.Room() != 1 {
		t.Fatalf("append beyond the bound: %v, len %d room %d", err, f.Len(), f.Room())
	}
	out, err := f.Peek(5)
	if err != nil || !reflect.DeepEqual(in, out) {
		t.Fatalf("Peek = %+v, %v; want %+v", out, err, in)
	}
	if err := f.Consume(1); err != nil || f.Len() != 1 {
		t.Fatalf("after consuming one: len %d, %v", f.Len(), err)
	}
	if err := f.Consume(1); err != nil || f.Len() != 0 || f.Room() != 3 {
		t.Fatalf("an emptied file must start over: len %d room %d, %v", f.Len(), f.Room(), err)
	}
}

// A variant's resolved configuration comes back as it was recorded; a url: variant has
// none, and its listed name is its own.
func TestRunVariantConfigRoundTrip(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	run, err := s.CreateRun(ctx, "exp", "exp.yml", "version: 1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cell := RunVariant{RunID: run.ID, Variant: "pool-60-1g", GeneratorApp: "exp-gen-pool-60-1g", AppName: "bulletin-java-60-1g", AppGUID: "g",
		TargetURL: "http://bulletin-java-60-1g.apps", Workload: []byte(`{"model":"closed"}`), Listed: "pool",
		Matrix: map[string]string{"env.DB_POOL_SIZE": "60", "memory": "1G"},
		App:    &AppConfig{Manifest: "applications:\n- name: bulletin-java-60-1g\n", Env: map[string]string{"DB_POOL_SIZE": "60"}, MemoryMB: 1024, Instances: 2}}
	plain := RunVariant{RunID: run.ID, Variant: "api", GeneratorApp: "exp-gen-api", TargetURL: "http://api", Workload: []byte(`{}`)}
	for _, v := range []RunVariant{cell, plain} {
		if err := s.AddRunVariant(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.RunVariants(ctx, run.ID)
	if err != nil || len(got) != 2 {
		t.Fatalf("RunVariants = %v, %v", got, err)
	}
	plain.Listed, plain.Config, plain.Repeat = "api", "api", 1
	cell.Config, cell.Repeat = "pool-60-1g", 1
	for i, want := range []RunVariant{plain, cell} {
		g := got[i]
		g.Workload, want.Workload = nil, nil // jsonb reformats
		if !reflect.DeepEqual(g, want) {
			t.Errorf("variant %d:\n got  %+v %+v\n want %+v %+v", i, g, g.App, want, want.App)
		}
	}
}

// The repeats of a variant share its generator app; each repeat's row is added as its
// ramp begins, and the app's instances follow the newest repeat of the newest run.
func TestAssignmentFollowsTheLatestRepeat(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	run, err := s.CreateRun(ctx, "exp", "exp.yml", "version: 1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []RunVariant{
		{RunID: run.ID, Variant: "a#1", Config: "a", Repeat: 1, GeneratorApp: "exp-gen-a", TargetURL: "http://a", Workload: []byte(`{}`)},
		{RunID: run.ID, Variant: "b#1", Config: "b", Repeat: 1, GeneratorApp: "exp-gen-b", TargetURL: "http://b", Workload: []byte(`{}`)},
	} {
		if err := s.AddRunVariant(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	if a, err := s.Assignment(ctx, "exp-gen-a"); err != nil || a == nil || a.Variant != "a#1" || a.Repeat != 1 {
		t.Fatalf("Assignment(exp-gen-a) in repeat 1 = %+v, %v; want a#1", a, err)
	}
	if err := s.AddRunVariant(ctx, RunVariant{RunID: run.ID, Variant: "a#2", Config: "a", Repeat: 2, GeneratorApp: "exp-gen-a",
		TargetURL: "http://a", Workload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	for app, want := range map[string]string{"exp-gen-a": "a#2", "exp-gen-b": "b#1"} {
		if a, err := s.Assignment(ctx, app); err != nil || a == nil || a.Variant != want {
			t.Errorf("Assignment(%s) = %+v, %v; want %s", app, a, err, want)
		}
	}
	vs, err := s.RunVariants(ctx, run.ID)
	if err != nil || len(vs) != 3 || vs[1].Variant != "a#2" || vs[1].Config != "a" || vs[1].Repeat != 2 {
		t.Errorf("RunVariants = %+v, %v; want a#2 recorded as repeat 2 of a", vs, err)
	}
}

// TestPlanStepTimesTheWindowFromItsWrite: a plan whose write waited (here behind a lock,
// on a loaded host behind a stalled connection or a retry through an outage) still
// begins lead after it was stored, not after the caller asked: computed before the
// wait, a window could be over before any instance could read it.
func TestPlanStepTimesTheWindowFromItsWrite(t *testing.T) {
	s, dsn := openStore(t)
	ctx := context.Background()
	run, _ := newWorker(t, s)
	locker, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(ctx)
	tx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE steps IN SHARE MODE`); err != nil { // holds off every insert
		t.Fatal(err)
	}
	const lead, warmup, hold = 500 * time.Millisecond, time.Second, 4 * time.Second
	type planned struct {
		st  Step
		err error
	}
	done := make(chan planned, 1)
	go func() {
		st, err := s.PlanStep(ctx, Step{RunID: run.ID, Variant: "v", Index: 0, Instances: 2, Users: 3, Rate: 10}, lead, warmup, hold)
		done <- planned{st, err}
	}()
	// Wait until the plan's write waits for the lock, then hold it 2 s more.
	for {
		var waiting bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE relation = 'steps'::regclass AND NOT granted)`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	var released time.Time
	if err := tx.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&released); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	p := <-done
	if p.err != nil {
		t.Fatal(p.err)
	}
	st := p.st
	if st.Started.Before(released.Add(lead)) {
		t.Errorf("the step begins %v after the write could proceed, want at least the lead %v", st.Started.Sub(released), lead)
	}
	if st.WarmupUntil.Sub(st.Started) != warmup || st.Ends.Sub(st.Started) != hold || st.Instances != 2 || st.Users != 3 || st.Rate != 10 {
		t.Errorf("plan stored %+v, want warm-up %v, hold %v, 2 instances of 3 users at 10 req/s", st, warmup, hold)
	}
	// Planned again (an attempt whose answer was lost): the first plan stands.
	again, err := s.PlanStep(ctx, Step{RunID: run.ID, Variant: "v", Index: 0, Instances: 5, Users: 3}, lead, warmup, hold)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Started.Equal(st.Started) || again.Instances != 2 {
		t.Errorf("planned again: %+v, want the first plan %+v", again, st)
	}
}
