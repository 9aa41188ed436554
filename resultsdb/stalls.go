package resultsdb

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"
)

// StallCycles is how many median latencies a quiet time must last to count as a stall.
const StallCycles = 10

// Stall detection (StepSummary.Stalled, Omitted). Completions are counted per bucket of
// the measured window; a bucket spans at least stallBucketMin and is wide enough for
// stallExpected completions at the step's mean rate. A bucket with at most
// stallQuiet of the usual bucket count (the median outside the stalls: FindStalls) is
// quiet; a stall is a run of at least
// two quiet buckets lasting at least StallCycles median latencies. So a target that
// answers nothing for a while trips it, while single slow responses among many users,
// steady jitter, do not: the others' completions keep every bucket busy.
const (
	stallBase      = 10 * time.Millisecond
	stallBucketMin = 100 * time.Millisecond
	stallExpected  = 20
	stallQuiet     = 0.1
)

// completionsSQL counts the step's completions, warm-up included (a request intended
// in the warm-up may complete inside the window), per stallBase bucket of the window
// that starts at $4 (µs since the run's epoch) and lasts $5 µs.
const completionsSQL = `
SELECT (s.intended_us + s.latency_us - $4) / $6 AS b, count(*)
FROM workers w JOIN samples s ON s.worker_id = w.id AND s.step = $3
WHERE w.run_id = $1 AND w.variant = $2 AND s.intended_us + s.latency_us >= $4 AND s.intended_us + s.latency_us < $4 + $5
GROUP BY 1`

// stalls finds the longest stall of the step (see StallCycles) and, in a closed loop,
// estimates the requests its users did not send meanwhile.
func (s *Store) stalls(ctx context.Context, runID string, m *StepSummary) error {
	run, err := s.GetRun(ctx, runID)
	if err != nil {
		return err
	}
	if m.Seconds <= 0 || m.Count == 0 {
		return nil
	}
	start := m.From.Sub(run.Epoch).Microseconds()
	length := m.To.Sub(m.From).Microseconds()
	rows, err := s.pool.Query(ctx, completionsSQL, runID, m.Variant, m.Step, start, length, stallBase.Microseconds())
	if err != nil {
		return fmt.Errorf("count completions of step %d of %s: %w", m.Step+1, m.Variant, err)
	}
	counts := make([]int64, (length+stallBase.Microseconds()-1)/stallBase.Microseconds())
	for rows.Next() {
		var b, n int64
		if err := rows.Scan(&b, &n); err != nil {
			rows.Close()
			return fmt.Errorf("count completions of step %d of %s: %w", m.Step+1, m.Variant, err)
		}
		if b >= 0 && b < int64(len(counts)) {
			counts[b] = n
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("count completions of step %d of %s: %w", m.Step+1, m.Variant, err)
	}
	m.Stalled, m.Omitted = FindStalls(counts, stallBase, m.P50)
	if m.Open {
		m.Omitted = 0 // the open loop sent them anyway; their latency counts the stall
	}
	return nil
}

// FindStalls finds the longest stall in completions counted per base interval (see
// StallCycles) and the completions missing in all stalls against the usual rate. p50
// is the step's median latency.
//
// The usual rate is the median bucket outside the stalls: a stall that fills half the
// window or more would otherwise be its own yardstick (the median of all buckets is then
// a quiet one, and nothing looks missing). So stalls are found twice: first against the
// median of all buckets, then against the median of the buckets outside those stalls.
func FindStalls(counts []int64, base time.Duration, p50 time.Duration) (longest time.Duration, missing int64) {
	var total int64
	for _, c := range counts {
		total += c
	}
	if total == 0 || len(counts) == 0 {
		return 0, 0
	}
	perBase := float64(total) / float64(len(counts))
	k := max(int(math.Ceil(stallExpected/perBase)), int(stallBucketMin/base), 1)
	var buckets []int64
	for i := 0; i+k <= len(counts); i += k { // a last partial bucket would look quiet
		var n int64
		for _, c := range counts[i : i+k] {
			n += c
		}
		buckets = append(buckets, n)
	}
	if len(buckets) < 3 {
		return 0, 0
	}
	width := time.Duration(k) * base
	minBuckets := int(math.Ceil(float64(max(2*width, StallCycles*p50)) / float64(width)))
	usual := medianOf(buckets)
	if outside := outsideStalls(buckets, stallRuns(buckets, usual, minBuckets)); len(outside) > 0 {
		usual = medianOf(outside)
	}
	for _, r := range stallRuns(buckets, usual, minBuckets) {
		longest = max(longest, time.Duration(r.end-r.start)*width)
		var got int64
		for _, n := range buckets[r.start:r.end] {
			got += n
		}
		missing += max(int64(r.end-r.start)*usual-got, 0)
	}
	return longest, missing
}

// bucketRun is a run of buckets [start, end).
type bucketRun struct{ start, end int }

// stallRuns are the runs of at least minBuckets quiet buckets: at most stallQuiet of
// the usual count each.
func stallRuns(buckets []int64, usual int64, minBuckets int) []bucketRun {
	quiet := int64(stallQuiet * float64(usual))
	var out []bucketRun
	for i := 0; i < len(buckets); {
		if buckets[i] > quiet {
			i++
			continue
		}
		j := i
		for j < len(buckets) && buckets[j] <= quiet {
			j++
		}
		if j-i >= minBuckets {
			out = append(out, bucketRun{i, j})
		}
		i = j
	}
	return out
}

// outsideStalls is the buckets in none of runs.
func outsideStalls(buckets []int64, runs []bucketRun) []int64 {
	var out []int64
	last := 0
	for _, r := range runs {
		out = append(out, buckets[last:r.start]...)
		last = r.end
	}
	return append(out, buckets[last:]...)
}

func medianOf(v []int64) int64 {
	sorted := slices.Clone(v)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
}
