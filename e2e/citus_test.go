//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/pgserver"
	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/internal/exportcheck"
	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
)

// citusOutage is how long TestRunIntoCitus keeps a worker node stopped in a step.
const citusOutage = 10 * time.Second

// TestRunIntoCitus: a run on the local foundation, through the relay, stores its samples
// on a Citus cluster of a coordinator and two workers, given to it as a user-provided
// service instance (as docs/citus.md tells a CF user to). Step 2 of 2 loses a worker
// for 10 s. The run still completes: it says it writes to a Citus cluster, names the
// worker that does not answer while it is away, and every request sent is a sample,
// stored on both workers, exported and counted on the cluster alike. The report is the
// one a single server gives: the same from the cluster as from the export directory,
// and every step figure the workers computed recomputes from the exported rows.
func TestRunIntoCitus(t *testing.T) {
	testtier.External(t, "the real cf CLI, the local foundation and a Citus cluster (scripts/install-citus.sh)")
	// Its own foundation and its own cluster (a worker of it is stopped): it runs
	// beside the package's other runs, which mostly wait.
	t.Parallel()
	root := moduleRoot(t)
	bins := buildPushed(t, root)
	cluster, db := startCitusCluster(t)
	dsn := cluster.DSN(db)
	workerPorts := []string{strconv.Itoa(cluster.Worker(0).Port()), strconv.Itoa(cluster.Worker(1).Port())}

	cf, info, cl := loggedIn(t, root, bins)
	// The run uses the results database's service instance of its generators space as it is.
	cf.mustRun(t, "target", "-o", "cfbench", "-s", "loadgen")
	creds, err := json.Marshal(map[string]string{"uri": dsn})
	if err != nil {
		t.Fatal(err)
	}
	cf.mustRun(t, "create-user-provided-service", "cfbench-results", "-p", string(creds))

	// One variant, two steps of 15 s: the outage of 10 s and the worker's restart fit
	// inside step 2, and the step's end still waits for the samples held meanwhile.
	specFile := writeExample(t, root, bins, "stub-on-cf.yml", map[string]string{
		"  - name: slow\n    manifest: ../manifests/stub.yml\n    app: stub-cpu-slow\n": "",
		"  max: 3\n  hold: 5s\n":                  "  max: 2\n  hold: 15s\n",
		"app: stub-cpu-fast\n":                    "app: stub-fast\n",
		"  users: 4\n":                            pacedUser,
		"path: ../.cfbench/foundation/access.log": "path: " + info.AccessLog,
		"  plan: db\n":                            "  plan: db\n  relay: always\n",
	})
	began := time.Now()
	p := startCF(t, cf, "run-benchmark", "-f", specFile)
	runID := p.waitFor(t, regexp.MustCompile(`^run (\S+): stub-on-cf, 1 variant\(s\), 2 step\(s\) each`))[1]
	p.waitFor(t, regexp.MustCompile(`^fast: step 2/2 starts: 2 generator instance`))
	// Into the measured part of the step, so that the outage lies inside its window,
	// not at its edge: the line comes before the step's planned start.
	time.Sleep(time.Until(stepMeasured(t, dsn, runID, "fast", 1).Add(time.Second)))
	stopped := time.Now()
	if err := cluster.StopWorker(1); err != nil {
		t.Fatalf("stop worker 1: %v", err)
	}
	time.Sleep(citusOutage)
	sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	err = cluster.StartWorker(sctx, 1)
	cancel()
	if err != nil {
		t.Fatalf("start worker 1 again: %v", err)
	}
	restarted := time.Now()
	out, code := p.wait(t)
	t.Logf("the run took %s; worker 1 (127.0.0.1:%s) was stopped %s after the start, for %s",
		time.Since(began).Round(time.Second), workerPorts[1], stopped.Sub(began).Round(100*time.Millisecond), restarted.Sub(stopped).Round(100*time.Millisecond))
	if code != 0 {
		t.Fatalf("cf run-benchmark: exit %d\n%s", code, out)
	}

	// What the run said about its store: a cluster whose two workers hold the shards,
	// and, while one was away, which one.
	kind := regexp.MustCompile(`(?m)^results db: cfbench-results through the tunnel app stub-on-cf-tunnel, a Citus \S+ cluster: 2 nodes hold shards \(127\.0\.0\.1:(\d+), 127\.0\.0\.1:(\d+)\)$`).FindStringSubmatch(out)
	if kind == nil || !slices.Equal(sorted(kind[1:]), sorted(workerPorts)) {
		t.Errorf("the run does not say it writes to the Citus cluster of workers %v (%v):\n%s", workerPorts, kind, out)
	}
	away := regexp.MustCompile(`(?m)^results database: a Citus node does not answer: 127\.0\.0\.1:` + workerPorts[1] + ` \(`)
	if !away.MatchString(out) {
		t.Errorf("no note names the stopped worker 127.0.0.1:%s:\n%s", workerPorts[1], out)
	}
	if !strings.Contains(out, "results database: every Citus node answers again") {
		t.Errorf("no note says the worker answers again:\n%s", out)
	}
	for _, want := range []string{"pushing the relay app stub-on-cf-relay", "run " + runID + " completed", "exported run " + runID} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// The outage lay inside step 2's measured window.
	dir := filepath.Join(cf.dir, "results", runID)
	steps := readCSV(t, filepath.Join(dir, "steps.csv"))
	if len(steps) != 2 {
		t.Fatalf("steps.csv has %d steps, want 2", len(steps))
	}
	if from, to := csvTime(t, steps[1]["warmup_until"]), csvTime(t, steps[1]["ends_at"]); stopped.Before(from) || restarted.After(to) {
		t.Errorf("worker 1 was away from %s to %s, not inside step 2's measured window %s to %s",
			stopped.Format(time.TimeOnly), restarted.Format(time.TimeOnly), from.Format(time.TimeOnly), to.Format(time.TimeOnly))
	}

	// Sent = stored: every request a generator sent is a sample in the export and on the
	// cluster, none dropped, and the samples are on both workers.
	var sent, stored, spilled int
	for _, w := range readCSV(t, filepath.Join(dir, "workers.csv")) {
		sent += atoi(t, w["sent"])
		stored += atoi(t, w["stored"])
		spilled += atoi(t, w["spilled"])
		if d := atoi(t, w["dropped"]); d != 0 {
			t.Errorf("generator %s (instance %s) dropped %d samples", w["worker_id"], w["instance_index"], d)
		}
	}
	samples := readCSV(t, filepath.Join(dir, "samples.csv"))
	inStep2 := 0
	for _, s := range samples {
		if s["step"] == "2" {
			inStep2++
		}
	}
	onCluster, perNode := citusSamples(t, dsn, runID)
	t.Logf("sent %d, stored %d (%d through the generators' disk), exported %d (%d in step 2), on the cluster %d: %v",
		sent, stored, spilled, len(samples), inStep2, onCluster, perNode)
	if sent == 0 || inStep2 == 0 || sent != len(samples) || stored != sent || onCluster != sent {
		t.Errorf("sent %d, stored %d, exported %d samples (%d in step 2), %d on the cluster: want all equal and some in step 2",
			sent, stored, len(samples), inStep2, onCluster)
	}
	// The writes that touched the stopped worker's shards failed as a whole: the
	// generators kept those samples on their disk until it was back (docs/citus.md).
	if spilled == 0 {
		t.Errorf("no sample went through the generators' disk while a worker was away for %s", citusOutage)
	}
	total := 0
	for _, port := range workerPorts {
		if perNode["127.0.0.1:"+port] == 0 {
			t.Errorf("no samples on worker 127.0.0.1:%s: %v", port, perNode)
		}
	}
	for _, n := range perNode {
		total += n
	}
	if len(perNode) != 2 || total != onCluster {
		t.Errorf("samples per node %v (%d), want the %d of the run on the two workers", perNode, total, onCluster)
	}
	checkRelayCarried(t, cf, "stub-on-cf", "stub-on-cf-gen-fast", len(samples))

	// The report as on one server: the same from the cluster as from the export, and
	// every step figure the workers computed recomputes from the exported rows.
	for _, format := range []string{"json", "text"} {
		fromDB := cf.mustRun(t, "benchmark-report", runID, "--format", format)
		fromDir := cf.mustRun(t, "benchmark-report", dir, "--format", format)
		if fromDB != fromDir {
			t.Errorf("the %s report from the cluster differs from the export directory's:\n%s\n---\n%s", format, fromDB, fromDir)
		}
	}
	diffs, n, err := exportcheck.Compare(dir, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		t.Errorf("recomputed from the exported rows: %s", d)
	}
	if n.Steps != 2 {
		t.Errorf("recomputed %d steps from the export, want 2", n.Steps)
	}
	assertGeneratorsAtZero(t, cl, "stub-on-cf", "fast")
}

