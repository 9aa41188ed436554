package logship

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseQuota reads a quota as a command line gives it: N/WINDOW, lines per window (e.g.
// 1000/1h), as Config.Quota and Config.QuotaWindow. "" is no quota (0, 0).
func ParseQuota(s string) (int, time.Duration, error) {
	if s == "" {
		return 0, 0, nil
	}
	n, w, ok := strings.Cut(s, "/")
	count, err := strconv.Atoi(n)
	if !ok || err != nil || count < 1 {
		return 0, 0, fmt.Errorf("%q: want lines per window, like 1000/1h", s)
	}
	window, err := time.ParseDuration(w)
	if err != nil || window <= 0 {
		return 0, 0, fmt.Errorf("%q: the window %q is not a duration like 1h or 15m", s, w)
	}
	return count, window, nil
}

// Quota admits at most Limit lines per Window, windows aligned to the clock (like hourly
// plan quotas: a window starts at a multiple of Window since the zero time, so 10 s
// windows start at :00, :10, …). What it admits of a window are the first lines in it:
// under a steady rate a store under quota holds whole bundles at the start of each
// window and nothing after, so its gaps are whole seconds. Limit 0 admits everything.
// A Quota is not safe for concurrent use.
type Quota struct {
	Limit  int
	Window time.Duration

	window time.Time // the current window's start
	used   int
}

// Admit tells whether a line written at at fits into its window's quota, and counts it
// when it does. Lines are expected in write order; one from an earlier window starts
// that window again.
func (q *Quota) Admit(at time.Time) bool {
	if q.Limit <= 0 || q.Window <= 0 {
		return true
	}
	if w := at.Truncate(q.Window); !w.Equal(q.window) {
		q.window, q.used = w, 0
	}
	if q.used >= q.Limit {
		return false
	}
	q.used++
	return true
}
