package resultsdb

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/internal/sample"
)

// TestSpillNames: a spill file's name gives back its run and worker; other names none.
func TestSpillNames(t *testing.T) {
	if run, w, ok := ParseSpillName(SpillName("20261127-162609-9546", 17)); !ok || run != "20261127-162609-9546" || w != 17 {
		t.Errorf("round trip: %q %d %v", run, w, ok)
	}
	for _, name := range []string{"cfbench-spill-", "cfbench-spill-run", "cfbench-spill--3", "cfbench-spill-run-0", "cfbench-spill-run-x", "other-run-3", "cfbench-spill-run-99999999999"} {
		if run, w, ok := ParseSpillName(name); ok {
			t.Errorf("%q parsed as run %q worker %d", name, run, w)
		}
	}
}

// TestRecoverSpillStoresEachSampleOnce: a spill file left by a writer whose process
// stopped holds samples stored before (consumed but not yet truncated) and samples
// never stored. While its run runs it is left alone; after, every sample is stored
// once, the worker's stored count is its rows, and the file is gone.
func TestRecoverSpillStoresEachSampleOnce(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	run, id := newWorker(t, s)
	all := make([]sample.Sample, 100)
	for i := range all {
		all[i] = sample.Sample{Seq: uint32(i), IntendedUS: int64(i) * 1000, LatencyUS: 500, Status: 200}
	}
	if err := s.CopySamples(ctx, id, [][]sample.Sample{all[:40]}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), SpillName(run.ID, id))
	f, err := openSpill(path, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Append([][]sample.Sample{all}); err != nil {
		t.Fatal(err)
	}
	f.f.Close() // the process stopped: the file stays
	if _, _, err := s.RecoverSpill(ctx, path); !errors.Is(err, ErrSpillInUse) {
		t.Fatalf("recover while the run runs: %v, want ErrSpillInUse", err)
	}
	if err := s.FinishRun(ctx, run.ID, RunAborted, "test"); err != nil {
		t.Fatal(err)
	}
	gotRun, n, err := s.RecoverSpill(ctx, path)
	if err != nil || gotRun != run.ID || n != 100 {
		t.Fatalf("recover: run %q, %d samples, %v; want %s, 100", gotRun, n, err, run.ID)
	}
	var rows, stored int64
	if err := s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM samples WHERE worker_id = $1), stored FROM workers WHERE id = $1`, id).Scan(&rows, &stored); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); rows != 100 || stored != 100 || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after recovery: %d rows, stored %d, file: %v; want 100, 100 and no file", rows, stored, err)
	}
	if _, _, err := s.RecoverSpill(ctx, filepath.Join(t.TempDir(), SpillName("other-run", id))); !errors.Is(err, ErrNotOurSpill) {
		t.Errorf("a file of a run this database does not know: %v, want ErrNotOurSpill", err)
	}
}

// failingSink refuses every batch, as a database that is down does.
type failingSink struct{}

func (failingSink) CopySamples(context.Context, int32, [][]sample.Sample) error {
	return errors.New("database down")
}

// TestWriterCloseKeepsOnlyASpillFileWithSamples: a writer that cannot store its samples
// leaves its spill file for recovery when samples wait in it, and removes it when none
// do (here the file had no room, so the sample stayed in memory and is lost).
func TestWriterCloseKeepsOnlyASpillFileWithSamples(t *testing.T) {
	for _, tc := range []struct {
		name     string
		maxBytes int64
		kept     bool
	}{{"samples in it", 4 * recordSize, true}, {"none in it", recordSize - 1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), SpillName("run", 1))
			w, err := NewSampleWriter(failingSink{}, 1, WriterOptions{SpillPath: path, MaxSpillBytes: tc.maxBytes})
			if err != nil {
				t.Fatal(err)
			}
			w.Start(context.Background())
			w.Add(sample.Sample{Seq: 1})
			if err := w.Close(context.Background()); err == nil {
				t.Fatal("Close: nil error, want the sample not stored")
			}
			_, err = os.Stat(path)
			if kept := err == nil; kept != tc.kept {
				t.Fatalf("spill file kept: %v (%v), want %v", kept, err, tc.kept)
			}
		})
	}
}
