package resultsdb

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/sample"
)

// routerRun stores 10 s of samples (100 per second, seqs 1..1000) of one worker in step
// 0; samples of second 7 got no response.
func routerRun(t *testing.T, s *Store) (*Run, int32) {
	t.Helper()
	ctx := context.Background()
	run, worker := newWorker(t, s)
	w, err := s.NewSampleWriter(worker, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Start(ctx)
	for i := range 1000 {
		st := int16(200)
		if i/100 == 7 {
			st = 0
		}
		w.Add(sample.Sample{Seq: uint32(i + 1), IntendedUS: int64(i) * 10_000, Status: st})
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return run, worker
}

func routerRows(run *Run, worker int32, seqs ...int) []RouterRequest {
	var out []RouterRequest
	rt := 1500 * time.Microsecond
	for _, q := range seqs {
		out = append(out, RouterRequest{TraceID: sample.NewTraceID(run.TraceTag, uint32(worker), uint64(q)), At: run.Epoch,
			AppGUID: "guid", AppName: "app", Status: 200, ResponseTime: &rt})
	}
	return out
}

func seqRange(from, to int) []int {
	var out []int
	for q := from; q <= to; q++ {
		out = append(out, q)
	}
	return out
}

func TestStoreRouterBatchIsIdempotentAndMovesTheCursor(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	run, worker := routerRun(t, s)
	p := &LogPull{RunID: run.ID, Source: "file:access.log", Cursor: json.RawMessage(`{"line":100}`), Retrieved: 100}
	if err := s.StoreRouterBatch(ctx, p, routerRows(run, worker, seqRange(1, 100)...)); err != nil {
		t.Fatal(err)
	}
	if p.Stored != 100 {
		t.Fatalf("stored %d, want 100", p.Stored)
	}
	// The same rows again (a retried page) and a duplicate inside one batch: nothing new.
	p.Cursor, p.Retrieved = json.RawMessage(`{"line":201}`), 201
	again := append(routerRows(run, worker, seqRange(51, 150)...), routerRows(run, worker, 150)...)
	if err := s.StoreRouterBatch(ctx, p, again); err != nil {
		t.Fatal(err)
	}
	if p.Stored != 150 {
		t.Fatalf("stored %d after an overlapping batch, want 150", p.Stored)
	}
	got, err := s.LogPull(ctx, run.ID, "file:access.log")
	if err != nil || got == nil {
		t.Fatalf("LogPull = %v, %v", got, err)
	}
	var cur struct{ Line int }
	if err := json.Unmarshal(got.Cursor, &cur); err != nil || cur.Line != 201 || got.Retrieved != 201 || got.Stored != 150 || got.Finished != nil {
		t.Fatalf("pull %+v (cursor %s), want cursor line 201, 201 retrieved, 150 stored, unfinished", got, got.Cursor)
	}
	if err := s.FinishLogPull(ctx, run.ID, "file:access.log"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.LogPull(ctx, run.ID, "file:access.log"); got.Finished == nil {
		t.Fatal("the pull is not marked finished")
	}
	if none, err := s.LogPull(ctx, run.ID, "elsewhere"); none != nil || err != nil {
		t.Fatalf("LogPull of another source = %v, %v; want nil, nil", none, err)
	}
}

func TestRouterCoverageTellsQuotaGapsFromScatteredLosses(t *testing.T) {
	cases := []struct {
		name  string
		found []int
		want  Coverage
	}{
		{"complete", seqRange(1, 1000),
			Coverage{Sent: 1000, Found: 1000, Seconds: 10}},
		// Seconds 5..9 missing entirely, as a per-hour cap or a dropped bundle leaves it;
		// second 7 is the one without responses.
		{"whole seconds missing", seqRange(1, 500),
			Coverage{Sent: 1000, Found: 500, NoResponse: 100, Seconds: 10, EmptySeconds: 5, MissingInEmpty: 500}},
		// Every tenth request missing, all over the step.
		{"scattered", func() []int {
			var out []int
			for q := 1; q <= 1000; q++ {
				if q%10 != 0 {
					out = append(out, q)
				}
			}
			return out
		}(), Coverage{Sent: 1000, Found: 900, NoResponse: 10, Seconds: 10, PartialSeconds: 10}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, _ := openStore(t)
			ctx := context.Background()
			run, worker := routerRun(t, s)
			p := &LogPull{RunID: run.ID, Source: "s", Cursor: json.RawMessage(`{}`)}
			// A request of another run (other tag) with the same worker and seq would
			// join a sample twice: it is refused, and the batch with it.
			other := routerRows(&Run{TraceTag: run.TraceTag + 1, Epoch: run.Epoch}, worker, 1)
			if err := s.StoreRouterBatch(ctx, p, append(routerRows(run, worker, 2), other...)); !errors.Is(err, ErrForeignTrace) {
				t.Fatalf("a foreign trace id: %v, want ErrForeignTrace", err)
			}
			if err := s.StoreRouterBatch(ctx, p, routerRows(run, worker, c.found...)); err != nil {
				t.Fatal(err)
			}
			got, err := s.RouterCoverage(ctx, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			c.want.Variant = "v"
			if len(got) != 1 || got[0] != c.want {
				t.Fatalf("coverage %+v, want %+v", got, c.want)
			}
			// Stored after the pull, read back as computed; no app timings: nothing decomposed.
			computed, err := s.ComputeRouterMetrics(ctx, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			read, err := s.RouterMetrics(ctx, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			for name, ms := range map[string][]RouterStepMetrics{"computed": computed, "read back": read} {
				if len(ms) != 1 || ms[0] != (RouterStepMetrics{Coverage: c.want}) {
					t.Errorf("%s router metrics %+v, want coverage %+v and nothing decomposed", name, ms, c.want)
				}
			}
		})
	}
}
