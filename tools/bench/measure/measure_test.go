package measure

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseStatReadsCommandsWithSpacesAndParentheses(t *testing.T) {
	line := "4242 (tmux: server (1)) S 17 4242 4242 0 -1 4194560 100 0 0 0 25 15 3 2 20 0 1 0 100 1000 50 18446744073709551615"
	pid, p, ok := parseStat(line)
	if !ok || pid != 4242 || p.ppid != 17 || p.ticks != 40 || p.comm != "tmux: server (1)" {
		t.Fatalf("%d %+v %t", pid, p, ok)
	}
	if _, _, ok := parseStat("garbage"); ok {
		t.Fatal("parsed garbage")
	}
}

func TestForeignLeavesOutOursAndKernelThreads(t *testing.T) {
	me := os.Getpid()
	before := CPUSnapshot{100: {ppid: 1, ticks: 0, comm: "cc1"}, 200: {ppid: me, ticks: 0, comm: "ours"},
		300: {ppid: 200, ticks: 0, comm: "grandchild"}, 400: {ppid: 2, ticks: 0, comm: "kworker"}, 500: {ppid: 1, ticks: 0, comm: "pg"},
		600: {ppid: 500, ticks: 0, comm: "pgchild"}, 700: {ppid: 1, ticks: 0, comm: "go"}}
	after := CPUSnapshot{100: {ppid: 1, ticks: 300, comm: "cc1"}, 200: {ppid: me, ticks: 900, comm: "ours"},
		300: {ppid: 200, ticks: 900, comm: "grandchild"}, 400: {ppid: 2, ticks: 900, comm: "kworker"}, 500: {ppid: 1, ticks: 900, comm: "pg"},
		600: {ppid: 500, ticks: 900, comm: "pgchild"}, 700: {ppid: 1, ticks: 100, comm: "go"},
		800: {ppid: 1, ticks: 200, comm: "new"}} // started in between
	f := before.ForeignUntil(after, []int{500})
	if f.CPU != 6*time.Second || f.Top != "cc1:3.0s,new:2.0s,go:1.0s" {
		t.Fatalf("%+v, want 6 s from cc1, new and go", f)
	}
}

// The CPU of a grandchild counts: the rusage of the waited child includes every
// descendant it reaped, as GNU time reports.
func TestRunCountsTheWholeProcessTree(t *testing.T) {
	var m Runner
	out, _, u, err := m.Run(context.Background(), Run{Core: -1, Limit: time.Minute,
		Args: []string{"sh", "-c", `sh -c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; echo done'`}})
	if err != nil || strings.TrimSpace(string(out)) != "done" {
		t.Fatalf("%q %v", out, err)
	}
	if u.CPU <= 0 || u.MaxRSS <= 0 || u.Elapsed <= 0 {
		t.Fatalf("usage %+v: the grandchild's CPU and RSS are missing", u)
	}
	_, _, _, err = m.Run(context.Background(), Run{Core: -1, Limit: time.Minute, Args: []string{"sh", "-c", "echo nope >&2; exit 3"}})
	if err == nil || !strings.Contains(err.Error(), "exit status 3: nope") {
		t.Fatalf("failing command: %v", err)
	}
}

func TestRunStopsACommandAtItsLimit(t *testing.T) {
	var m Runner
	_, _, u, err := m.Run(context.Background(), Run{Core: -1, Limit: 200 * time.Millisecond, Args: []string{"sleep", "60"}})
	if err == nil || !strings.Contains(err.Error(), "stopped after 200ms") || u.Elapsed > 30*time.Second {
		t.Fatalf("%v after %v", err, u.Elapsed)
	}
}

func TestParseHostCPU(t *testing.T) {
	h := parseHostCPU("cpu  100 10 50 9000 7 3 2 40 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n")
	if !h.OK || h.Busy != 1650*time.Millisecond || h.Steal != 400*time.Millisecond {
		t.Fatalf("%+v, want busy 1.65 s (user, nice, system, irq, softirq) and steal 0.4 s", h)
	}
	if h := parseHostCPU("intr 1 2 3"); h.OK {
		t.Fatalf("parsed %+v from no cpu line", h)
	}
}

// The harness's own processes count with the children they reaped, but the harness
// itself does not count the measured command it reaped (its rusage does).
func TestOwnCountsReapedChildrenButNotTheMeasuredCommand(t *testing.T) {
	me := os.Getpid()
	before := CPUSnapshot{me: {ppid: 1, ticks: 10, cticks: 0}, 500: {ppid: 1, ticks: 0, cticks: 0}, 100: {ppid: 1, ticks: 0}}
	after := CPUSnapshot{me: {ppid: 1, ticks: 30, cticks: 800}, 500: {ppid: 1, ticks: 50, cticks: 100}, 100: {ppid: 1, ticks: 900},
		600: {ppid: me, ticks: 70}}
	if got := before.OwnUntil(after, []int{500}); got != 2400*time.Millisecond {
		t.Fatalf("own %v, want 2.4 s: harness 0.2, postgres 0.5 + reaped 1.0, a new child 0.7", got)
	}
}
