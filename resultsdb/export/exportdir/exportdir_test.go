package exportdir

import (
	"context"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/resultsdb/export"
)

func TestMain(m *testing.M) { testpg.Main(m) }

// TestTableReadsWhatCOPYWrites: records as PostgreSQL's CSV writes them, and the errors
// for what it never writes, naming file and line.
func TestTableReadsWhatCOPYWrites(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, body string
		want       [][]string // fields, "<NULL>" for NULL
		lines      []int      // the line each record starts on
		err        string
	}{
		{"plain", "a,b\n1,x\n2,y\n", [][]string{{"1", "x"}, {"2", "y"}}, []int{2, 3}, ""},
		{"NULL and empty string", "a,b\n,\"\"\n", [][]string{{"<NULL>", ""}}, []int{2}, ""},
		{"quoted comma, quote, newline and CR", "a,b\n\"x,y\",\"say \"\"hi\"\"\"\n\"two\r\nlines\",z\n3,w\n",
			[][]string{{"x,y", `say "hi"`}, {"two\r\nlines", "z"}, {"3", "w"}}, []int{2, 3, 5}, ""},
		{"fields short", "a,b\n1\n", nil, nil, "t.csv line 2: 1 fields, the header has 2"},
		{"unterminated quote", "a,b\n\"1,2\n", nil, nil, "t.csv line 2: unterminated quoted field"},
		{"quote inside a field", "a,b\n1\"2,3\n", nil, nil, "t.csv line 2: a quote inside an unquoted field"},
		{"no final newline", "a,b\n1,2", nil, nil, "t.csv line 2: the last record does not end with a newline"},
		{"text after a quote", "a,b\n\"1\"x,2\n", nil, nil, "t.csv line 2: text after a quoted field"},
		{"empty file", "", nil, nil, "t.csv: empty file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "t.csv"), []byte(c.body), 0o644); err != nil {
				t.Fatal(err)
			}
			var got [][]string
			var lines []int
			tb, err := open(dir, &export.Manifest{}, "t")
			if err == nil {
				defer tb.close()
				for {
					var ok bool
					if ok, err = tb.scan(); !ok || err != nil {
						break
					}
					rec := slices.Clone(tb.rec)
					for i := range rec {
						if tb.null[i] {
							rec[i] = "<NULL>"
						}
					}
					got, lines = append(got, rec), append(lines, tb.line)
				}
			}
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, c.want, slices.Equal) || !slices.Equal(lines, c.lines) {
				t.Errorf("records %q at lines %v, want %q at %v", got, lines, c.want, c.lines)
			}
		})
	}
}

// TestFieldErrorsNameLineAndColumn: a value not of its column's type is an error naming
// the file, line and column; text columns lose the export's leading '.
func TestFieldErrorsNameLineAndColumn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	body := "variant,step,seconds,computed_at,errors_by_class\n'=x,1,2.5,2026-11-22 13:05:01.5+00,{}\nv,2,1e-05,2026-11-22 13:05:01+00,{}\nv,x,,bad,{}\n"
	if err := os.WriteFile(filepath.Join(dir, "step_metrics.csv"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		col  string
		read func(*table) any
		want []any
		err  string
	}{
		{"variant", func(t *table) any { return t.str("variant") }, []any{"=x", "v", "v"}, ""},
		{"seconds", func(t *table) any { return t.float("seconds") }, []any{2.5, 1e-05}, "step_metrics.csv line 4, column seconds: \"\" is not a number"},
		{"step", func(t *table) any { return t.int("step") }, []any{int64(1), int64(2)}, "step_metrics.csv line 4, column step: \"x\" is not an integer"},
		{"computed_at", func(t *table) any { return t.time("computed_at").UnixMicro() }, []any{int64(1795352701500000), int64(1795352701000000)},
			"line 4, column computed_at: \"bad\" is not a timestamp"},
	} {
		t.Run(c.col, func(t *testing.T) {
			tb, err := open(dir, &export.Manifest{}, "step_metrics")
			if err != nil {
				t.Fatal(err)
			}
			defer tb.close()
			var got []any
			for {
				ok, err := tb.scan()
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					break
				}
				v := c.read(tb)
				if tb.err != nil {
					if c.err == "" || !strings.Contains(tb.err.Error(), c.err) {
						t.Fatalf("error %v, want one saying %q", tb.err, c.err)
					}
					break
				}
				got = append(got, v)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("read %v, want %v", got, c.want)
			}
		})
	}
}

func TestPercentileDisc(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		xs   []int64
		p    float64
		want int64
	}{
		{[]int64{5}, 0.99, 5},
		{[]int64{3, 1, 2}, 0.5, 2},
		{[]int64{1, 2, 3, 4}, 0.5, 2},  // ceil(2) = 2nd
		{[]int64{1, 2, 3, 4}, 0.51, 3}, // ceil(2.04) = 3rd
		{[]int64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}, 0.99, 100},
		{[]int64{4, 3, 2, 1}, 0, 1}, // position at least 1
	} {
		if got := percentileDisc(slices.Clone(c.xs), c.p); got != c.want {
			t.Errorf("percentileDisc(%v, %v) = %d, want %d", c.xs, c.p, got, c.want)
		}
	}
}

// TestNumericAvgIsPostgres: numericAvg gives PostgreSQL's avg(bigint)::float8 to the bit,
// for hand-picked groups and many random ones, where dividing in floats does not.
func TestNumericAvgIsPostgres(t *testing.T) {
	store, err := resultsdb.Open(context.Background(), testpg.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	groups := [][]int64{{0}, {1}, {1, 2}, {1, 2, 2}, {-7, 3}, {-1, -2}, {9999, 10000}, {1e15, 1e15 + 1, 1e15 + 2},
		{123456789, 987654321, 555555555}, {300000001, 300000002, 300000002}}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		g := make([]int64, 1+rng.IntN(900))
		base := rng.Int64N(90_000_000_000)
		for i := range g {
			g[i] = base + rng.Int64N(1_000_000)
		}
		groups = append(groups, g)
	}
	naiveDiffers := 0
	for _, g := range groups {
		var want float64
		if err := store.Pool().QueryRow(context.Background(), `SELECT avg(x)::float8 FROM unnest($1::bigint[]) x`, g).Scan(&want); err != nil {
			t.Fatal(err)
		}
		sum := new(big.Int)
		for _, x := range g {
			sum.Add(sum, big.NewInt(x))
		}
		if got := numericAvg(sum, int64(len(g))); got != want {
			t.Fatalf("numericAvg of %d values summing to %s = %v, Postgres says %v", len(g), sum, got, want)
		}
		if float64(sum.Int64())/float64(len(g)) != want {
			naiveDiffers++
		}
	}
	t.Logf("float division differs from Postgres in %d of %d groups", naiveDiffers, len(groups))
}
