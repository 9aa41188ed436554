// Package export writes the tables of one run to CSV files with COPY … TO STDOUT, streamed
// straight to disk so memory stays flat whatever the size, plus a manifest.json with the
// run's metadata, row counts and SHA-256 checksums.
package export

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// Tables lists the exportable tables in the order they are written.
var Tables = []string{"runs", "steps", "workers", "worker_steps", "samples", "container_metrics", "router_requests", "app_timings"}

// queries select one run's rows of each table. Column units are in the names (_us, _bytes,
// _s); trace ids are 32 hex digits, as sent in X-B3-TraceId. %[1]s is the run id literal.
var queries = map[string]string{
	"runs": `SELECT id, name, spec_file, status, reason, epoch, started_at, ended_at, lpad(to_hex(trace_tag), 8, '0') AS trace_tag
		FROM runs WHERE id = %[1]s`,
	"steps": `SELECT variant, idx AS step, instances, users, started_at, warmup_until, ends_at, ended_at, stop_reason
		FROM steps WHERE run_id = %[1]s ORDER BY started_at, variant, idx`,
	"workers": `SELECT id AS worker_id, variant, app_name, instance_index, instance_guid, host, started_at, heartbeat_at, stopped_at,
		sent, stored, spilled, missed, dropped
		FROM workers WHERE run_id = %[1]s ORDER BY id`,
	"worker_steps": `SELECT ws.worker_id, w.variant, ws.step, ws.joined_at, ws.skew_us, ws.late_join, ws.sent, ws.missed, ws.done_at
		FROM worker_steps ws JOIN workers w ON w.id = ws.worker_id WHERE w.run_id = %[1]s ORDER BY w.variant, ws.step, ws.worker_id`,
	"samples": `SELECT w.variant, s.worker_id, s.seq,
		lpad(to_hex(r.trace_tag), 8, '0') || lpad(to_hex(s.worker_id >> 12), 4, '0') || '4' || lpad(to_hex(s.worker_id & 4095), 3, '0')
			|| lpad(to_hex(s.seq), 16, '0') AS trace_id,
		s.step, s.request, s.intended_us, s.start_delay_us, s.latency_us, s.status, s.bytes,
		(ARRAY['', 'other', 'timeout', 'refused', 'reset', 'tls', 'dns', 'canceled'])[s.error + 1] AS error, s.warmup
		FROM samples s JOIN workers w ON w.id = s.worker_id JOIN runs r ON r.id = w.run_id
		WHERE w.run_id = %[1]s ORDER BY s.worker_id, s.seq`,
	"container_metrics": `SELECT at, app_name, app_guid, process_type, instance_index, state, cpu, cpu_entitlement,
		mem_bytes, mem_quota_bytes, disk_bytes, host, isolation_segment, uptime_s
		FROM container_metrics WHERE run_id = %[1]s ORDER BY at, app_name, instance_index`,
	"router_requests": `SELECT replace(trace_id::text, '-', '') AS trace_id, at, app_guid, app_index, status, response_time_us, gorouter_time_us
		FROM router_requests WHERE run_id = %[1]s ORDER BY trace_id`,
	"app_timings": `SELECT replace(trace_id::text, '-', '') AS trace_id, app_name, instance_index, at, pool_wait_us, query_us, total_us
		FROM app_timings WHERE run_id = %[1]s ORDER BY trace_id`,
}

// File describes one exported table.
type File struct {
	Table  string `json:"table"`
	Name   string `json:"file"`
	Rows   int64  `json:"rows"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// Manifest is written as manifest.json beside the CSV files.
type Manifest struct {
	RunID         string     `json:"run_id"`
	Name          string     `json:"name"`
	Status        string     `json:"status"`
	Started       time.Time  `json:"started_at"`
	Ended         *time.Time `json:"ended_at,omitempty"`
	SchemaVersion int        `json:"schema_version"`
	Exported      time.Time  `json:"exported_at"`
	Files         []File     `json:"files"`
}

// Export writes the given tables (all when empty; runs always) of run runID into dir, which
// is created.
// Files are written under a temporary name and renamed when complete, so a file with the
// final name is always whole.
func Export(ctx context.Context, store *resultsdb.Store, runID, dir string, tables []string) (*Manifest, error) {
	if !resultsdb.ValidRunID(runID) {
		return nil, fmt.Errorf("run id %q: want the form 20060102-150405-abcd", runID)
	}
	for _, t := range tables {
		if !slices.Contains(Tables, t) {
			return nil, fmt.Errorf("table %q: want one of %v", t, Tables)
		}
	}
	if len(tables) == 0 {
		tables = Tables
	} else if !slices.Contains(tables, "runs") {
		tables = append([]string{"runs"}, tables...) // the run's own row always goes along
	}
	run, err := store.GetRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create export dir: %w", err)
	}
	m := &Manifest{RunID: run.ID, Name: run.Name, Status: string(run.Status), Started: run.Started, Ended: run.Ended,
		SchemaVersion: resultsdb.SchemaVersion(), Exported: time.Now().UTC()}
	for _, t := range Tables {
		if !slices.Contains(tables, t) {
			continue
		}
		f, err := exportTable(ctx, store, runID, t, dir)
		if err != nil {
			return nil, err
		}
		m.Files = append(m.Files, *f)
	}
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(filepath.Join(dir, "manifest.json"), func(w io.Writer) error {
		_, err := w.Write(append(body, '\n'))
		return err
	}); err != nil {
		return nil, err
	}
	return m, nil
}

func exportTable(ctx context.Context, store *resultsdb.Store, runID, table, dir string) (*File, error) {
	f := &File{Table: table, Name: table + ".csv"}
	conn, err := store.Pool().Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", table, err)
	}
	defer conn.Release()
	// COPY takes no parameters; the run id was checked against its strict pattern above.
	sql := fmt.Sprintf("COPY ("+queries[table]+") TO STDOUT (FORMAT csv, HEADER)", "'"+runID+"'")
	err = writeFileAtomic(filepath.Join(dir, f.Name), func(w io.Writer) error {
		h := sha256.New()
		cw := &countingWriter{w: io.MultiWriter(w, h)}
		tag, err := conn.Conn().PgConn().CopyTo(ctx, cw, sql)
		if err != nil {
			return err
		}
		f.Rows, f.Bytes, f.SHA256 = tag.RowsAffected(), cw.n, hex.EncodeToString(h.Sum(nil))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", table, err)
	}
	return f, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func writeFileAtomic(path string, fill func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	bw := bufio.NewWriterSize(tmp, 256<<10)
	if err := fill(bw); err != nil {
		tmp.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
