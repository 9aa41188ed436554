package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

func TestMain(m *testing.M) { testpg.Main(m) }

const (
	fixtureRun      = "20261122-130500-0001"
	fixtureBaseline = "20261121-120000-0002"
)

// fixtureStore is a fresh database holding the fixture run and its baseline (the same
// spec, a little faster).
func fixtureStore(t testing.TB, perStep int) *resultsdb.Store {
	t.Helper()
	return fixtureStoreAt(t, testpg.DSN(t), perStep)
}

// fixtureStoreAt is fixtureStore in the database at dsn.
func fixtureStoreAt(t testing.TB, dsn string, perStep int) *resultsdb.Store {
	t.Helper()
	store, err := resultsdb.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	fixture{id: fixtureBaseline, epoch: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC), tag: 0x5eed0003, speed: 1.25, perStep: perStep}.seed(t, store)
	fixture{id: fixtureRun, epoch: time.Date(2026, 11, 22, 13, 5, 0, 0, time.UTC), tag: 0x5eed0001, speed: 1, perStep: perStep}.seed(t, store)
	return store
}

func fixtureReport(t testing.TB, store *resultsdb.Store) *Report {
	t.Helper()
	th, err := ParseThresholds("capacity=-10%,p99=+20%,throughput=-25%")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Build(context.Background(), store, []string{fixtureRun}, Options{Baseline: fixtureBaseline, FailOn: th})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestReportGolden(t *testing.T) {
	store := fixtureStore(t, 500)
	rep := fixtureReport(t, store)
	var text, js bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.txt", text.Bytes())
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.json", js.Bytes())

	// The figures the golden files hold, asserted once by meaning.
	java := rep.Runs[0].Variants[0]
	if java.Name != "java" || java.Capacity.Status != "crossed" || java.Capacity.Step != 3 || java.Capacity.FailedStep != 4 {
		t.Errorf("java capacity = %+v", java.Capacity)
	}
	// mean 6.5 ms at 1100 req/s, 10.4 ms at 1180 req/s: 8 ms is crossed 1.5/3.9 of the way.
	if c := *java.Capacity.Crossing; c < 1130.7 || c > 1130.9 {
		t.Errorf("java crossing = %v, want 1130.8", c)
	}
	node := rep.Runs[0].Variants[1]
	if node.Capacity.Status != "not_crossed" || !strings.HasPrefix(node.Capacity.Text, "≥ 1,140 req/s") {
		t.Errorf("node capacity = %+v", node.Capacity)
	}
	if d := java.Steps[3].Decomposition; d == nil || d.Dominant == "" || len(d.Layers) != 6 {
		t.Errorf("java step 4 decomposition = %+v", d)
	} else {
		var sum float64
		for _, l := range d.Layers {
			sum += l.MeanUS
		}
		if diff := sum - d.ClientMeanUS; diff > 0.01 || diff < -0.01 {
			t.Errorf("layers add up to %v, client mean %v", sum, d.ClientMeanUS)
		}
	}
	if node.Steps[0].Decomposition != nil {
		t.Errorf("node has no router lines, yet a decomposition")
	}
	if !rep.Failed() {
		t.Errorf("the baseline is 25%% faster: capacity=-10%% must fail: %+v", rep.Thresholds)
	}
	if u := java.Utilisation; len(u) != 1 || u[0].Utilisation == nil || *u[0].Utilisation != 0.49 {
		t.Errorf("java utilisation = %+v, want 0.98 of 2 cores = 0.49", u)
	}
	if m := java.Memory; m == nil || !m.Settled || m.SettledBytes != 500e6 {
		t.Errorf("java memory = %+v, want settled at 500 MB", m)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Schema != Schema || back.Version != Version {
		t.Errorf("JSON does not read back: %v %+v", err, back.Schema)
	}
}

func TestReportWithoutSLO(t *testing.T) {
	store, err := resultsdb.Open(context.Background(), testpg.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	fixture{id: fixtureRun, epoch: time.Date(2026, 11, 22, 13, 5, 0, 0, time.UTC), tag: 7, speed: 1, perStep: 50, noSLO: true}.seed(t, store)
	rep, err := Build(context.Background(), store, []string{fixtureRun}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "not judged: the spec has no slo block") || rep.Runs[0].Variants[0].Capacity != nil {
		t.Errorf("a run without slo block:\n%s", text.String())
	}
	if _, err := Build(context.Background(), store, []string{"20200101-000000-dead"}, Options{}); err == nil {
		t.Error("a run that does not exist must fail")
	}
}

// TestHTMLOffline renders the fixture's HTML form and checks what a browser test cannot
// see: one file, no reference to anything outside it, uPlot's licence inside.
func TestHTMLOffline(t *testing.T) {
	rep := fixtureReport(t, fixtureStore(t, 100))
	var b bytes.Buffer
	if err := rep.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, bad := range []string{"src=\"http", "href=\"http", "src='http", "@import", "url(http", "<link "} {
		if strings.Contains(html, bad) {
			t.Errorf("the page refers to something outside it: %q", bad)
		}
	}
	for _, want := range []string{"Permission is hereby granted", "uPlot 1.6.32", `id="report-data"`, "default-src 'none'", "1. Capacity at the SLO"} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// TestCoverageAgreesWithTheStore: the report counts router-log coverage in its own pass
// over the samples; it must say what resultsdb.RouterCoverage (the run's table, the
// coverage check) says, step by step.
func TestCoverageAgreesWithTheStore(t *testing.T) {
	store := fixtureStore(t, 500)
	rep := fixtureReport(t, store)
	want, err := store.RouterCoverage(context.Background(), fixtureRun)
	if err != nil {
		t.Fatal(err)
	}
	got := rep.Runs[0].Coverage
	if len(got) != len(want) || len(got) == 0 {
		t.Fatalf("report coverage %+v, store %+v", got, want)
	}
	for i, w := range want {
		if g := got[i]; g.Variant != w.Variant || g.Step != w.Step+1 || g.Sent != w.Sent || g.Found != w.Found {
			t.Errorf("row %d: report %+v, store %+v", i, g, w)
		}
	}
}

// TestStoredFiguresAgreeWithLive: a run recorded before the per-second series and the
// router figures were stored (schema < 8) is reported from its samples; the report
// must read the same from the stored tables as from the samples, to the byte.
func TestStoredFiguresAgreeWithLive(t *testing.T) {
	report := func(legacy bool, maxPoints int) []byte {
		store, err := resultsdb.Open(context.Background(), testpg.DSN(t))
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		fixture{id: fixtureRun, epoch: time.Date(2026, 11, 22, 13, 5, 0, 0, time.UTC), tag: 0x5eed0001, speed: 1, perStep: 300, legacy: legacy}.seed(t, store)
		rep, err := Build(context.Background(), store, []string{fixtureRun}, Options{MaxPoints: maxPoints})
		if err != nil {
			t.Fatal(err)
		}
		var js bytes.Buffer
		if err := rep.WriteJSON(&js); err != nil {
			t.Fatal(err)
		}
		return js.Bytes()
	}
	stored, live := report(false, 0), report(true, 0)
	if !bytes.Equal(stored, live) {
		t.Errorf("the report from stored figures differs from the one computed from the samples:\n--- stored\n%s\n--- live\n%s", stored, live)
	}
	// Wider intervals than a second come from the samples; the router figures still
	// from the stored rows, so coverage and decomposition do not change with the width.
	var wide struct {
		Runs []struct {
			Coverage []CoverageRow `json:"coverage"`
			Variants []struct {
				Series *Series `json:"series"`
				Steps  []struct {
					Decomposition *Decomposition `json:"decomposition"`
				} `json:"steps"`
			} `json:"variants"`
		} `json:"runs"`
	}
	narrow := wide
	if err := json.Unmarshal(report(false, 20), &wide); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(stored, &narrow); err != nil {
		t.Fatal(err)
	}
	w, n := wide.Runs[0], narrow.Runs[0]
	if s := w.Variants[0].Series; s == nil || s.IntervalS != 4 || len(s.T) == 0 || len(s.T) >= len(n.Variants[0].Series.T) {
		t.Errorf("80 s in at most 20 points: want 4 s intervals, fewer points than per second; got %+v", s)
	}
	if len(w.Coverage) == 0 || fmt.Sprint(w.Coverage) != fmt.Sprint(n.Coverage) {
		t.Errorf("coverage changed with the interval width:\n%+v\n%+v", w.Coverage, n.Coverage)
	}
	if d := w.Variants[0].Steps[3].Decomposition; d == nil || fmt.Sprint(*d) != fmt.Sprint(*n.Variants[0].Steps[3].Decomposition) {
		t.Errorf("decomposition changed with the interval width: %+v", d)
	}
}
