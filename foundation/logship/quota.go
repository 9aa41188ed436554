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
