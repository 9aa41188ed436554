package generator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The files in testdata are real outputs of each tool, recorded once against the
// benchmark's nginx target (small runs, so they stay small).
func TestParsersReadRecordedOutputs(t *testing.T) {
	for _, c := range []struct {
		file  string
		parse func([]byte) (Result, error)
		want  Result
	}{
		// wrk -t1 -c4 -d2s -s tools/bench/wrk-json.lua: "817 requests in 2.11s".
		{"wrk.out", ParseWrk, Result{OK: 817, Seconds: 2.107195, P99: 113043 * time.Microsecond}},
		// hey -n 200 -c 4 -o csv: 200 lines, the last response ends at its offset plus
		// its response time.
		{"hey.csv", ParseHey, Result{OK: 200, Seconds: 0.3688, P99: 90600 * time.Microsecond}},
		// vegeta attack -rate=200/1s -duration=1s, then report -type=json.
		{"vegeta.json", ParseVegeta, Result{OK: 125, Seconds: 1.838694759, P99: 1116473504}},
		// oha -c 4 -z 1s --no-tui --output-format json: 22,629 answered 200, and 4 requests
		// "aborted due to deadline" when -z ran out, which are no failures of the target.
		{"oha.json", ParseOha, Result{OK: 22629, Seconds: 1.008997435, P99: 3334558 * time.Nanosecond}},
		// k6 run tools/bench/k6-closed.js --summary-export, VUS=4 DURATION=1s: http_req_failed's
		// "passes" are the failed requests (none), Seconds is count / rate.
		{"k6-summary.json", ParseK6, Result{OK: 5152, Seconds: 5152 / 5067.959956010187, P99: 8529767 * time.Nanosecond}},
		// cf-benchmark run --json of tools/bench/cfbench-open.yml.tmpl at 200 req/s for 2 s, 4
		// in flight, on a machine at a load average of 40: its saturation check warned.
		{"cfbench.jsonl", ParseOurs, Result{OK: 399, Seconds: 2, P99: 129028 * time.Microsecond}},
	} {
		t.Run(c.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.parse(b)
			if err != nil {
				t.Fatal(err)
			}
			if c.file == "cfbench.jsonl" && (len(got.Notes) != 1 || !strings.HasPrefix(got.Notes[0], "warn generator-saturation: the generators could not keep up")) {
				t.Errorf("notes %q, want the saturation warning", got.Notes)
			}
			if got.OK != c.want.OK || got.Errors != c.want.Errors || !near(got.Seconds, c.want.Seconds) || got.P99.Round(time.Microsecond) != c.want.P99.Round(time.Microsecond) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func near(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 }

// Each parser says what is wrong with output that is not its tool's, instead of
// returning zeros.
func TestParsersRejectForeignOutput(t *testing.T) {
	for name, parse := range map[string]func([]byte) (Result, error){"wrk": ParseWrk, "oha": ParseOha, "hey": ParseHey,
		"vegeta": ParseVegeta, "k6": ParseK6, "cf-benchmark": ParseOurs} {
		for _, in := range []string{"", "Running 10s test @ http://127.0.0.1/\n", `{"unrelated":1}`} {
			if _, err := parse([]byte(in)); err == nil || !strings.HasPrefix(err.Error(), name+":") {
				t.Errorf("%s on %q: %v, want an error naming the tool", name, in, err)
			}
		}
	}
}

func TestWrkCountsStatusErrorsOutOfTheRequests(t *testing.T) {
	r, err := ParseWrk([]byte("Running 1s test\n{\"duration_us\":1000000,\"requests\":100,\"bytes\":0," +
		"\"errors\":{\"connect\":1,\"read\":2,\"write\":3,\"status\":10,\"timeout\":4},\"latency_p99_us\":900}\n"))
	if err != nil || r.OK != 90 || r.Errors != 20 || r.Seconds != 1 {
		t.Fatalf("%+v %v, want 90 ok, 20 errors", r, err)
	}
}

func TestHeyCountsOtherStatusesAsErrors(t *testing.T) {
	csv := "response-time,DNS+dialup,DNS,Request-write,Response-delay,Response-read,status-code,offset\n" +
		"0.0010,0,0,0,0,0,200,0.5000\n0.0020,0,0,0,0,0,503,0.7000\n0.0030,0,0,0,0,0,204,0.1000\n"
	r, err := ParseHey([]byte(csv))
	if err != nil || r.OK != 2 || r.Errors != 1 || !near(r.Seconds, 0.702) || r.P99 != 3*time.Millisecond {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := ParseHey([]byte(csv + "0.1,0,0,0,0,0,abc,1\n")); err == nil || !strings.Contains(err.Error(), "line 5") {
		t.Fatalf("bad line: %v, want an error naming line 5", err)
	}
}
