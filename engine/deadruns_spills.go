package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// recoverSpills hands the results database the samples that in-process generator
// instances left in their spill files in dir when their run ended before the database
// came back (it was away longer than the run waits, or the process was killed
// meanwhile), and says so through note. Files of runs still running, and of other
// databases, are left alone; a failure is logged and the file kept for the next run.
func recoverSpills(ctx context.Context, store *resultsdb.Store, dir string, note func(string), log *slog.Logger) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			log.Warn("look for spill files", "dir", dir, "err", err)
		}
		return
	}
	for _, e := range entries {
		if _, _, ok := resultsdb.ParseSpillName(e.Name()); !ok || !e.Type().IsRegular() {
			continue
		}
		run, n, err := store.RecoverSpill(ctx, filepath.Join(dir, e.Name()))
		switch {
		case errors.Is(err, resultsdb.ErrSpillInUse), errors.Is(err, resultsdb.ErrNotOurSpill):
		case err != nil:
			log.Warn("store the samples of a spill file; keeping it", "file", e.Name(), "err", err)
		default:
			note(fmt.Sprintf("run %s: stored %d samples its generators had kept in %s when the run ended before the results database came back",
				run, n, filepath.Join(dir, e.Name())))
		}
	}
}
