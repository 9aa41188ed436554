package worker

import (
	"bytes"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/loadgen"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// TestWorkloadConnectTo: the dial override the engine fills in survives the plan's
// JSON and reaches the generator's config; without it the JSON is as before.
func TestWorkloadConnectTo(t *testing.T) {
	wl := closedLoop()
	wl.ConnectTo = "127.0.0.1:41234"
	b := wl.Marshal()
	if !bytes.Contains(b, []byte(`"connect_to":"127.0.0.1:41234"`)) {
		t.Fatalf("workload JSON %s has no connect_to", b)
	}
	back, err := ParseWorkload(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, wl) {
		t.Fatalf("round trip:\n got  %+v\n want %+v", back, wl)
	}
	cfg, err := back.config("http://stub.apps.localhost/", 1, 2, time.Now(), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ConnectTo != wl.ConnectTo || cfg.Target.Host != "stub.apps.localhost" {
		t.Fatalf("loadgen config dials %q for target host %q, want %q for stub.apps.localhost", cfg.ConnectTo, cfg.Target.Host, wl.ConnectTo)
	}

	wl.ConnectTo = ""
	if b := wl.Marshal(); bytes.Contains(b, []byte("connect_to")) {
		t.Fatalf("workload JSON %s names connect_to although it is empty", b)
	}
	// Plans stored before the field existed read as DNS, not as an error.
	old, err := ParseWorkload([]byte(`{"model":"closed","users":1,"keep_alive":true,"timeout_ns":1000000000,"requests":[{"method":"GET","path":"/","weight":1}]}`))
	if err != nil || old.ConnectTo != "" || old.Model != spec.ModelClosed {
		t.Fatalf("old plan: %+v, %v", old, err)
	}
}

// A step with a rate in all (a ramp of rates) splits it over the live instances,
// whatever the workload says; without one the workload's rate applies.
func TestPerInstanceRate(t *testing.T) {
	perInst := Workload{Model: spec.ModelOpen, Rate: 50, RatePer: spec.RatePerInstance}
	total := Workload{Model: spec.ModelOpen, Rate: 300, RatePer: spec.RatePerTotal}
	levels := Workload{Model: spec.ModelOpen, RatePer: spec.RatePerTotal}
	cases := []struct {
		w    Workload
		st   *resultsdb.Step
		live int
		want float64
	}{
		{perInst, nil, 4, 50},
		{total, nil, 3, 100},
		{total, &resultsdb.Step{}, 0, 300},
		{levels, &resultsdb.Step{Rate: 700}, 2, 350},
		{perInst, &resultsdb.Step{Rate: 90}, 3, 30},
	}
	for _, c := range cases {
		if got := c.w.perInstanceRate(c.st, c.live); got != c.want {
			t.Errorf("perInstanceRate(%+v, step %+v, %d live) = %v, want %v", c.w, c.st, c.live, got, c.want)
		}
	}
}

// TestWorkloadTick: the spec's open-loop tick survives the plan's JSON and reaches the
// generator's config; the spec's default is loadgen's, and a plan stored before the
// field existed (or a closed loop) leaves it to loadgen's default.
func TestWorkloadTick(t *testing.T) {
	if spec.DefaultTick != loadgen.DefaultTick {
		t.Fatalf("the spec's default tick %v is not loadgen's %v", spec.DefaultTick, loadgen.DefaultTick)
	}
	sw := spec.Workload{Model: spec.ModelOpen, Rate: 20000, RatePer: spec.RatePerInstance, MaxInFlight: 64, Tick: time.Millisecond,
		KeepAlive: true, Timeout: time.Second, Requests: []spec.Request{{Name: "r", Method: "GET", Path: "/", Weight: 1}}}
	b := FromSpec(&sw).Marshal()
	if !bytes.Contains(b, []byte(`"tick_ns":1000000`)) {
		t.Fatalf("workload JSON %s has no tick", b)
	}
	back, err := ParseWorkload(b)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := back.config("http://127.0.0.1:1/", 1, 2, time.Now(), os.LookupEnv)
	if err != nil || cfg.Tick != time.Millisecond {
		t.Fatalf("loadgen config tick %v (%v), want 1ms", cfg.Tick, err)
	}
	if b := closedLoop().Marshal(); bytes.Contains(b, []byte("tick")) {
		t.Fatalf("closed-loop workload JSON %s names a tick", b)
	}
	old, err := ParseWorkload([]byte(`{"model":"open","rate":100,"keep_alive":true,"timeout_ns":1000000000,"requests":[{"method":"GET","path":"/","weight":1}]}`))
	if err != nil || old.Tick != 0 {
		t.Fatalf("old plan: %+v, %v", old, err)
	}
}
