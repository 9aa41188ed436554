package generator

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ours runs `cf-benchmark run --json` on a spec made from tools/bench/cfbench-*.yml.tmpl, one
// in-process generator instance storing every request in Postgres. As OursTick1ms its
// open loop ticks every 1 ms; otherwise the spec names no tick (the default), which a
// build from before workload.tick, the baseline, would refuse.
func ours(name, bin string) *Tool {
	t := &Tool{Name: name, Path: bin}
	tick, how := "# tick: the default", ""
	if name == OursTick1ms {
		tick, how = "tick: 1ms", ", tick 1ms"
	}
	run := func(c Config, d time.Duration, tmpl string, rate int) (Command, error) {
		b, err := os.ReadFile(filepath.Join(c.Assets, tmpl))
		if err != nil {
			return Command{}, err
		}
		u := strings.TrimSuffix(c.URL, "/")
		spec := strings.NewReplacer("@URL@", u, "@USERS@", strconv.Itoa(c.Conns), "@HOLD@", secs(d), "@RATE@", strconv.Itoa(rate),
			"@TICK@", tick, "@EXPORT@", filepath.Join(c.Scratch, "export")).Replace(string(b))
		file := filepath.Join(c.Scratch, "spec.yml")
		if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
			return Command{}, err
		}
		return Command{Args: []string{bin, "run", "-f", file, "--db", c.DSN, "--state-dir", filepath.Join(c.Scratch, "state"), "--json"},
			Parse: func(_ context.Context, o Output) (Result, error) { return ParseOurs(o.Stdout) }}, nil
	}
	t.Closed = func(c Config, d time.Duration) (Command, error) { return run(c, d, "cfbench-closed.yml.tmpl", 0) }
	t.Open = func(c Config, d time.Duration, rate int) (Command, error) {
		return run(c, d, "cfbench-open.yml.tmpl", rate)
	}
	t.How = func(c Config, d time.Duration, open bool) string {
		if open {
			return fmt.Sprintf("model open, rate_per instance, max_in_flight %d%s, no warm-up", c.Conns, how)
		}
		return fmt.Sprintf("closed, %d users, 1 instance, hold %s, no warm-up; requests = the run's summary (every request is stored in Postgres); "+
			"CPU-s = the whole process (start-up, migrations, run, summary, export of the steps table, the HTML report)", c.Conns, secs(d))
	}
	return t
}

// oursEvent is the part of `run --json`'s lines the harness reads.
type oursEvent struct {
	Event   string
	Status  string
	Reason  string
	Level   string
	Check   string
	Message string
	Steps   json.RawMessage // a count in "started", the rows in "summary"
}

// oursStep is a row of the summary event's steps.
type oursStep struct {
	Count   *int64
	Errors  int64
	Seconds float64
	P99MS   float64 `json:"p99_ms"`
	Missed  int64
}

// ParseOurs reads the JSON lines of `cf-benchmark run --json`: the summary event of a
// one-step run, and its findings of level warn or fail as notes.
func ParseOurs(stdout []byte) (Result, error) {
	var r Result
	var summary *oursEvent
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var e oursEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return Result{}, fmt.Errorf("cf-benchmark: line %d of its --json output: %w", n, err)
		}
		switch {
		case e.Event == "summary":
			summary = &e
		case e.Event == "finding" && e.Level != "info":
			r.Notes = append(r.Notes, fmt.Sprintf("%s %s: %s", e.Level, e.Check, e.Message))
		}
	}
	if err := sc.Err(); err != nil {
		return Result{}, fmt.Errorf("cf-benchmark: its --json output: %w", err)
	}
	if summary == nil {
		return Result{}, fmt.Errorf("cf-benchmark: no summary event in its --json output")
	}
	if summary.Status != "completed" {
		return Result{}, fmt.Errorf("cf-benchmark: run %s: %s", summary.Status, summary.Reason)
	}
	var steps []oursStep
	if err := json.Unmarshal(summary.Steps, &steps); err != nil {
		return Result{}, fmt.Errorf("cf-benchmark: the steps of its summary event: %w", err)
	}
	if len(steps) != 1 || steps[0].Count == nil || steps[0].Seconds <= 0 {
		return Result{}, fmt.Errorf("cf-benchmark: want one step with a count and its seconds in the summary, got %d steps", len(steps))
	}
	s := steps[0]
	r.OK, r.Errors, r.Seconds = *s.Count-s.Errors, s.Errors, s.Seconds
	r.P99 = time.Duration(s.P99MS * float64(time.Millisecond))
	if s.Missed > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d sends missed (every allowed request in flight)", s.Missed))
	}
	return r, nil
}
