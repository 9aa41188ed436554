//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation"
	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
)

// movingRamp replaces lose-one-of-three.yml's ramp: four steps of steady load, a fault
// in each: instance 0 of the app crashes, instance 1 is OOM-killed, the generators'
// cell is evacuated, the router restarts.
const movingRamp = `  rates: [150, 150, 150, 150]
  hold: 12s
  warmup: 2s
  faults:
    - {step: 1, at: 4s, action: crash, index: 0}
    - {step: 2, at: 4s, action: oom, index: 1}
    - {step: 3, at: 4s, action: evacuate, cell: loadgen}
    - {step: 4, at: 4s, action: restart-router}
`

// TestARunOnAFoundationThatMoves is issue 47's whole case with the real cf CLI: a run on
// a local foundation whose access tokens live 20 s and whose Cloud Controller limits
// the admin's requests, with a fault scheduled in every step. The run completes, every
// sample the generators sent is stored, and its findings are exactly the injected
// events, each at its step: the crash, the OOM kill and the generators (and whatever
// else ran on their cell) moved; the router's restart is a fault with no instance to
// name. The run waited for the rate limit rather than failing on it.
func TestARunOnAFoundationThatMoves(t *testing.T) {
	testtier.External(t, "the real cf CLI and the local foundation")
	t.Parallel()
	root := moduleRoot(t)
	bins := buildPushed(t, root)
	cf, _, _ := loggedInTo(t, root, bins, func(c *foundation.Config) {
		c.AccessTokenTTL = 20 * time.Second
		c.RateLimit, c.RateLimitInterval, c.RateLimitAdmins = 120, 20*time.Second, true
		c.RouterDrainWait = time.Second
	})
	file := writeExample(t, root, bins, "lose-one-of-three.yml", map[string]string{
		"  rates: [300, 300]\n  hold: 30s\n  warmup: 3s\n  faults:\n    - step: 2\n      at: 10s\n      action: crash\n      index: 1\n": movingRamp,
		// The checks that judge the host's load judge the test machine's here: its 2
		// cores run the foundation, the router, the apps and the other tests beside
		// (in CI the app waited for a CPU 98% of its ready time, and contention said
		// so, rightly). This run is about the moves; those checks have tests of their
		// own.
		"collectors:\n": "checks:\n  generator_saturation: off\n  contention: off\n  stall: off\n\ncollectors:\n",
	})
	p := startCF(t, cf, "run-benchmark", "-f", file)
	runID := p.waitFor(t, regexp.MustCompile(`^run (\S+): lose-one-of-three, 1 variant\(s\), 4 step\(s\) each`))[1]
	out, code := p.wait(t)
	if code != 0 {
		t.Fatalf("cf run-benchmark: exit %d\n%s", code, out)
	}
	if !regexp.MustCompile(`(?m)^CC requests: \d+ \(\S+/min; budget: 120 per user per interval from X-RateLimit-Limit\); \d+ answered 429, \S+ waited for the limit$`).MatchString(out) {
		t.Errorf("the run did not say it waited for the CC's rate limit:\n%s", out)
	}
	dir := filepath.Join(cf.dir, "results", runID)

	// Sent = stored, for every generator instance, the evacuated ones too.
	var sent, stored int
	for _, w := range readCSV(t, filepath.Join(dir, "workers.csv")) {
		s, _ := strconv.Atoi(w["sent"])
		st, _ := strconv.Atoi(w["stored"])
		sent, stored = sent+s, stored+st
		if s != st || w["spilled"] != "0" || w["dropped"] != "0" {
			t.Errorf("generator instance %s (index %s): sent %s, stored %s, spilled %s, dropped %s", w["instance_guid"], w["instance_index"], w["sent"], w["stored"], w["spilled"], w["dropped"])
		}
	}
	if samples := len(readCSV(t, filepath.Join(dir, "samples.csv"))); sent == 0 || samples != sent {
		t.Errorf("generators sent %d, stored %d; samples.csv holds %d", sent, stored, samples)
	}

	// The faults, each applied at its step; the findings, exactly what they did.
	var faults, findings []string
	for _, e := range readCSV(t, filepath.Join(dir, "run_events.csv")) {
		switch {
		case e["kind"] == "fault":
			var ev struct {
				Action string `json:"action"`
			}
			json.Unmarshal([]byte(e["evidence"]), &ev)
			faults = append(faults, fmt.Sprintf("step %s %s %s", e["step"], ev.Action, e["level"]))
		case e["level"] == "warn" || e["level"] == "fail":
			var ev struct {
				Role  string `json:"role"`
				Index *int   `json:"index"`
			}
			json.Unmarshal([]byte(e["evidence"]), &ev)
			f := fmt.Sprintf("step %s %s %s", e["step"], e["check_name"], ev.Role)
			if ev.Role == "app" && ev.Index != nil {
				f += " " + strconv.Itoa(*ev.Index)
			}
			findings = append(findings, f)
			t.Logf("finding: %s: %s", f, e["message"])
		}
	}
	wantFaults := []string{"step 1 crash info", "step 2 oom info", "step 3 evacuate info", "step 4 restart-router info"}
	if !slices.Equal(faults, wantFaults) {
		t.Errorf("faults %q, want %q", faults, wantFaults)
	}
	// The evacuation moves every instance on the generators' cell: the generator, and
	// the run's tunnel app when it runs there; nothing else moves, nothing else trips.
	slices.Sort(findings)
	findings = slices.Compact(findings)
	want := []string{"step 1 instance_crashed app 0", "step 2 instance_oom app 1", "step 3 instance_moved generator"}
	if got := slices.DeleteFunc(slices.Clone(findings), func(f string) bool { return f == "step 3 instance_moved tunnel" }); !slices.Equal(got, want) {
		t.Errorf("findings %q, want exactly %q (and step 3's tunnel moved, if it ran on that cell)\n%s", findings, want, out)
	}
	if strings.Contains(out, "not applied") {
		t.Errorf("a fault was not applied:\n%s", out)
	}
}
