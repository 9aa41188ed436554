package generator

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// oha prints its summary as JSON with --output-format json.
func oha() *Tool {
	t := &Tool{Name: "oha"}
	parse := func(_ context.Context, o Output) (Result, error) { return ParseOha(o.Stdout) }
	t.Closed = func(c Config, d time.Duration) (Command, error) {
		return Command{Args: []string{"oha", "-c", strconv.Itoa(c.Conns), "-z", secs(d), "--no-tui", "--output-format", "json", c.URL},
			Parse: parse}, nil
	}
	// --latency-correction: latency from the intended send time, as ours measures it.
	t.Open = func(c Config, d time.Duration, rate int) (Command, error) {
		return Command{Args: []string{"oha", "-c", strconv.Itoa(c.Conns), "-q", strconv.Itoa(rate), "--latency-correction",
			"-z", secs(d), "--no-tui", "--output-format", "json", c.URL}, Parse: parse}, nil
	}
	t.How = func(c Config, d time.Duration, open bool) string {
		if open {
			return fmt.Sprintf("`-c %d -q RATE --latency-correction -z %s`", c.Conns, secs(d))
		}
		return fmt.Sprintf("`-c %d -z %s --no-tui`", c.Conns, secs(d))
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
