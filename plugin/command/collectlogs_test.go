package command

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
)

// routerLike answers like an app and writes a gorouter access-log line per request,
// with the trace id the generator sent, as a router with tracing on does; every fifth
// request of the second step is left out of the log, as a lossy log pipeline would.
type routerLike struct {
	mu    sync.Mutex
	f     *os.File
	count int
}

func (rl *routerLike) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Write([]byte("hi"))
	rl.mu.Lock()
	defer rl.mu.Unlock()
	rl.count++
	trace, span := r.Header.Get("X-B3-Traceid"), r.Header.Get("X-B3-Spanid")
	if trace == "" || rl.count%5 == 0 {
		return
	}
	fmt.Fprintf(rl.f, `stub.example.com - [%s] "GET / HTTP/1.1" 200 0 2 "-" "cfbench" "127.0.0.1:5000" "127.0.0.1:6000" `+
		`x_forwarded_for:"-" x_forwarded_proto:"http" vcap_request_id:"-" response_time:0.000300 gorouter_time:0.000100 `+
		`app_id:"0015e000-0000-4000-8000-000000000003" app_index:"0" instance_id:"i" x_cf_routererror:"-" x_b3_traceid:"%s" x_b3_spanid:"%s" x_b3_parentspanid:"-" b3:"%s-%s"`+"\n",
		time.Now().UTC().Format("2006-01-02T15:04:05.000000000Z"), trace, span, trace, span)
}

func TestRunCollectsRouterLogsAndCollectLogsResumes(t *testing.T) {
	work := t.TempDir()
	logPath := filepath.Join(work, "access.log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	srv := httptest.NewServer(&routerLike{f: f})
	defer srv.Close()
	specPath := writeSpec(t, strings.Replace(goodSpec, "http://127.0.0.1:18080", srv.URL, 1)+
		"collectors:\n  router_logs: {source: file, path: "+logPath+", delay: 100ms}\nexport:\n  dir: "+filepath.Join(work, "results")+"\n")
	env := map[string]string{"CFBENCH_DB": testpg.DSN(t)}
	state := filepath.Join(work, "state")

	r := run(t, env, "run", "-f", specPath, "--state-dir", state)
	if r.code != ExitOK {
		t.Fatalf("run: %+v", r)
	}
	m := regexp.MustCompile(`router logs of run (\S+) from file:\S+: (\d+) documents read, (\d+) requests of this run stored, 0 of other clients, 0 unparseable`).FindStringSubmatch(r.stdout)
	if m == nil || m[2] != m[3] {
		t.Fatalf("run output lacks the router log summary:\n%s", r.stdout)
	}
	// One request in five is not in the log, spread over every second: lost requests.
	rows := regexp.MustCompile(`(?m)^stub +[12] +(\d+) +(\d+) +(\d+) +([\d.]+)% +lost requests: the missing are scattered`).FindAllStringSubmatch(r.stdout, -1)
	if len(rows) != 2 {
		t.Fatalf("coverage table lacks a row per step with scattered losses:\n%s", r.stdout)
	}
	for _, row := range rows {
		if share, err := strconv.ParseFloat(row[4], 64); err != nil || share < 75 || share > 85 {
			t.Errorf("coverage %s%%, want about 80%%", row[4])
		}
	}

	// Pulled again: the cursor is at the end of the file, nothing is read twice.
	r = run(t, env, "collect-logs", m[1], "--state-dir", state)
	if r.code != ExitOK || !strings.Contains(r.stdout, m[2]+" documents read, "+m[3]+" requests of this run stored") {
		t.Fatalf("collect-logs again: %+v", r)
	}
	if r := run(t, env, "collect-logs", "nope"); r.code != ExitUsage {
		t.Fatalf("collect-logs with a bad run id: %+v", r)
	}
}
