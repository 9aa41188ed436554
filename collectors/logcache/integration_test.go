package logcache

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	lcclient "code.cloudfoundry.org/go-log-cache/v3"
	"code.cloudfoundry.org/go-log-cache/v3/rpc/logcache_v1"
	"code.cloudfoundry.org/go-loggregator/v10/rpc/loggregator_v2"
	"github.com/jackc/pgx/v5"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/foundation/testfoundation"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
	"github.com/cf-benchmark/cf-benchmark/platform"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

func TestMain(m *testing.M) { testpg.Main(m) }

// TestReadsTheLocalFoundation reads a real local foundation's Log Cache, found through
// the API root and authorised with go-cfclient's token as the engine does, into a real
// results DB: rows of both instances with counters that never drop, each at the
// timestamp of an envelope Log Cache holds (when the cell sampled it), not the poll's.
// Log Cache's own Go client (go-log-cache) reads the same app's gauges, its log lines
// and meta.
func TestReadsTheLocalFoundation(t *testing.T) {
	_, cl := testfoundation.Start(t)
	app := testfoundation.PushStub(t, cl, testfoundation.StubZip(t), "apps", "lc-target", 2)
	ctx := context.Background()
	cf := platform.New(cl)
	url, err := cf.LogCacheURL(ctx)
	if err != nil || url == "" {
		t.Fatalf("LogCacheURL = %q, %v", url, err)
	}
	cores, err := cf.CellCores(ctx)
	if err != nil || cores["apps"] < 1 || cores["loadgen"] < 1 {
		t.Fatalf("CellCores = %v, %v", cores, err)
	}
	// Without a token Log Cache answers 404, as the CF auth proxy does.
	if resp, err := testhttp.Client.Get(url + "/api/v1/read/" + app); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("read without a token: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	dsn := testpg.DSN(t)
	store, err := resultsdb.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	run, err := store.CreateRun(ctx, "logcache", "t.yml", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{URL: url, Client: cl.HTTPAuthClient(), Sink: store, RunID: run.ID, Interval: 100 * time.Millisecond,
		Targets: []Target{{AppName: "lc-target", AppGUID: app}, {AppName: "gone", AppGUID: "no-such-app"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Poll(ctx); err != nil {
		t.Fatalf("a poll with an unknown app: %v", err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var instances int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM (SELECT instance_index FROM container_metrics
			WHERE run_id = $1 AND cpu_time_ns IS NOT NULL GROUP BY instance_index HAVING count(*) >= 3) x`, run.ID).Scan(&instances); err != nil {
			t.Fatal(err)
		}
		if instances == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d instances with 3 readings in 2 minutes", instances)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}

	type reading struct {
		at                  time.Time
		index               int
		used, entitled, age int64
		mem, quota          int64
		source, app, state  string
		wait                *int64
	}
	rows, err := conn.Query(ctx, `SELECT at, instance_index, cpu_time_ns, entitlement_ns, container_age_ns, mem_bytes, mem_quota_bytes,
		source, app_name, state, cpu_wait_ns FROM container_metrics WHERE run_id = $1 ORDER BY instance_index, at`, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	var rs []reading
	for rows.Next() {
		var r reading
		if err := rows.Scan(&r.at, &r.index, &r.used, &r.entitled, &r.age, &r.mem, &r.quota, &r.source, &r.app, &r.state, &r.wait); err != nil {
			t.Fatalf("a row without counters or memory: %v", err)
		}
		rs = append(rs, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}

	// Every row is at the timestamp of an envelope of its instance in Log Cache (to the
	// microsecond the database keeps), as Log Cache's own client reads them.
	lc := lcclient.NewClient(url, lcclient.WithHTTPClient(cl.HTTPAuthClient()))
	gauges, err := lc.Read(ctx, app, time.Unix(0, 0), lcclient.WithEnvelopeTypes(logcache_v1.EnvelopeType_GAUGE), lcclient.WithLimit(1000))
	if err != nil {
		t.Fatal(err)
	}
	envAt := map[int]map[int64]bool{0: {}, 1: {}}
	for _, e := range gauges {
		ts := e.GetTimestamp()
		// The database keeps microseconds: the envelope's time, rounded either way.
		if e.InstanceId == "0" || e.InstanceId == "1" {
			envAt[int(e.InstanceId[0]-'0')][ts/1000] = true
			envAt[int(e.InstanceId[0]-'0')][(ts+999)/1000] = true
		}
	}
	// The same client reads the instances' output and sees the app in meta.
	checkLogsAndMeta(ctx, t, lc, app, len(gauges))
	var prev *reading
	withMemory := map[int]bool{}
	for i := range rs {
		r := &rs[i]
		if r.source != resultsdb.SourceLogCache || r.app != "lc-target" || r.state != "" || r.mem < 0 || r.quota != 64<<20 {
			t.Errorf("row %+v", *r)
		}
		if r.mem > 0 {
			withMemory[r.index] = true
		}
		lo, hi := bounds(envAt[r.index])
		if at := r.at.UnixMicro(); at >= lo && at <= hi && !envAt[r.index][at] {
			t.Errorf("row of instance %d at %s: no envelope of that instance has that timestamp", r.index, r.at.Format(time.RFC3339Nano))
		}
		if r.entitled <= 0 || r.entitled > r.age*int64(cores["apps"]) {
			t.Errorf("row %+v: entitlement not within (0, age × cell cores]", *r)
		}
		if prev != nil && prev.index == r.index && (r.used < prev.used || r.age <= prev.age || !r.at.After(prev.at)) {
			t.Errorf("instance %d went backwards: %+v after %+v", r.index, *r, *prev)
		}
		// The run-queue wait comes with the counters wherever the kernel keeps it.
		if _, err := os.Stat("/proc/self/schedstat"); err == nil && r.wait == nil {
			t.Errorf("row %+v: no run-queue wait, though this kernel keeps it", *r)
		}
		if prev != nil && prev.index == r.index && r.wait != nil && prev.wait != nil && *r.wait < *prev.wait {
			t.Errorf("instance %d: run-queue wait went back from %d to %d", r.index, *prev.wait, *r.wait)
		}
		prev = r
	}
	if !withMemory[0] || !withMemory[1] {
		t.Errorf("instances with memory in use: %v, want both (a container may read 0 only at its start)", withMemory)
	}
}

// checkLogsAndMeta reads app's log lines with Log Cache's own client: each instance's
// start-up line of the stub (on stderr), and Cloud Controller's line on its creation;
// and meta counts at least the gauges read and the logs.
func checkLogsAndMeta(ctx context.Context, t *testing.T, lc *lcclient.Client, app string, gauges int) {
	t.Helper()
	logs, err := lc.Read(ctx, app, time.Unix(0, 0), lcclient.WithEnvelopeTypes(logcache_v1.EnvelopeType_LOG), lcclient.WithLimit(1000))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range logs {
		l := e.GetLog()
		if l == nil {
			t.Fatalf("a LOG read gave %v", e)
		}
		line := string(l.GetPayload())
		switch {
		case e.Tags["source_type"] == "APP/PROC/WEB" && l.GetType() == loggregator_v2.Log_ERR && strings.Contains(line, "stub listening"):
			seen["listening/"+e.InstanceId] = true
		case e.Tags["source_type"] == "API" && strings.HasPrefix(line, "Created app with guid "+app):
			seen["created"] = true
		}
	}
	if !seen["listening/0"] || !seen["listening/1"] || !seen["created"] {
		t.Errorf("log lines seen: %v of %d; want both instances' start and the app's creation", seen, len(logs))
	}
	meta, err := lc.Meta(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m := meta[app]; m == nil || m.Count < int64(gauges+len(logs)) || m.NewestTimestamp < m.OldestTimestamp {
		t.Errorf("meta of the app: %v; want at least %d envelopes", m, gauges+len(logs))
	}
}

// bounds are the least and greatest keys of m (1, 0 when empty: nothing is within).
func bounds(m map[int64]bool) (lo, hi int64) {
	lo, hi = 1, 0
	for k := range m {
		if lo > hi {
			lo, hi = k, k
		}
		lo, hi = min(lo, k), max(hi, k)
	}
	return lo, hi
}
