// Package export writes the tables of one run to CSV files with COPY … TO STDOUT, streamed
// straight to disk so memory stays flat whatever the size, plus a manifest.json with the
// run's metadata, row counts and SHA-256 checksums.
//
// Every table is read in the order of a key unique within the run. When the connection
// drops mid-table (a tunnel restarting, a flaky network) the exporter reconnects, cuts
// the file back to its last whole CSV record and asks for the rows after that record's
// key, so the finished file is byte for byte the file an uninterrupted export writes.
// Types and units of every column are in COLUMNS.md.
package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/backoff"
	"github.com/cf-benchmark/cf-benchmark/internal/wait"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/jackc/pgx/v5"
)

// Tables lists the exportable tables in the order they are written.
var Tables = []string{"runs", "variants", "requests", "steps", "step_metrics", "step_app_metrics", "step_series", "workers", "worker_steps",
	"samples", "container_metrics", "db_connections", "router_log_pulls", "router_requests", "step_router_metrics", "app_timings",
	"app_timing_flushes", "request_times", "run_events"}

// File describes one exported table.
type File struct {
	Table  string `json:"table"`
	Name   string `json:"file"`
	Rows   int64  `json:"rows"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	// Resumed counts the times the table's stream was cut and taken up again.
	Resumed int `json:"resumed,omitempty"`
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

// RowCounts says how many rows each table's file holds: "runs 1, requests 1200, …", in
// the order of Files.
func (m *Manifest) RowCounts() string {
	var parts []string
	for _, f := range m.Files {
		parts = append(parts, fmt.Sprintf("%s %d", f.Table, f.Rows))
	}
	return strings.Join(parts, ", ")
}

// Options tune ExportWith; the zero value exports every table and resumes after lost
// connections with the defaults.
type Options struct {
	// Tables to export (all when empty; runs always goes along).
	Tables []string
	// Connect opens a connection for one table's COPY, and again to resume it after the
	// connection was lost; the exporter closes it. The default opens one with the
	// store's configuration, so through a tunnel the new connection goes through the
	// tunnel again, which reconnects by itself.
	Connect func(ctx context.Context) (*pgx.Conn, error)
	// MaxAttempts bounds consecutive attempts at a table that write no new record before
	// the export gives up (default 8). Attempts that make progress reset the count.
	MaxAttempts int
	// Backoff is the first wait before a new attempt; it doubles up to 8 s, with jitter
	// (default 250 ms; see internal/backoff).
	Backoff time.Duration
	// Progress, when set, is called from the exporting goroutine as a table grows (about
	// every MiB of whole records) and once when it is complete, with the data rows and
	// bytes written so far.
	Progress func(table string, rows, bytes int64)
	// Logger receives a warning for every resumed stream. Nil discards them.
	Logger *slog.Logger
}

func (o *Options) defaults(store *resultsdb.Store) {
	if o.Connect == nil {
		// The store's connect timeout, without its statement timeout: a stream of a
		// large table may outlast it, and it resumes by key when it breaks anyway.
		cfg := store.Pool().Config().ConnConfig.Copy()
		cfg.RuntimeParams["statement_timeout"] = "0"
		o.Connect = func(ctx context.Context) (*pgx.Conn, error) { return pgx.ConnectConfig(ctx, cfg.Copy()) }
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 8
	}
	if o.Backoff <= 0 {
		o.Backoff = 250 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Export writes the given tables (all when empty; runs always) of run runID into dir,
// which is created, with the default Options.
func Export(ctx context.Context, store *resultsdb.Store, runID, dir string, tables []string) (*Manifest, error) {
	return ExportWith(ctx, store, runID, dir, Options{Tables: tables})
}

// ExportWith writes the tables of run runID into dir, which is created. store reads the
// run's metadata; the tables are streamed over connections from opts.Connect. Files are
// written under a temporary name and renamed when complete, so a file with the final name
// is always whole.
func ExportWith(ctx context.Context, store *resultsdb.Store, runID, dir string, opts Options) (*Manifest, error) {
	if !resultsdb.ValidRunID(runID) {
		return nil, fmt.Errorf("run id %q: want the form 20060102-150405-abcd", runID)
	}
	tables := opts.Tables
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
	opts.defaults(store)
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
		f, err := exportTable(ctx, &opts, runID, t, dir)
		if err != nil {
			return nil, fmt.Errorf("export %s: %w", t, err)
		}
		m.Files = append(m.Files, *f)
	}
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(filepath.Join(dir, "manifest.json"), append(body, '\n')); err != nil {
		return nil, err
	}
	return m, nil
}

// sessionSQL makes every connection print values the same way, whatever the server's or
// role's defaults: a resumed stream must continue byte for byte.
const sessionSQL = `SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET IntervalStyle = 'postgres';
	SET extra_float_digits = 1; SET standard_conforming_strings = on; SET client_encoding = 'UTF8'`

func exportTable(ctx context.Context, opts *Options, runID, name, dir string) (*File, error) {
	def := tableDefs[name]
	tmp, err := os.CreateTemp(dir, "."+name+".csv.*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	tf := newTableFile(tmp)
	if opts.Progress != nil {
		tf.progress = func(rows, bytes int64) { opts.Progress(name, rows, bytes) }
	}
	f := &File{Table: name, Name: name + ".csv"}
	retry := backoff.Backoff{First: opts.Backoff, Max: 8 * time.Second}
	for {
		records, committed := tf.records, tf.committed
		var sql string
		switch records {
		case 0: // not even the header is whole: start over
			sql = def.copySQL(runID, true, nil)
		case 1: // the header only
			sql = def.copySQL(runID, false, nil)
		default:
			after, err := def.keyLiterals(tf.last)
			if err != nil {
				return nil, fmt.Errorf("resume after the last record written: %w", err)
			}
			sql = def.copySQL(runID, false, after)
		}
		rows, err := copyOnce(ctx, opts.Connect, sql, tf)
		if err == nil {
			// A cross-check of the record tracking: the records this attempt added are
			// the rows COPY says it sent (and the header, if it asked for one).
			if got := tf.records - records - b2i(records == 0); got != rows {
				return nil, fmt.Errorf("COPY sent %d rows but %d records were written", rows, got)
			}
			break
		}
		var lost *lostError
		if !errors.As(err, &lost) {
			return nil, err
		}
		if tf.committed > committed {
			retry.Reset()
		}
		delay := retry.Next()
		if retry.Failures() >= opts.MaxAttempts {
			return nil, fmt.Errorf("gave up after %d attempts without progress: %w", retry.Failures(), lost.err)
		}
		opts.Logger.Warn("export: connection lost; resuming after the last whole row", "table", name,
			"rows", max(tf.records-1, 0), "attempt", retry.Failures(), "retry_in", delay, "err", lost.err)
		if err := tf.rewind(); err != nil {
			return nil, err
		}
		f.Resumed++
		if !wait.For(ctx, delay) {
			return nil, ctx.Err()
		}
	}
	if err := tf.finish(); err != nil {
		return nil, err
	}
	f.Rows, f.Bytes, f.SHA256 = max(tf.records-1, 0), tf.committed, tf.sum()
	if tf.progress != nil {
		tf.progress(f.Rows, f.Bytes)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, f.Name)); err != nil {
		return nil, err
	}
	return f, nil
}

// lostError is a lost connection (or one that could not be opened): worth another attempt.
type lostError struct{ err error }

func (e *lostError) Error() string { return "connection lost: " + e.err.Error() }
func (e *lostError) Unwrap() error { return e.err }

// copyOnce runs one COPY into w on a new connection and returns the rows COPY reports.
// Errors that another attempt may cure are *lostError.
func copyOnce(ctx context.Context, connect func(context.Context) (*pgx.Conn, error), sql string, w io.Writer) (int64, error) {
	conn, err := connect(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if permanentConnectError(err) {
			return 0, err
		}
		return 0, &lostError{err}
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, sessionSQL); err != nil {
		return 0, classify(ctx, conn, err)
	}
	tag, err := conn.PgConn().CopyTo(ctx, w, sql)
	if err != nil {
		return 0, classify(ctx, conn, err)
	}
	return tag.RowsAffected(), nil
}

func classify(ctx context.Context, conn *pgx.Conn, err error) error {
	var fe *fileError
	switch {
	case errors.As(err, &fe):
		return fe.err
	case ctx.Err() != nil:
		return ctx.Err()
	case conn.PgConn().IsClosed():
		return &lostError{err}
	}
	return err // the server answered with an error: asking again gives the same answer
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func writeFileAtomic(path string, body []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(body); err != nil {
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
