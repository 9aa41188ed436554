package mdreport

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/tools/bench/ratesearch"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func run(ok int64, seconds, cpu float64, rssMB int64) Run {
	return Run{OK: ok, Seconds: seconds, Elapsed: time.Duration(seconds * float64(time.Second)), CPU: time.Duration(cpu * float64(time.Second)),
		RSS: rssMB << 20}
}

// fixture is a run of every kind of row: medians of three, a failed run, a skipped
// tool, a search that held, one that held nothing, and a busy machine.
func fixture() *Report {
	s := time.Second
	return &Report{
		Generated: time.Date(2026, 11, 22, 21, 0, 0, 0, time.UTC), Took: 8*time.Minute + 3*s,
		Machine: "2 cores (AMD EPYC), 24 GiB, kernel 6.1, Debian GNU/Linux 12 (bookworm)", Cores: 2, Nginx: "1.22.1",
		TargetCore: 0, GenCore: 1, Conns: 64, Repeat: 3, Closed: 10 * s, OpenProbe: 5 * s, OpenStart: 5000, Probes: 8,
		OpenP99: 10 * time.Millisecond, Foreign: 1341 * s, Measured: 333 * s, Steal: 2 * s,
		Fixed: []Run{run(1, 3, 0.41, 20), run(1, 3, 0.38, 20), run(1, 3, 0.45, 20)},
		Gens: []Gen{
			{Name: "wrk", Label: "wrk 4.1.0-3+b2 (Debian)", Version: "4.1.0-3+b2", HowClosed: "`-t1 -c64 -d10s`",
				Runs: []Run{run(1_092_780, 10, 8.58, 5), run(1_100_000, 10.01, 8.7, 5), run(1_000_000, 10, 8.0, 5)}},
			{Name: "oha", Label: "oha 1.16.0", Version: "1.16.0", HowClosed: "`-c 64 -z 10s --no-tui`; built with --locked", HowOpen: "`-c 64 -q RATE`",
				Runs: []Run{run(925_640, 10, 9.51, 317)},
				Opens: []Open{{Search: ratesearch.Outcome{Held: 75000, Failed: 80000, Probes: []ratesearch.Probe{{Rate: 75000, Held: true},
					{Rate: 80000, Verdict: "achieved 79975/s (drift -0.03%), p99 12.26 ms, 0 errors"}}},
					Best: run(374_950, 5, 4.41, 122), P99: 9830 * time.Microsecond},
					{Search: ratesearch.Outcome{Held: 70000, Failed: 75000}, Best: run(349_950, 5, 4.3, 120), P99: 8 * time.Millisecond}}},
			{Name: "oha-db", Label: "oha 1.16.0 --db-url", Version: "1.16.0", HowClosed: "`--db-url`", HowOpen: "`--db-url -q RATE`",
				Runs:  []Run{run(800_000, 10, 9.9, 400)},
				Opens: []Open{{Search: ratesearch.Outcome{Held: 60000, Failed: 65000}, Best: run(299_950, 5, 4.6, 300), P99: 9 * time.Millisecond}}},
			{Name: "hey", Label: "hey v0.1.4", Version: "v0.1.4", HowClosed: "`-c 64 -z 10s -o csv`",
				Runs: []Run{{OK: 417_120, Errors: 3, Seconds: 10, CPU: 10 * s, RSS: 102 << 20}}, Failures: []string{"run 2: hey exited: signal: killed"}},
			{Name: "vegeta", Label: "vegeta v12.12.0", Version: "v12.12.0", HowClosed: "`attack -rate=0`", HowOpen: "`attack -rate=RATE`",
				Failures: []string{"run 1: vegeta: no request count in its JSON report"},
				Opens: []Open{{Search: ratesearch.Outcome{Failed: 250, Probes: []ratesearch.Probe{{Rate: 5000, Verdict: "achieved 38279/s"},
					{Rate: 250, Verdict: "failed: vegeta exited: exit status 1: boom"}}}}}},
			{Name: "k6", Label: "k6", Skipped: "go install go.k6.io/k6@v0.54.0 failed: exit status 1 (log: /cache/logs/k6.log)"},
			{Name: "cf-benchmark", Label: "cf-benchmark (records every request into Postgres)", Version: "v0.3.0-12-gabcdef0",
				HowClosed: "closed, 64 users", HowOpen: "model open, max_in_flight 64",
				Runs: []Run{{OK: 1_036_660, Seconds: 10, Elapsed: 12 * s, CPU: 8710 * time.Millisecond, RSS: 17 << 20, Foreign: 400 * s,
					Notes: []string{"warn sample-loss: 3 samples dropped"}}},
				Opens: []Open{{Search: ratesearch.Outcome{Held: 45000, Failed: 50000, Probes: []ratesearch.Probe{{Rate: 45000, Held: true},
					{Rate: 50000, Verdict: "achieved 49990/s (drift -0.02%), p99 10.76 ms, 0 errors"}}},
					Best: run(224_950, 5, 3.11, 17), P99: 3870 * time.Microsecond},
					{Search: ratesearch.Outcome{Held: 50000, Failed: 55000}, Best: run(249_950, 5, 3.0, 18), P99: 4 * time.Millisecond}}},
		},
	}
}

func TestReportMatchesGolden(t *testing.T) {
	var b bytes.Buffer
	if err := fixture().Write(&b); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "report.md")
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Fatalf("report differs from %s (go test -update to accept):\n%s", golden, b.String())
	}
}

func TestMedian(t *testing.T) {
	if m := median([]float64{3, 1, 2}); m != 2 {
		t.Fatalf("median %g", m)
	}
	if m := median([]float64{4, 1, 2, 3}); m != 2.5 {
		t.Fatalf("median %g", m)
	}
}