// startCitusCluster starts a Citus cluster of a coordinator and two workers of the
// test's own (testpg's shared one lives in packages run with testpg.Main, and a worker
// of this one is stopped) with a distributed database, stopped and removed when t ends.
func startCitusCluster(t *testing.T) (*pgserver.Cluster, string) {
	t.Helper()
	c := pgserver.NewCluster(pgserver.Options{Dir: testpg.Dir(t), Fast: true}, 2)
	// Start's context bounds the cluster's life, not its start-up, which pgserver bounds.
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("start a Citus cluster: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const db = "results"
	if err := c.CreateDatabase(ctx, db); err != nil {
		t.Fatalf("create the results database on the Citus cluster: %v", err)
	}
	return c, db
}

// citusSamples counts the samples of run runID on the cluster of coordinator dsn, and
// every sample of the database per node that holds a placement of them (HOST:PORT).
func citusSamples(t *testing.T, dsn, runID string) (int, map[string]int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to the coordinator: %v", err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM samples s JOIN workers w ON w.id = s.worker_id WHERE w.run_id = $1`, runID).Scan(&n); err != nil {
		t.Fatalf("count the run's samples on the cluster: %v", err)
	}
	rows, err := conn.Query(ctx, `SELECT nodename || ':' || nodeport, bool_and(success), sum(CASE WHEN success THEN result::bigint END)
FROM run_command_on_placements('samples', 'SELECT count(*) FROM %s') GROUP BY 1`)
	if err != nil {
		t.Fatalf("count the samples per node: %v", err)
	}
	perNode := map[string]int{}
	for rows.Next() {
		var node string
		var ok bool
		var count *int64
		if err := rows.Scan(&node, &ok, &count); err != nil {
			t.Fatalf("count the samples per node: %v", err)
		}
		if !ok || count == nil {
			t.Fatalf("a placement of samples on %s did not answer", node)
		}
		perNode[node] = int(*count)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("count the samples per node: %v", err)
	}
	return n, perNode
}

// stepMeasured is when the measured part of step idx (from 0) of variant begins (its
// warm-up ends), as the run planned it on the cluster of coordinator dsn.
func stepMeasured(t *testing.T, dsn, runID, variant string, idx int) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to the coordinator: %v", err)
	}
	defer conn.Close(ctx)
	var at time.Time
	if err := conn.QueryRow(ctx, `SELECT warmup_until FROM steps WHERE run_id = $1 AND variant = $2 AND idx = $3`, runID, variant, idx).Scan(&at); err != nil {
		t.Fatalf("read the plan of %s step %d: %v", variant, idx+1, err)
	}
	return at
}

// sorted returns a sorted copy of s.
func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
