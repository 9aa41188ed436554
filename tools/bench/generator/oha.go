package generator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// oha prints its summary as JSON with --output-format json.
func oha() *Tool { return ohaTool("oha", false) }

// ohaDB is oha storing every request in SQLite (--db-url, a file in the run's
// scratch dir, removed after the run), as cf-benchmark stores every request in
// Postgres.
func ohaDB() *Tool { return ohaTool("oha-db", true) }

func ohaTool(name string, db bool) *Tool {
	t := &Tool{Name: name}
	args := func(c Config, d time.Duration, extra ...string) []string {
		a := append([]string{"oha", "-c", strconv.Itoa(c.Conns)}, extra...)
		a = append(a, "-z", secs(d), "--no-tui", "--output-format", "json")
		if db {
			a = append(a, "--db-url", filepath.Join(c.Scratch, "oha.db"))
		}
		return append(a, c.URL)
	}
	parse := func(_ context.Context, o Output) (Result, error) {
		if db {
			defer os.Remove(filepath.Join(o.Dir, "oha.db"))
			if fi, err := os.Stat(filepath.Join(o.Dir, "oha.db")); err != nil || fi.Size() == 0 {
				return Result{}, fmt.Errorf("oha --db-url wrote no database: %v", err)
			}
		}
		return ParseOha(o.Stdout)
	}
	t.Closed = func(c Config, d time.Duration) (Command, error) { return Command{Args: args(c, d), Parse: parse}, nil }
	// --latency-correction: latency from the intended send time, as ours measures it.
	t.Open = func(c Config, d time.Duration, rate int) (Command, error) {
		return Command{Args: args(c, d, "-q", strconv.Itoa(rate), "--latency-correction"), Parse: parse}, nil
	}
	t.How = func(c Config, d time.Duration, open bool) string {
		dbArg := ""
		if db {
			dbArg = " --db-url FILE"
		}
		if open {
			return fmt.Sprintf("`-c %d -q RATE --latency-correction -z %s%s`", c.Conns, secs(d), dbArg)
		}
		return fmt.Sprintf("`-c %d -z %s --no-tui%s`", c.Conns, secs(d), dbArg)
	}
	return t
}

type ohaSummary struct {
	Summary *struct {
		Total float64 // seconds
	}
	LatencyPercentiles struct {
		P99 *float64 // seconds
	}
	StatusCodeDistribution map[string]int64
	ErrorDistribution      map[string]int64
}

// ParseOha reads oha's JSON summary. Requests still in flight when -z runs out are
// aborted and listed as errors "aborted due to deadline"; they are not failures of the
// target and are left out, as oha's own success rate does.
func ParseOha(stdout []byte) (Result, error) {
	var s ohaSummary
	if err := json.Unmarshal(stdout, &s); err != nil {
		return Result{}, fmt.Errorf("oha: its JSON output: %w", err)
	}
	if s.Summary == nil {
		return Result{}, fmt.Errorf("oha: no summary in its JSON output")
	}
	var r Result
	r.OK, r.Errors = splitStatuses(s.StatusCodeDistribution)
	for msg, n := range s.ErrorDistribution {
		if !strings.Contains(msg, "deadline") {
			r.Errors += n
		}
	}
	r.Seconds = s.Summary.Total
	if p := s.LatencyPercentiles.P99; p != nil {
		r.P99 = time.Duration(*p * float64(time.Second))
	}
	return r, nil
}

// splitStatuses sums a status-code histogram into 2xx and the rest (keys are codes).
func splitStatuses(m map[string]int64) (ok, other int64) {
	for code, n := range m {
		if strings.HasPrefix(code, "2") && len(code) == 3 {
			ok += n
		} else {
			other += n
		}
	}
	return ok, other
}
