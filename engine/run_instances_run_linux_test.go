package engine

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation/testfoundation"
	"github.com/cf-benchmark/cf-benchmark/platform"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// instanceRunSpec is a short run on the local foundation: the stub as the app under
// test, one generator instance of one paced user, two steps; it exports beside itself
// (the test's temp dir), not into the working directory.
const instanceRunSpec = `version: 1
name: NAME
landscape:
  org: cfbench
  apps: {space: apps}
  generators: {space: loadgen}
  create_missing: true
results_db: {service_instance: cfbench-results, offering: postgres, plan: db}
variants:
  - name: fast
    manifest: stub.yml
    app: stub-fast
workload:
  model: closed
  users: 1
  think_time: 10ms
  requests:
    - {name: hello, path: /hello}
ramp: {start: 1, step: 1, max: 2, hold: 8s, warmup: 1s}
slo: {latency: p99, max_latency: 1s, max_error_rate: 0.001}
collectors:
  container_metrics: {interval: 1s}
export: {dir: results}
`

// crashReporter kills the app under test's instance 3 s into step 2 when told to.
type crashReporter struct {
	discardReporter
	t     *testing.T
	cf    *platform.CF
	kill  bool
	mu    sync.Mutex
	notes []string
	at    time.Time // when it killed
	guid  string    // the instance it killed
	done  chan struct{}
}

func (c *crashReporter) Note(msg string) {
	c.mu.Lock()
	c.notes = append(c.notes, msg)
	c.mu.Unlock()
	if !c.kill || !strings.HasPrefix(msg, "fast: step 2/2 starts") {
		return
	}
	go func() {
		defer close(c.done)
		time.Sleep(3 * time.Second)
		ctx := context.Background()
		s, err := c.cf.Client().Spaces.ListAll(ctx, nil)
		if err != nil {
			c.t.Errorf("list spaces: %v", err)
			return
		}
		for _, sp := range s {
			a, err := c.cf.FindApp(ctx, sp.GUID, "stub-fast")
			if err != nil || a == nil {
				continue
			}
			st, err := c.cf.InstanceStats(ctx, a.ProcessGUID)
			if err != nil || len(st) == 0 {
				c.t.Errorf("stats of stub-fast: %+v %v", st, err)
				return
			}
			c.mu.Lock()
			c.at, c.guid = time.Now(), st[0].GUID
			c.mu.Unlock()
			if killInstance(st[0].GUID) == 0 {
				c.t.Errorf("no process of instance %s to kill", st[0].GUID)
			}
			return
		}
		c.t.Error("no app stub-fast to kill")
	}()
}

func (c *crashReporter) Done(Stage, *Outcome) {}

