package resultsdb

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/pgserver"
	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/internal/procstat"
	"github.com/cf-benchmark/cf-benchmark/internal/sample"
	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
)

// benchRows is the number of samples each iteration ingests.
const benchRows = 1 << 20

func benchSample(i int) sample.Sample {
	return sample.Sample{Seq: uint32(i + 1), IntendedUS: int64(i) * 50, StartDelayUS: int32(i % 13), LatencyUS: int32(800 + i%5000),
		Bytes: 100, Status: 200, Step: uint8(i >> 18), Request: uint8(i % 3)}
}

// BenchmarkIngest compares the sample writer's binary COPY with psql's \copy of the
// same rows from a CSV file, on the same server: the goal is at least 80% of psql's
// rate (make bench records the ratio in BENCHMARKS.md).
func BenchmarkIngest(b *testing.B) {
	ctx := context.Background()
	dsn := testpg.DSN(b)
	s, err := Open(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()

	b.Run("writer", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			_, worker := newWorker(b, s)
			w, err := s.NewSampleWriter(worker, WriterOptions{MaxBuffered: benchRows})
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			for i := range benchRows {
				w.Add(benchSample(i))
			}
			if err := w.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*benchRows)/b.Elapsed().Seconds(), "rows/s")
	})

	b.Run("psql", func(b *testing.B) {
		psql, err := exec.LookPath("psql")
		if err != nil {
			b.Skip("psql is not installed (Debian package postgresql-client)")
		}
		path := filepath.Join(b.TempDir(), "samples.csv")
		for range b.N {
			b.StopTimer()
			_, worker := newWorker(b, s)
			writeCSV(b, path, worker)
			b.StartTimer()
			out, err := exec.Command(psql, dsn, "-v", "ON_ERROR_STOP=1", "-c",
				`\copy samples (`+sampleColumns+`) FROM '`+path+`' (FORMAT csv)`).CombinedOutput()
			if err != nil {
				b.Fatalf("psql: %v\n%s", err, out)
			}
		}
		b.ReportMetric(float64(b.N*benchRows)/b.Elapsed().Seconds(), "rows/s")
	})
}

