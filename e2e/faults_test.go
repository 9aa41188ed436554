//go:build linux

package e2e

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
)

// TestLoseOneOfThreeOnLocalFoundation runs examples/lose-one-of-three.yml, shortened to
// steps of 15 s with the crash 6 s into step 2: the stub on 3 instances under a steady
// open loop, instance 1 crashed through the local foundation's chaos API. The run
// completes; the fault is recorded (run_events.csv, kind fault, the instance it hit and
// the time until it ran again); the report's section "5a. Faults injected" says what it
// hit, when the instance ran again and whether the p99 came back, and step 2 is marked
// disturbed. It needs only the stub (not the examples' JDK and Node apps), so it is a
// test of its own rather than a part of TestExamplesOnLocalFoundation.
func TestLoseOneOfThreeOnLocalFoundation(t *testing.T) {
	testtier.External(t, "the real cf CLI and the local foundation")
	t.Parallel()
	root := moduleRoot(t)
	bins := buildPushed(t, root)
	cf, _, _ := loggedInTo(t, root, bins)
	file := writeExample(t, root, bins, "lose-one-of-three.yml", map[string]string{
		"  hold: 30s\n  warmup: 3s\n": "  hold: 15s\n  warmup: 2s\n",
		"      at: 10s\n":             "      at: 6s\n",
	})
	p := startCF(t, cf, "run-benchmark", "-f", file)
	runID := p.waitFor(t, regexp.MustCompile(`^run (\S+): lose-one-of-three, 1 variant\(s\), 2 step\(s\) each`))[1]
	out, code := p.wait(t)
	if code != 0 {
		t.Fatalf("cf run-benchmark lose-one-of-three: exit %d\n%s", code, out)
	}
	for _, want := range []*regexp.Regexp{
		// The progress line when it is applied, then when the instance runs again.
		regexp.MustCompile(`fast-i3: crash of instance 1 of the app under test, 6s into step 2: hit instance \S+`),
		regexp.MustCompile(`fast-i3: crash of instance 1 .*; running again after \d`),
		// The report's section.
		regexp.MustCompile(`(?m)^5a\. Faults injected \(ramp\.faults\)\n  fast-i3 step 2, 6\.\d s in: crash of instance 1 of stub-fast-i3 \(hit \S+\)\n      running again after \d+\.\d s; p99 (back within the pre-fault level after \d+ s|never left|not recovered)`),
		regexp.MustCompile(`(?m)^      p99 \S+ ms before, \S+ ms from the fault until back`),
		regexp.MustCompile(`fast-i3 step 2 disturbed: .*a crash of instance 1 of stub-fast-i3 was injected`),
	} {
		if !want.MatchString(out) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
	var faults []map[string]string
	for _, e := range readCSV(t, filepath.Join(cf.dir, "results", runID, "run_events.csv")) {
		if e["kind"] == "fault" {
			faults = append(faults, e)
		}
	}
	if len(faults) != 1 || faults[0]["step"] != "2" || faults[0]["variant"] != "fast-i3" || faults[0]["level"] != "info" {
		t.Fatalf("run_events.csv faults %v, want the one crash in step 2 (index 1)", faults)
	}
	var ev struct {
		Action       string   `json:"action"`
		Index        int      `json:"index"`
		Instances    []string `json:"instance_guids"`
		RunningAgain *int64   `json:"running_again_ms"`
	}
	if err := json.Unmarshal([]byte(faults[0]["evidence"]), &ev); err != nil || ev.Action != "crash" || ev.Index != 1 ||
		len(ev.Instances) != 1 || ev.RunningAgain == nil || *ev.RunningAgain <= 0 {
		t.Errorf("the fault's evidence %s (%v): want the crash of instance 1, the instance it hit and the time until it ran again", faults[0]["evidence"], err)
	}
	if i := strings.Index(out, "5a. Faults injected"); i >= 0 {
		t.Logf("the report's section:\n%s", out[i:i+strings.Index(out[i:], "\n6. ")])
	}
	if strings.Contains(out, "not applied") {
		t.Errorf("the fault was not applied:\n%s", out)
	}
}
