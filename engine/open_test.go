package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// TestOpenRunSaysWhatToGive: what OpenRun cannot open without being told more is an
// ErrUsage that says what to give, or, for a run neither recorded here nor in a private
// Postgres, ErrRunNotFound; none of them starts a database.
func TestOpenRunSaysWhatToGive(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	given := "20261122-130501-3f9a"
	if err := SaveRunRecord(dir, RunRecord{ID: given, Started: time.Now(), DB: StoreGiven}); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	for _, c := range []struct {
		name  string
		o     StoreOptions
		id    string
		usage bool
		want  string
	}{
		{"not a run id", StoreOptions{StateDir: dir}, "../x", true, `"../x" is not a run id`},
		{"nothing recorded", StoreOptions{StateDir: empty}, "", true, "no run recorded in " + RunRecordsDir(empty)},
		{"a database to give again", StoreOptions{StateDir: dir}, given, true, "give it again (--db or CFBENCH_DB)"},
		{"the newest, given", StoreOptions{StateDir: dir}, "", true, "run " + given + " stored its results in a database given with --db"},
		{"not recorded, no private Postgres", StoreOptions{StateDir: empty, Command: func(n string) string { return "cf benchmark-" + n }},
			"20261123-090000-0001", false, "not recorded in " + RunRecordsDir(empty)},
		{"through a tunnel without a database", StoreOptions{StateDir: dir, Tunnel: &TunnelServer{URL: "https://127.0.0.1:1"}}, given, true, "--tunnel needs --db"},
		{"through a tunnel without its fingerprint", StoreOptions{StateDir: dir, DSN: "postgres://u:p@10.0.0.1/db", Tunnel: &TunnelServer{URL: "https://127.0.0.1:1", Auth: "u:p"}},
			given, true, "--tunnel needs the tunnel app's key fingerprint"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs, err := OpenRun(context.Background(), c.o, c.id)
			if err == nil {
				rs.Close()
				t.Fatal("opened")
			}
			if errors.Is(err, ErrUsage) != c.usage || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v (usage %v); want %q, usage %v", err, errors.Is(err, ErrUsage), c.want, c.usage)
			}
			if !c.usage && !errors.Is(err, resultsdb.ErrRunNotFound) {
				t.Errorf("%v, want ErrRunNotFound", err)
			}
		})
	}
}
