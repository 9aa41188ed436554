package foundation

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation/logcache"
)

// Instance output becomes LOG envelopes of the app: new lines only, complete lines
// only, stdout as OUT and stderr (the .err file) as ERR, the cell's own lines as CELL
// without their time stamp, files of processes that are no app's web process skipped.
func TestAppLogs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, p := range []string{"app-1", "worker-9"} {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	appendTo := func(path, s string) {
		f, err := os.OpenFile(filepath.Join(dir, path), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprint(f, s)
		f.Close()
	}
	appendTo("app-1/0.log", "from before the foundation started\n")
	appendTo("app-1/0.err", "stderr from before\n")
	store := logcache.NewStore(0)
	a := newAppLogs(dir, "", store, func(p string) (string, bool) { return p, p == "app-1" })
	appendTo("app-1/0.log", "[CELL/0] 2026-11-24T10:00:00Z Container became healthy\nhello\nhalf a li")
	appendTo("app-1/1.log", "instance one\n")
	appendTo("app-1/1.err", "[CELL/1] 2026-11-24T10:00:00Z not a cell line on stderr\n")
	appendTo("worker-9/0.log", "not an app's web process\n")
	now := time.Unix(0, 1000)
	a.scan(now)
	appendTo("app-1/0.log", "ne\n")
	appendTo("app-1/0.err", "panic: boom\n")
	a.scan(now.Add(time.Second))

	got := []string{}
	for _, e := range store.Read(logcache.Query{SourceID: "app-1", End: 1 << 62, Limit: 100, Types: []string{logcache.TypeLog}}) {
		got = append(got, fmt.Sprintf("%d %s/%s %s %s", e.Timestamp, e.Tags["source_type"], e.InstanceID, e.Log.Type, e.Log.Payload))
	}
	// A scan's lines are a nanosecond apart, in the order read (stderr after stdout).
	want := []string{"1000 CELL/0 OUT Container became healthy", "1001 APP/PROC/WEB/0 OUT hello", "1002 APP/PROC/WEB/1 OUT instance one",
		"1003 APP/PROC/WEB/1 ERR [CELL/1] 2026-11-24T10:00:00Z not a cell line on stderr",
		"1000001000 APP/PROC/WEB/0 OUT half a line", "1000001001 APP/PROC/WEB/0 ERR panic: boom"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("envelopes:\n got  %q\n want %q", got, want)
	}
	if n := store.Len("worker-9"); n != 0 {
		t.Errorf("%d envelopes of a process that is no app", n)
	}
}

// The router's access-log lines of an app's requests become its RTR lines; lines of
// no known app, and a backlog beyond one read, are skipped.
func TestAppLogsRouterLines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	access := filepath.Join(dir, "access.log")
	line := func(app, path string) string {
		return `a.apps.localhost - [2026-11-24T10:00:00.000000000Z] "GET ` + path + ` HTTP/1.1" 200 0 2 "-" "curl" "127.0.0.1:1" "127.0.0.1:2" ` +
			`x_forwarded_for:"-" x_forwarded_proto:"http" vcap_request_id:"r" response_time:0.001 gorouter_time:0.0001 app_id:"` + app +
			`" app_index:"0" instance_id:"i" x_cf_routererror:"-"` + "\n"
	}
	if err := os.WriteFile(access, []byte(line("app-1", "/old")), 0o644); err != nil {
		t.Fatal(err)
	}
	store := logcache.NewStore(0)
	a := newAppLogs(filepath.Join(dir, "instances"), access, store, func(p string) (string, bool) { return p, p == "app-1" })
	f, err := os.OpenFile(access, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprint(f, line("app-1", "/new")+line("app-2", "/other")+"not an access-log line\n")
	a.scan(time.Unix(1, 0))
	got := store.Read(logcache.Query{SourceID: "app-1", End: 1 << 62, Limit: 100})
	if len(got) != 1 || got[0].Tags["source_type"] != "RTR" || !strings.Contains(string(got[0].Log.Payload), "GET /new ") {
		t.Fatalf("RTR envelopes of app-1: %v; want the one line written after the start", got)
	}
	if store.Len("app-2") != 0 {
		t.Errorf("lines of an unknown app were stored")
	}
	// A backlog bigger than one read: only the newest lines are sent.
	for i := 0; i < maxLogRead/len(line("app-1", "/bulk"))+100; i++ {
		fmt.Fprint(f, line("app-1", "/bulk"))
	}
	fmt.Fprint(f, line("app-1", "/last"))
	a.scan(time.Unix(2, 0))
	last := store.Read(logcache.Query{SourceID: "app-1", End: 1 << 62, Limit: 1, Descending: true})
	if len(last) != 1 || !strings.Contains(string(last[0].Log.Payload), "GET /last ") {
		t.Errorf("newest RTR line after a backlog: %v; want /last", last)
	}
	if n := store.Len("app-1"); n > 1+maxLogRead/len(line("app-1", "/bulk"))+1 {
		t.Errorf("%d envelopes after a backlog: want at most one read's worth", n)
	}
}
