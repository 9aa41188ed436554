package generator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// vegeta's attack writes binary results to a file; `vegeta report -type=json` (not
// timed) turns them into its JSON summary.
func vegeta() *Tool {
	t := &Tool{Name: "vegeta"}
	// At most Conns workers, as oha's -c: left unbounded, vegeta answers a rate it cannot
	// hold with thousands of new connections, and the TIME_WAIT sockets they leave starve
	// the next measurements of ports.
	attack := func(c Config, d time.Duration, rate string) (Command, error) {
		targets := filepath.Join(c.Scratch, "vegeta.targets")
		if err := os.WriteFile(targets, []byte("GET "+c.URL+"\n"), 0o644); err != nil {
			return Command{}, err
		}
		results := filepath.Join(c.Scratch, "vegeta.bin")
		n := strconv.Itoa(c.Conns)
		return Command{Args: []string{"vegeta", "attack", "-rate=" + rate, "-workers=" + n, "-max-workers=" + n, "-duration=" + secs(d),
			"-targets=" + targets, "-output=" + results},
			Parse: func(ctx context.Context, o Output) (Result, error) {
				defer os.Remove(results)
				ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
				defer cancel()
				out, err := exec.CommandContext(ctx, t.Path, "report", "-type=json", results).Output()
				if err != nil {
					return Result{}, fmt.Errorf("vegeta report: %w", err)
				}
				return ParseVegeta(out)
			}}, nil
	}
	t.Closed = func(c Config, d time.Duration) (Command, error) { return attack(c, d, "0") }
	t.Open = func(c Config, d time.Duration, rate int) (Command, error) {
		return attack(c, d, strconv.Itoa(rate)+"/1s")
	}
	t.How = func(c Config, d time.Duration, open bool) string {
		if open {
			return fmt.Sprintf("`attack -rate=RATE -workers=%d -max-workers=%d -duration=%s`", c.Conns, c.Conns, secs(d))
		}
		return fmt.Sprintf("`attack -rate=0 -max-workers=%d -workers=%d -duration=%s` (results to a file; `report` not timed)", c.Conns, c.Conns, secs(d))
	}
	return t
}

type vegetaReport struct {
	Requests    *int64
	Duration    int64 // ns, first to last request sent
	Wait        int64 // ns, last request sent to its response
	Latencies   map[string]int64
	StatusCodes map[string]int64 `json:"status_codes"`
}

// ParseVegeta reads `vegeta report -type=json`. Status code "0" is a request without a
// response (vegeta's transport errors).
func ParseVegeta(out []byte) (Result, error) {
	var s vegetaReport
	if err := json.Unmarshal(out, &s); err != nil {
		return Result{}, fmt.Errorf("vegeta: its JSON report: %w", err)
	}
	if s.Requests == nil {
		return Result{}, fmt.Errorf("vegeta: no request count in its JSON report")
	}
	var r Result
	r.OK, _ = splitStatuses(s.StatusCodes)
	r.Errors = *s.Requests - r.OK
	r.Seconds = float64(s.Duration+s.Wait) / 1e9
	r.P99 = time.Duration(s.Latencies["99th"])
	return r, nil
}
