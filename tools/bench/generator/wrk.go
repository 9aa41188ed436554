package generator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"
)

// wrk has no JSON output of its own: tools/bench/wrk-json.lua's done() prints its summary as
// one JSON line after the human-readable text.
func wrk() *Tool {
	return &Tool{Name: "wrk",
		Closed: func(c Config, d time.Duration) (Command, error) {
			return Command{Args: []string{"wrk", "-t1", fmt.Sprintf("-c%d", c.Conns), "-d" + secs(d), "--timeout", "10s",
				"-s", filepath.Join(c.Assets, "wrk-json.lua"), c.URL},
				Parse: func(_ context.Context, o Output) (Result, error) { return ParseWrk(o.Stdout) }}, nil
		},
		How: func(c Config, d time.Duration, _ bool) string {
			return fmt.Sprintf("`-t1 -c%d -d%s`; C + LuaJIT, event loop", c.Conns, secs(d))
		},
	}
}

// wrkSummary is what tools/bench/wrk-json.lua prints.
type wrkSummary struct {
	DurationUS int64 `json:"duration_us"`
	Requests   *int64
	Errors     struct {
		Connect, Read, Write, Status, Timeout int64
	}
	P99US int64 `json:"latency_p99_us"`
}

// ParseWrk reads the JSON line tools/bench/wrk-json.lua prints at the end of wrk's output.
// wrk counts a response with a status of 400 or more both as a request and as a
// status error; connect, read, write and timeout errors are not requests.
func ParseWrk(stdout []byte) (Result, error) {
	lines := bytes.Split(bytes.TrimSpace(stdout), []byte("\n"))
	last := bytes.TrimSpace(lines[len(lines)-1])
	var s wrkSummary
	if !bytes.HasPrefix(last, []byte("{")) {
		return Result{}, fmt.Errorf("wrk: no JSON summary line at the end of its output (is tools/bench/wrk-json.lua loaded?)")
	}
	if err := json.Unmarshal(last, &s); err != nil {
		return Result{}, fmt.Errorf("wrk: its JSON summary: %w", err)
	}
	if s.Requests == nil || s.DurationUS <= 0 {
		return Result{}, fmt.Errorf("wrk: its JSON summary has no requests or duration: %s", last)
	}
	e := s.Errors
	return Result{OK: *s.Requests - e.Status, Errors: e.Connect + e.Read + e.Write + e.Status + e.Timeout,
		Seconds: float64(s.DurationUS) / 1e6, P99: time.Duration(s.P99US) * time.Microsecond}, nil
}