// TestInstanceChecksInARunOnTheLocalFoundation: whole runs on the local foundation
// (deploy, ramp, export, report). A clean one trips no instance check; in one where
// the app under test's only instance is killed (SIGKILL) 3 s into step 2, and restarted
// at once by the foundation, exactly one instance_crashed finding names step 2, the
// instance, the reason and the time, and the report marks step 2 and says the SLO broke
// during it.
func TestInstanceChecksInARunOnTheLocalFoundation(t *testing.T) {
	t.Parallel()
	_, cl := testfoundation.Start(t)
	cf := platform.New(cl)
	dir, bin := stubRunDir(t)
	run := func(name string, kill bool) (*Outcome, *crashReporter) {
		t.Helper()
		sp, text := instanceRun(t, dir, name)
		rep := &crashReporter{t: t, cf: cf, kill: kill, done: make(chan struct{})}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
		defer cancel()
		o, err := RunSession(ctx, sp, text, SessionConfig{CF: cf, API: cl.Config.ApiURL(""), Pushed: Pushed{Binary: bin}, Reporter: rep,
			PollEvery: 200 * time.Millisecond, SpillDir: t.TempDir()})
		if err != nil {
			t.Fatalf("run %s: %v\n%s", name, err, strings.Join(rep.notes, "\n"))
		}
		if o.Run.Status != resultsdb.RunCompleted {
			t.Fatalf("run %s %s (%s)", name, o.Run.Status, o.Run.Reason)
		}
		return o, rep
	}

	o, _ := run("clean", false)
	for _, f := range o.Findings {
		if strings.HasPrefix(f.Check, "instance_") {
			t.Errorf("a clean run: finding %s at step %d: %s", f.Check, f.Step+1, f.Message)
		}
	}

	o, rep := run("crash", true)
	select {
	case <-rep.done:
	case <-time.After(time.Minute):
		t.Fatal("step 2 never started: nothing was killed")
	}
	var crashes []StepFinding
	for _, f := range o.Findings {
		if strings.HasPrefix(f.Check, "instance_") {
			crashes = append(crashes, f)
		}
	}
	if len(crashes) != 1 {
		t.Fatalf("instance findings %+v, want exactly one", crashes)
	}
	f := crashes[0]
	at, perr := time.Parse(time.RFC3339Nano, f.Evidence["at"].(string))
	if f.Check != InstanceCrashedCheck || f.Variant != "fast" || f.Step != 1 || f.Evidence["index"] != 0 || f.Evidence["instance_guid"] != rep.guid ||
		f.Evidence["role"] != InstanceRoleApp || !strings.Contains(f.Evidence["reason"].(string), "137") || perr != nil ||
		at.Before(rep.at.Add(-time.Second)) || at.After(rep.at.Add(5*time.Second)) {
		t.Errorf("finding %+v; want instance_crashed of instance 0 (%s) at step 2, killed at %s", f, rep.guid, rep.at.UTC())
	}
	t.Logf("%s at step %d: %s", f.Check, f.Step+1, f.Message)
	if o.Report == nil {
		t.Fatalf("no report: %v", o.ReportErr)
	}
	v := o.Report.Runs[0].Variants[0]
	if len(v.Steps) != 2 || v.Steps[0].Disturbed() || !v.Steps[1].Disturbed() {
		t.Fatalf("steps %+v: want step 2 disturbed, step 1 not", v.Steps)
	}
	t.Logf("capacity: %s", v.Capacity.Text)
	if !strings.Contains(v.Capacity.Text+strings.Join(v.Capacity.LimitedBy, " "), "during which instance 0 of stub-fast crashed") {
		t.Errorf("capacity %q (limited by %v) does not say step 2 was disturbed", v.Capacity.Text, v.Capacity.LimitedBy)
	}
}

// stubRunDir readies a temp dir for runs of instanceRunSpec on the local foundation: the
// stub app beside its manifest (stub.yml), and cfbench built for the cells. It returns
// the dir and the cfbench binary.
func stubRunDir(t *testing.T) (dir, bin string) {
	t.Helper()
	dir = t.TempDir()
	stub := filepath.Join(dir, "stub")
	if err := os.MkdirAll(stub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(testfoundation.StubBinary(t), filepath.Join(stub, "cfbench-stub")); err != nil {
		t.Fatal(err)
	}
	manifest := "applications:\n  - name: stub-fast\n    path: stub\n    buildpacks: [binary_buildpack]\n    command: ./cfbench-stub\n" +
		"    memory: 64M\n    disk_quota: 64M\n    instances: 1\n    health-check-type: port\n    routes: [{route: stub-fast.apps.localhost}]\n"
	if err := os.WriteFile(filepath.Join(dir, "stub.yml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "cfbench")
	build := exec.Command("go", "build", "-o", bin, "github.com/cf-benchmark/cf-benchmark/cmd/cfbench")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build cfbench: %v\n%s", err, out)
	}
	return dir, bin
}

// instanceRun writes instanceRunSpec, named name, into dir and parses it.
func instanceRun(t *testing.T, dir, name string) (*spec.Spec, string) {
	t.Helper()
	text := strings.Replace(instanceRunSpec, "NAME", name, 1)
	file := filepath.Join(dir, name+".yml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := spec.Parse(file, []byte(text), dir)
	if err != nil {
		t.Fatal(err)
	}
	return sp, text
}
