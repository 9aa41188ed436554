package worker

import (
	"bytes"
	"os"
	"reflect"
	"testing"
	"time"

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