func writeCSV(b *testing.B, path string, worker int32) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := range benchRows {
		s := benchSample(i)
		fmt.Fprintf(w, "%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%t\n", worker, s.Seq, s.Step, s.Request, s.IntendedUS, s.StartDelayUS,
			s.LatencyUS, s.Status, s.Bytes, s.Err, s.Warmup())
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// ingestWriters is how many writers COPY at once in BenchmarkIngestCitus: a relay runs
// two COPYs at a time (relay.Config.Committers), so this is two relays' worth.
const ingestWriters = 4

// cachedConns is citus.max_cached_conns_per_worker on BenchmarkIngestCitus' clusters
// (but the one with Citus' defaults): citus.max_adaptive_executor_pool_size's default,
// so that every connection a COPY opens to a worker stays open for the next one.
const cachedConns = 16

// clockTicks is USER_HZ, the unit of procstat's CPU ticks: 100 on Linux.
const clockTicks = 100

// BenchmarkIngestCitus is what ingestion costs on one PostgreSQL server (plain) and on
// Citus clusters of one and two workers (the store's own layout: samples distributed by
// seq over 32 shards), each a server or cluster of its own: ingestWriters sample
// writers COPY benchRows rows between them at once, in the writer's default batches of
// 32,768 rows, through one store, as relays do. Besides rows/s it reports what
// transfers from this one machine, where every node shares the same cores, to a real
// cluster: the servers' CPU seconds per million rows (each node's postmaster and its
// children, from /proc: Linux only), the WAL bytes per row (the advance of every node's
// WAL position) and the server sessions started per million rows. BENCHMARKS.md turns
// them into a cluster's size.
//
// Unlike BenchmarkIngest, whose two clients share one throwaway server, these servers
// are not Fast: fsync, full-page writes and synchronous commit are on, as on a results
// store, because the WAL bytes and the CPU per row are the figures to project and Fast
// would leave out the full-page images and the flushes (a Citus COPY of many shards
// commits with two-phase commit: a flushed PREPARE on the workers). All of them use the
// same settings.
//
// The clusters keep the connections a COPY opens to the workers (cachedConns), as a
// results database on Citus should be set up (docs/citus.md). With Citus' default of one
// cached connection per worker, every COPY through the coordinator starts up to 16
// backends on each worker and ends them at commit; citus-1worker-defaults measures that,
// with a quarter of the rows, since its cost is per COPY, not per row.
func BenchmarkIngestCitus(b *testing.B) {
	testtier.External(b, "PostgreSQL and Citus servers (scripts/install-citus.sh)")
	for _, c := range []struct {
		name     string
		workers  int  // 0: one plain server
		defaults bool // Citus' default of 1 cached connection per worker
		rows     int  // per iteration
	}{
		{"plain", 0, false, benchRows},
		{"citus-1worker", 1, false, benchRows},
		{"citus-2workers", 2, false, benchRows},
		{"citus-1worker-defaults", 1, true, benchRows / 4},
	} {
		dir := testpg.Dir(b)
		var db *ingestDB
		b.Cleanup(func() { db.close() })
		b.Run(c.name, func(b *testing.B) {
			// Started once for the sub-benchmark's runs (the first of 1 iteration, then
			// b.N) and stopped once they are done.
			if db == nil {
				var err error
				if db, err = startIngestDB(dir, c.workers, !c.defaults); err != nil {
					b.Fatal(err)
				}
			}
			db.ingest(b, c.rows)
		})
		db.close()
	}
}

// ingestDB is a server or cluster that BenchmarkIngestCitus started, its store and a
// connection to each node to read the node's figures.
type ingestDB struct {
	dir     string
	stop    []func() error // what was started, in order
	store   *Store
	nodes   []ingestNode // the server, or the coordinator and then the workers
	workers int
	stored  int // rows in samples
	closed  bool
}

type ingestNode struct {
	pid  int
	conn *pgx.Conn
}

// startIngestDB starts, in dir, a server (workers 0) or a Citus cluster of workers
// workers, keeping a COPY's connections to the workers when cache is true, with a
// database of the results schema; on error it stops what it started.
func startIngestDB(dir string, workers int, cache bool) (_ *ingestDB, err error) {
	ctx := context.Background() // the servers live until close
	db := &ingestDB{dir: dir, workers: workers}
	defer func() {
		if err != nil {
			db.close()
		}
	}()
	const name = "ingest"
	var pids []int
	var dsns []string // the nodes' URLs, the first the one clients use
	if workers == 0 {
		srv := pgserver.New(pgserver.Options{Dir: dir})
		if err := srv.Start(ctx); err != nil {
			return nil, err
		}
		db.stop = append(db.stop, srv.Close)
		if err := srv.CreateDatabase(ctx, name); err != nil {
			return nil, err
		}
		pids, dsns = []int{srv.PID()}, []string{srv.DSN(name)}
	} else {
		c := pgserver.NewCluster(pgserver.Options{Dir: dir}, workers)
		if err := c.Start(ctx); err != nil {
			return nil, err
		}
		db.stop = append(db.stop, c.Close)
		if err := c.CreateDatabase(ctx, name); err != nil {
			return nil, err
		}
		pids, dsns = []int{c.Coordinator().PID()}, []string{c.DSN(name)}
		for i, dsn := range c.WorkerDSNs(name) {
			pids, dsns = append(pids, c.Worker(i).PID()), append(dsns, dsn)
		}
	}
	for i, dsn := range dsns {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return nil, err
		}
		db.stop = append(db.stop, func() error { return conn.Close(context.Background()) })
		db.nodes = append(db.nodes, ingestNode{pid: pids[i], conn: conn})
	}
	if workers > 0 && cache {
		// A default for the sessions opened from now on: the store's.
		if _, err := db.nodes[0].conn.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s SET citus.max_cached_conns_per_worker = %d`, name, cachedConns)); err != nil {
			return nil, err
		}
	}
	if db.store, err = OpenPool(ctx, dsns[0], ingestWriters); err != nil {
		return nil, err
	}
	db.stop = append(db.stop, func() error { db.store.Close(); return nil })
	return db, nil
}

// close stops what startIngestDB started, the last first, and removes its files. It
// may be called again, and on nil.
func (db *ingestDB) close() {
	if db == nil || db.closed {
		return
	}
	db.closed = true
	for i := len(db.stop) - 1; i >= 0; i-- {
		db.stop[i]()
	}
	os.RemoveAll(db.dir)
}

// ingestReading is what the nodes have done so far: their WAL positions, the sessions
// started (pg_stat_database), and their CPU ticks (nil when /proc cannot be read).
type ingestReading struct {
	lsn      []string
	sessions []int64
	ticks    []uint64
}

func (db *ingestDB) read(ctx context.Context) (ingestReading, error) {
	var r ingestReading
	for _, n := range db.nodes {
		var lsn string
		var sessions int64
		err := n.conn.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text, (SELECT sum(sessions)::bigint FROM pg_stat_database)`).Scan(&lsn, &sessions)
		if err != nil {
			return r, fmt.Errorf("read a node's figures: %w", err)
		}
		r.lsn, r.sessions = append(r.lsn, lsn), append(r.sessions, sessions)
	}
	for _, n := range db.nodes {
		t, err := procstat.TreeTicks(n.pid)
		if err != nil { // no /proc: no CPU figures
			r.ticks = nil
			break
		}
		r.ticks = append(r.ticks, t)
	}
	return r, nil
}

