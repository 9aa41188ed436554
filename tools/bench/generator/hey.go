package generator

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"
)

// hey writes one CSV line per answered request with -o csv.
func hey() *Tool {
	return &Tool{Name: "hey",
		Closed: func(c Config, d time.Duration) (Command, error) {
			return Command{Args: []string{"hey", "-c", strconv.Itoa(c.Conns), "-z", secs(d), "-o", "csv", c.URL},
				Parse: func(_ context.Context, o Output) (Result, error) { return ParseHey(o.Stdout) }}, nil
		},
		How: func(c Config, d time.Duration, _ bool) string {
			return fmt.Sprintf("`-c %d -z %s -o csv`; CPU-s include writing the CSV (one line per response) after the run; "+
				"transport errors are not in its CSV", c.Conns, secs(d))
		},
	}
}

// ParseHey reads hey's CSV (response-time,DNS+dialup,DNS,Request-write,Response-delay,
// Response-read,status-code,offset; times in seconds, offset from the start of the
// run). Requests that failed without a response are not in it. Seconds is the end of
// the last response, the closest the CSV comes to hey's own total.
func ParseHey(stdout []byte) (Result, error) {
	rd := csv.NewReader(bytes.NewReader(stdout))
	rd.FieldsPerRecord = 8
	rd.ReuseRecord = true
	head, err := rd.Read()
	if err != nil {
		return Result{}, fmt.Errorf("hey: its CSV header: %w", err)
	}
	if head[0] != "response-time" || head[6] != "status-code" || head[7] != "offset" {
		return Result{}, fmt.Errorf("hey: unexpected CSV header %q", head)
	}
	var r Result
	var lats []float64
	for line := 2; ; line++ {
		rec, err := rd.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Result{}, fmt.Errorf("hey: its CSV: %w", err)
		}
		lat, err1 := strconv.ParseFloat(rec[0], 64)
		code, err2 := strconv.Atoi(rec[6])
		off, err3 := strconv.ParseFloat(rec[7], 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return Result{}, fmt.Errorf("hey: CSV line %d: bad number in %q", line, rec)
		}
		if code >= 200 && code < 300 {
			r.OK++
		} else {
			r.Errors++
		}
		lats = append(lats, lat)
		r.Seconds = max(r.Seconds, off+lat)
	}
	if len(lats) == 0 {
		return Result{}, fmt.Errorf("hey: no responses in its CSV")
	}
	sort.Float64s(lats)
	r.P99 = time.Duration(lats[(len(lats)*99+99)/100-1] * float64(time.Second))
	return r, nil
}
