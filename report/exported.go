package report

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/resultsdb/export"
	"github.com/cf-benchmark/cf-benchmark/resultsdb/export/exportdir"
)

// IsExportDir reports whether path is a run's export directory (it holds the
// export's manifest.json): a report reads such a run from its files.
func IsExportDir(path string) bool { return exportdir.IsExportDir(path) }

// Runs reads an export directory from its files and a run id from store (nil when
// every run is an export directory), so runs of both kinds can be reported and
// compared side by side.
func Runs(store *resultsdb.Store) Reader { return runSources{store} }

type runSources struct {
	store *resultsdb.Store
}

var _ Reader = runSources{}

func (s runSources) ReadRun(ctx context.Context, id string, width func(float64) float64) (*resultsdb.ReportRows, error) {
	if exportdir.IsExportDir(id) || s.store == nil {
		return exportdir.Reader{}.ReadRun(ctx, id, width)
	}
	return s.store.ReadRun(ctx, id, width)
}

// FindExport finds run id's export directory: DIR/id for the first of dirs whose
// manifest is of that run. It returns "" and nil when none is.
func FindExport(dirs []string, id string) (string, *export.Manifest) {
	for _, d := range dirs {
		dir := filepath.Join(d, id)
		if m, err := exportdir.Manifest(dir); err == nil && m.RunID == id {
			return dir, m
		}
	}
	return "", nil
}

// Exported writes what the export directory dir (its manifest m) tells of a run whose
// results database could not be reached (why: dbErr).
func Exported(w io.Writer, dir string, m *export.Manifest, dbErr error) {
	fmt.Fprintf(w, "run %s (%s): %s", m.RunID, m.Name, m.Status)
	if m.Ended != nil {
		fmt.Fprintf(w, ", started %s, %s", m.Started.Local().Format(time.DateTime), m.Ended.Sub(m.Started).Round(time.Second))
	}
	fmt.Fprintf(w, "\nits results database cannot be reached (%v);\nits results are in %s (%d files, exported %s)\n",
		dbErr, dir, len(m.Files), m.Exported.Local().Format(time.DateTime))
}
