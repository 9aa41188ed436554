package generator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// k6 runs tools/bench/k6-closed.js and writes its end-of-test summary with --summary-export.
func k6() *Tool {
	return &Tool{Name: "k6",
		Closed: func(c Config, d time.Duration) (Command, error) {
			export := filepath.Join(c.Scratch, "k6-summary.json")
			return Command{Args: []string{"k6", "run", "--quiet", "--no-color", "--no-usage-report", "--address=", "--summary-export=" + export,
				filepath.Join(c.Assets, "k6-closed.js")},
				Env: []string{"K6_NO_USAGE_REPORT=true", "K6_WEB_DASHBOARD=false", "TARGET=" + c.URL, "VUS=" + strconv.Itoa(c.Conns), "DURATION=" + secs(d)},
				Parse: func(context.Context, Output) (Result, error) {
					b, err := os.ReadFile(export)
					if err != nil {
						return Result{}, fmt.Errorf("k6: its summary export: %w", err)
					}
					return ParseK6(b)
				}}, nil
		},
		How: func(c Config, d time.Duration, _ bool) string {
			return fmt.Sprintf("constant-vus, %d VUs, %s, `discardResponseBodies`", c.Conns, secs(d))
		},
	}
}

type k6Summary struct {
	Metrics struct {
		Reqs *struct {
			Count float64
			Rate  float64
		} `json:"http_reqs"`
		// A rate metric: "passes" counts the requests for which failed was true.
		Failed struct {
			Passes int64
		} `json:"http_req_failed"`
		Duration map[string]float64 `json:"http_req_duration"` // ms
	}
}

// ParseK6 reads k6's --summary-export JSON.
func ParseK6(b []byte) (Result, error) {
	var s k6Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return Result{}, fmt.Errorf("k6: its summary export: %w", err)
	}
	m := s.Metrics
	if m.Reqs == nil || m.Reqs.Rate <= 0 {
		return Result{}, fmt.Errorf("k6: no http_reqs count and rate in its summary export")
	}
	n := int64(m.Reqs.Count)
	return Result{OK: n - m.Failed.Passes, Errors: m.Failed.Passes, Seconds: m.Reqs.Count / m.Reqs.Rate,
		P99: time.Duration(m.Duration["p(99)"] * float64(time.Millisecond))}, nil
}
