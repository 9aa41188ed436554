package statedir

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/engine"
)

func TestRecordsRoundTripAndTheNewestWins(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if r, err := LoadRecord(dir, ""); r != nil || err != nil {
		t.Fatalf("LoadRecord in an empty state dir = %+v, %v; want none", r, err)
	}
	started := time.Date(2026, 11, 22, 13, 5, 1, 0, time.UTC)
	older := Record{ID: "20261122-130501-3f9a", Name: "a", Spec: "a.yml", Started: started, DB: DBPrivate}
	newer := Record{ID: "20261123-090000-0001", Name: "b", Spec: "b.yml", Started: started.Add(20 * time.Hour), DB: DBCF,
		Access: &engine.Access{API: "http://127.0.0.1:1", Org: "o", Space: "g", TunnelApp: "b-tunnel"}}
	for _, r := range []Record{newer, older} {
		if err := SaveRecord(dir, r); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		id   string
		want *Record
	}{
		{"", &newer},
		{older.ID, &older},
		{newer.ID, &newer},
		{"20201122-130501-0000", nil},
	}
	for _, c := range cases {
		got, err := LoadRecord(dir, c.id)
		switch {
		case err != nil:
			t.Errorf("LoadRecord(%q): %v", c.id, err)
		case c.want == nil && got != nil:
			t.Errorf("LoadRecord(%q) = %+v, want none", c.id, got)
		case c.want != nil && (got == nil || got.ID != c.want.ID || got.DB != c.want.DB || !got.Started.Equal(c.want.Started) ||
			(c.want.Access != nil) != (got.Access != nil) || got.Access != nil && *got.Access != *c.want.Access):
			t.Errorf("LoadRecord(%q) = %+v, want %+v", c.id, got, c.want)
		}
	}
}

func TestRecordsRefuseWhatIsNotARecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := SaveRecord(dir, Record{ID: "../escape"}); err == nil {
		t.Fatal("SaveRecord accepted a run id that is a path")
	}
	if err := os.MkdirAll(RecordsDir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(RecordsDir(dir), "20261122-130501-3f9a.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := LoadRecord(dir, ""); err == nil {
		t.Fatalf("LoadRecord of a damaged record = %+v, want an error", r)
	}
}
