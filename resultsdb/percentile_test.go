package resultsdb

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/internal/sample"
)

// pctGroup is a group of values for TestPercentilesAreThoseOfPercentileDisc.
type pctGroup struct {
	name string
	vs   []int64
}

// pctGroups are groups of every shape a step or an interval has: one row, a few, ties,
// all equal, negative values (start delays), N where p·N is a whole number (N = 10,
// 100, 1,000: p·N is then the position itself, so a formula off by one picks the
// neighbour, all values being distinct), big ones, and many tiny ones.
func pctGroups(r *rand.Rand) []pctGroup {
	distinct := func(n int) []int64 { // 1..n, shuffled
		vs := make([]int64, n)
		for i := range vs {
			vs[i] = int64(i + 1)
		}
		r.Shuffle(n, func(i, j int) { vs[i], vs[j] = vs[j], vs[i] })
		return vs
	}
	random := func(n int, lo, hi int64) []int64 {
		vs := make([]int64, n)
		for i := range vs {
			vs[i] = lo + r.Int64N(hi-lo+1)
		}
		return vs
	}
	gs := []pctGroup{
		{"one row", []int64{42}},
		{"one negative row", []int64{-7}},
		{"two rows", []int64{9, 3}},
		{"three rows", []int64{5, -1, 5}},
		{"10 distinct", distinct(10)},
		{"100 distinct", distinct(100)},
		{"1000 distinct", distinct(1000)},
		{"all equal", random(50, 8, 8)},
		{"heavy ties", random(777, 0, 5)},
		{"ties at the top", append(distinct(98), 1000, 1000)},
		{"negative and positive", random(3001, -2000, 2000)},
		{"big, latencies in µs", random(40_000, 300, 2_000_000)},
		{"big, few values", random(20_000, 1000, 1100)},
	}
	for i := range 60 {
		gs = append(gs, pctGroup{fmt.Sprintf("tiny %d", i), random(1+r.IntN(20), -3, 10)})
	}
	return gs
}

// TestPercentilesAreThoseOfPercentileDisc computes percentiles of groups of every shape
// by counting (percentilesSQL) and with percentile_disc: they must be the same, group by
// group, for the fractions the store uses and a few that catch a formula done otherwise
// (0.07·100 is 7.000000000000001 in float8: the 8th value, not the 7th).
func TestPercentilesAreThoseOfPercentileDisc(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testpg.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE pct (g int NOT NULL, h text NOT NULL, v bigint NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	groups := pctGroups(rand.New(rand.NewPCG(1, 2)))
	var rows [][]any
	for i, g := range groups {
		// Two group columns: each group is split in two by h when big enough.
		for j, v := range g.vs {
			h := "x"
			if len(g.vs) > 1000 && j%3 == 0 {
				h = "y"
			}
			rows = append(rows, []any{i, h, v})
		}
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"pct"}, []string{"g", "h", "v"}, pgx.CopyFromRows(rows)); err != nil {
		t.Fatal(err)
	}

	fractions := []fraction{{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"p999", 0.999}, {"p0", 0}, {"p7", 0.07}, {"p25", 0.25}, {"p100", 1}}
	var disc []string
	for _, f := range fractions {
		disc = append(disc, fmt.Sprintf("percentile_disc(%v) WITHIN GROUP (ORDER BY v) AS %s", f.p, f.name))
	}
	want := pctRows(t, conn, `SELECT g, h, `+strings.Join(disc, ", ")+` FROM pct GROUP BY g, h`)
	got := pctRows(t, conn, percentilesSQL("FROM pct", []column{{"g", "g"}, {"h", "h"}}, "v", fractions...))
	if len(got) != len(want) {
		t.Fatalf("%d groups by counting, %d by percentile_disc", len(got), len(want))
	}
	for k, w := range want {
		if !reflect.DeepEqual(got[k], w) {
			t.Errorf("group %v (%s): by counting %v, percentile_disc %v (%v)", k, groups[k.g].name, got[k], w, fractions)
		}
	}
	// The reference itself: among 1..100, the value at position ⌈p·N⌉ (in float8).
	k := pctKey{slices.IndexFunc(groups, func(g pctGroup) bool { return g.name == "100 distinct" }), "x"}
	if fmt.Sprint(want[k]) != "[50 90 99 100 1 8 25 100]" {
		t.Errorf("percentile_disc of 1..100: %v, want [50 90 99 100 1 8 25 100]", want[k])
	}
}

type pctKey struct {
	g int
	h string
}

