package engine

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestRecordsRoundTripAndTheNewestWins(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if r, err := LoadRunRecord(dir, ""); r != nil || err != nil {
		t.Fatalf("LoadRunRecord in an empty state dir = %+v, %v; want none", r, err)
	}
	started := time.Date(2026, 11, 22, 13, 5, 1, 0, time.UTC)
	older := RunRecord{ID: "20261122-130501-3f9a", Name: "a", Spec: "a.yml", Started: started, DB: StorePrivate}
	newer := RunRecord{ID: "20261123-090000-0001", Name: "b", Spec: "b.yml", Started: started.Add(20 * time.Hour), DB: StoreOnCF,
		Access: &Access{API: "http://127.0.0.1:1", Org: "o", Space: "g", TunnelApp: "b-tunnel"}}
	for _, r := range []RunRecord{newer, older} {
		if err := SaveRunRecord(dir, r); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		id   string
		want *RunRecord
	}{
		{"", &newer},
		{older.ID, &older},
		{newer.ID, &newer},
		{"20201122-130501-0000", nil},
	}
	for _, c := range cases {
		got, err := LoadRunRecord(dir, c.id)
		switch {
		case err != nil:
			t.Errorf("LoadRunRecord(%q): %v", c.id, err)
		case c.want == nil && got != nil:
			t.Errorf("LoadRunRecord(%q) = %+v, want none", c.id, got)
		case c.want != nil && (got == nil || got.ID != c.want.ID || got.DB != c.want.DB || !got.Started.Equal(c.want.Started) ||
			(c.want.Access != nil) != (got.Access != nil) || got.Access != nil && *got.Access != *c.want.Access):
			t.Errorf("LoadRunRecord(%q) = %+v, want %+v", c.id, got, c.want)
		}
	}
}

func TestRecordsRefuseWhatIsNotARecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := SaveRunRecord(dir, RunRecord{ID: "../escape"}); err == nil {
		t.Fatal("SaveRunRecord accepted a run id that is a path")
	}
	if err := os.MkdirAll(RunRecordsDir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(RunRecordsDir(dir), "20261122-130501-3f9a.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := LoadRunRecord(dir, ""); err == nil {
		t.Fatalf("LoadRunRecord of a damaged record = %+v, want an error", r)
	}
}