// ingest runs b.N iterations of ingestWriters writers storing rows rows between them at
// once, and reports rows/s, CPU seconds per million rows, WAL bytes per row, sessions
// per million rows, and the table's and index's bytes per row stored so far.
func (db *ingestDB) ingest(b *testing.B, rows int) {
	ctx := context.Background()
	perWriter := rows / ingestWriters
	wal := make([]float64, len(db.nodes))
	ticks := make([]int64, len(db.nodes))
	var sessions int64
	cpu := true
	for range b.N {
		b.StopTimer()
		writers := make([]*SampleWriter, ingestWriters)
		for i := range writers {
			_, worker := newWorker(b, db.store)
			w, err := db.store.NewSampleWriter(worker, WriterOptions{MaxBuffered: perWriter})
			if err != nil {
				b.Fatal(err)
			}
			for j := range perWriter {
				w.Add(benchSample(j))
			}
			writers[i] = w
		}
		before, err := db.read(ctx)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		errs := make([]error, len(writers))
		var wg sync.WaitGroup
		for i, w := range writers {
			wg.Go(func() { errs[i] = w.Flush(ctx) })
		}
		wg.Wait()
		b.StopTimer()
		if err := errors.Join(errs...); err != nil {
			b.Fatal(err)
		}
		for _, w := range writers {
			if w.Written() != uint64(perWriter) {
				b.Fatalf("a writer stored %d rows, want %d", w.Written(), perWriter)
			}
			db.stored += perWriter
		}
		// The backends that served a COPY's connections between the nodes end after
		// it; a process that ends while the tree is read is missed, so let them end.
		time.Sleep(200 * time.Millisecond)
		after, err := db.read(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for i, n := range db.nodes {
			var bytes float64
			if err := n.conn.QueryRow(ctx, `SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::float8`, after.lsn[i], before.lsn[i]).Scan(&bytes); err != nil {
				b.Fatal(err)
			}
			wal[i] += bytes
			sessions += after.sessions[i] - before.sessions[i]
		}
		if cpu = cpu && before.ticks != nil && after.ticks != nil; cpu {
			for i := range ticks {
				ticks[i] += int64(after.ticks[i]) - int64(before.ticks[i])
			}
		}
	}
	n := float64(b.N * ingestWriters * perWriter)
	b.ReportMetric(n/b.Elapsed().Seconds(), "rows/s")
	sum := func(xs []float64) (s float64) {
		for _, x := range xs {
			s += x
		}
		return s
	}
	b.ReportMetric(sum(wal)/n, "wal-B/row")
	size := `SELECT pg_total_relation_size('samples')` // table, index and free space map
	if db.workers > 0 {
		size = `SELECT citus_total_relation_size('samples')` // over every shard
	}
	var bytes float64
	if err := db.nodes[0].conn.QueryRow(ctx, size+`::float8`).Scan(&bytes); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(bytes/float64(db.stored), "disk-B/row")
	b.ReportMetric(float64(sessions)/(n/1e6), "sessions/Mrows")
	if db.workers > 0 {
		b.ReportMetric(wal[0]/n, "coord-wal-B/row")
	}
	if !cpu {
		return
	}
	cpuS := make([]float64, len(ticks)) // CPU seconds per million rows
	for i, t := range ticks {
		cpuS[i] = float64(t) / clockTicks / (n / 1e6)
	}
	b.ReportMetric(sum(cpuS), "cpu-s/Mrows")
	if db.workers > 0 {
		b.ReportMetric(cpuS[0], "coord-cpu-s/Mrows")
		b.ReportMetric(sum(cpuS[1:]), "workers-cpu-s/Mrows")
		for i, c := range cpuS[1:] {
			b.ReportMetric(c, fmt.Sprintf("w%d-cpu-s/Mrows", i))
		}
	}
}