// pctRows reads rows of g, h and percentiles by group.
func pctRows(t *testing.T, conn *pgx.Conn, sql string) map[pctKey][]any {
	t.Helper()
	rows, err := conn.Query(context.Background(), sql)
	if err != nil {
		t.Fatalf("%v\n%s", err, sql)
	}
	out := map[pctKey][]any{}
	for rows.Next() {
		vs, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		out[pctKey{int(vs[0].(int32)), vs[1].(string)}] = vs[2:]
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStepFiguresAreAsWithPercentileDisc reads the figures and series of the steps of a
// random run (randomRun) with the store's queries in both dialects, counting values
// (citusSQL) and percentile_disc (onePostgres, the SQL the store has always had on one
// server): the same rows, of the same types, value for value.
func TestStepFiguresAreAsWithPercentileDisc(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	runID, steps := randomRun(t, s)

	// One snapshot (and one now()) for both sides.
	tx, err := s.Pool().BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	same := func(what, sql, disc string, args ...any) int {
		t.Helper()
		got, want := queryAll(t, tx, sql, args...), queryAll(t, tx, disc, args...)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s %v:\n got %v\nwant %v", what, args, got, want)
		}
		return len(got.rows)
	}
	// The counting SQL runs on one server as well.
	const c, disc = citusSQL, onePostgres
	if n := same("summaries", summarySQL[c], summarySQL[disc], runID, "", -1); n != steps["a"]+steps["b"] {
		t.Errorf("%d step summaries, want %d", n, steps["a"]+steps["b"])
	}
	same("summaries of a", summarySQL[c], summarySQL[disc], runID, "a", -1)
	for v, n := range steps {
		for i := range n {
			same("summary", summarySQL[c], summarySQL[disc], runID, v, i)
			same("step series", stepSeriesSQL[c], stepSeriesSQL[disc], runID, v, i)
		}
		for _, width := range []int64{1e6, 2_500_000, 7e6, 1e9} {
			same("series", seriesSQL[c], seriesSQL[disc], v, runID, width)
		}
	}
}

// randomRun stores a run of variants a and b, each with two workers, with random
// samples in steps and seconds of every size (none, only warm-up, one, a hundred,
// thousands; ties; negative start delays; failures), the last step of each variant
// not ended, as if still running. It returns the run's id and each variant's number of steps.
func randomRun(t *testing.T, s *Store) (string, map[string]int) {
	t.Helper()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 4))
	epoch := time.Now().Add(-time.Hour).Truncate(time.Second)
	run, err := s.CreateRun(ctx, "demo", "demo.yml", "version: 1", epoch)
	if err != nil {
		t.Fatal(err)
	}
	type stepPlan struct {
		variant         string
		measured, warm  int
		seconds         int
		latency, spread int32 // latencies latency + [0, spread)
		running         bool
	}
	plans := []stepPlan{
		{"a", 3000, 200, 20, 1000, 50_000, false},
		{"a", 100, 10, 1, 5000, 1_000_000, false}, // 100 in one second: p·N whole
		{"a", 0, 0, 1, 0, 1, false},
		{"a", 5000, 0, 7, 2000, 40, true}, // many ties
		{"b", 1, 0, 1, 777, 1, false},
		{"b", 0, 30, 2, 100, 1000, false},
		{"b", 2500, 100, 30, 100, 3_000_000, true},
	}
	workers := map[string][]int32{}
	for _, v := range []string{"a", "b"} {
		if err := s.AddRunVariant(ctx, RunVariant{RunID: run.ID, Variant: v, GeneratorApp: "gen-" + v, AppName: "app",
			Workload: []byte(`{"model": "closed", "users": 1}`)}); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			id, err := s.RegisterWorker(ctx, Worker{RunID: run.ID, Variant: v, AppName: "gen-" + v, InstanceIndex: i})
			if err != nil {
				t.Fatal(err)
			}
			workers[v] = append(workers[v], id)
		}
	}
	batches := map[int32][]sample.Sample{}
	seq := map[int32]uint32{}
	at := map[string]time.Duration{}
	idx := map[string]int{}
	for _, p := range plans {
		start := at[p.variant]
		step := Step{RunID: run.ID, Variant: p.variant, Index: idx[p.variant], Instances: 2, Users: 1, Started: epoch.Add(start),
			WarmupUntil: epoch.Add(start + time.Second), Ends: epoch.Add(start + time.Duration(p.seconds+1)*time.Second)}
		if err := s.StartStep(ctx, step); err != nil {
			t.Fatal(err)
		}
		for i := range p.measured + p.warm {
			w := workers[p.variant][r.IntN(2)]
			seq[w]++
			smp := sample.Sample{Seq: seq[w], Step: uint8(step.Index), Status: 200, Bytes: int32(r.IntN(500)),
				IntendedUS:   int64(start/time.Microsecond) + 1e6 + r.Int64N(int64(p.seconds)*1e6),
				LatencyUS:    p.latency + r.Int32N(p.spread),
				StartDelayUS: r.Int32N(20_000) - 2000}
			if i >= p.measured {
				smp.Flags, smp.IntendedUS = sample.FlagWarmup, int64(start/time.Microsecond)+r.Int64N(1e6)
			}
			switch r.IntN(20) {
			case 0:
				smp.Status = 503
			case 1:
				smp.Status, smp.Err = 0, sample.ErrTimeout
			}
			batches[w] = append(batches[w], smp)
		}
		if !p.running {
			if err := s.EndStep(ctx, run.ID, p.variant, step.Index, step.Ends, ""); err != nil {
				t.Fatal(err)
			}
		}
		at[p.variant] = start + time.Duration(p.seconds+1)*time.Second
		idx[p.variant]++
	}
	for w, b := range batches {
		if err := s.CopySamples(ctx, w, [][]sample.Sample{b}); err != nil {
			t.Fatal(err)
		}
	}
	return run.ID, idx
}

// result is what a query returned: its columns' types and its rows' values.
type result struct {
	types []uint32
	rows  [][]any
}

func (r result) String() string { return fmt.Sprint(r.types, r.rows) }

func queryAll(t *testing.T, tx pgx.Tx, sql string, args ...any) result {
	t.Helper()
	rows, err := tx.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, sql)
	}
	defer rows.Close()
	var out result
	for _, f := range rows.FieldDescriptions() {
		out.types = append(out.types, f.DataTypeOID)
	}
	for rows.Next() {
		vs, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		out.rows = append(out.rows, vs)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
