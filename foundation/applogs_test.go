package foundation

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation/logcache"
)

// Instance output becomes LOG envelopes of the app: new lines only, complete lines
// only, the cell's own lines as CELL without their time stamp, files of processes that
// are no app's web process skipped.
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
	store := logcache.NewStore(0)
	a := newAppLogs(dir, store, func(p string) (string, bool) { return p, p == "app-1" })
	appendTo("app-1/0.log", "[CELL/0] 2026-11-24T10:00:00Z Container became healthy\nhello\nhalf a li")
	appendTo("app-1/1.log", "instance one\n")
	appendTo("worker-9/0.log", "not an app's web process\n")
	now := time.Unix(0, 1000)
	a.scan(now)
	appendTo("app-1/0.log", "ne\n")
	a.scan(now.Add(time.Second))

	got := []string{}
	for _, e := range store.Read(logcache.Query{SourceID: "app-1", End: 1 << 62, Limit: 100, Types: []string{logcache.TypeLog}}) {
		got = append(got, fmt.Sprintf("%d %s/%s %s", e.Timestamp, e.Tags["source_type"], e.InstanceID, e.Log.Payload))
	}
	want := []string{"1000 CELL/0 Container became healthy", "1000 APP/PROC/WEB/0 hello", "1000 APP/PROC/WEB/1 instance one",
		"1000001000 APP/PROC/WEB/0 half a line"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("envelopes:\n got  %q\n want %q", got, want)
	}
	if n := store.Len("worker-9"); n != 0 {
		t.Errorf("%d envelopes of a process that is no app", n)
	}
}
