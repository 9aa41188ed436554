package measure

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/wait"
)

// TimeWait counts the TCP sockets in TIME_WAIT with port on either end (IPv4 and IPv6).
func TimeWait(port int) int {
	n := 0
	hex := fmt.Sprintf(":%04X", port)
	for _, path := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st ...; st 06 is TIME_WAIT.
			f := strings.Fields(sc.Text())
			if len(f) > 3 && f[3] == "06" && (strings.HasSuffix(f[1], hex) || strings.HasSuffix(f[2], hex)) {
				n++
			}
		}
		f.Close()
	}
	return n
}

// Settle waits (90 s at most) until the sockets an earlier run left in TIME_WAIT on
// port are few, so that no run starts short of local ports.
func Settle(ctx context.Context, port int, log func(string, ...any)) {
	for i := 0; i < 90; i++ {
		n := TimeWait(port)
		if n <= 2000 {
			return
		}
		if i == 0 {
			log("  waiting for %d sockets in TIME_WAIT to clear", n)
		}
		if !wait.For(ctx, time.Second) {
			return
		}
	}
}

// Quiet waits while processes outside the harness use more than a tenth of a core,
// for at most *budget over all calls (it spends the budget). ours as in Runner.
func Quiet(ctx context.Context, budget *time.Duration, ours []int, log func(string, ...any)) {
	for first := true; ; first = false {
		s, h := Snapshot(), ReadHostCPU()
		if !wait.For(ctx, time.Second) {
			return
		}
		later, h2 := Snapshot(), ReadHostCPU()
		f := s.ForeignUntil(later, ours)
		if h.OK && h2.OK {
			f.CPU = max(h2.Busy-h.Busy-s.OwnUntil(later, ours), 0)
		}
		if f.CPU <= 100*time.Millisecond {
			return
		}
		if *budget <= 0 {
			if first {
				log("  the machine is busy (other processes: %s per second); measuring anyway", f.Top)
			}
			return
		}
		if first {
			log("  waiting for the machine to quiet down (other processes: %s per second)", f.Top)
		}
		*budget -= 5 * time.Second
		if !wait.For(ctx, 4*time.Second) {
			return
		}
	}
}
