package engine

import (
	"context"
	"log/slog"
	"slices"

	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/resultsdb/export"
)

// ExportTables are the tables ExportRun writes when none are named: every one.
func ExportTables() []string { return slices.Clone(export.Tables) }

// ExportRun writes the tables of run runID (all when tables is empty) from store to CSV
// files in dir, with a manifest (row counts, checksums). A connection lost mid-table
// (the tunnel app restarting, a flaky network) is resumed after the last whole row;
// the files come out the same.
func ExportRun(ctx context.Context, store *resultsdb.Store, runID, dir string, tables []string, log *slog.Logger) (*export.Manifest, error) {
	return export.ExportWith(ctx, store, runID, dir, export.Options{Tables: tables, Logger: log})
}
