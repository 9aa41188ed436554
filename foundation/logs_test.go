package foundation

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/client"
	"github.com/cloudfoundry/go-cfclient/v3/config"
	"github.com/cloudfoundry/go-cfclient/v3/operation"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/internal/testes"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
)

func TestMain(m *testing.M) { testes.Main(m) }

// TestRouterLogsReachElasticsearch: with an Elasticsearch and a quota of 5 lines per
// hour, 12 requests through the router give exactly 5 documents in the Logstash shape,
// and 7 lines counted as dropped.
func TestRouterLogsReachElasticsearch(t *testing.T) {
	es := testes.URL(t)
	// Its own indices (and so its own index template): the node may be shared with
	// other packages' tests, whose logs-app-* documents a search over the default
	// pattern would find.
	prefix := testes.Index("logs-app-foundation")
	root := moduleRoot(t)
	binZip, _, _ := fixtures(t, root)
	dir := testpg.Dir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f := New(Config{StateDir: dir, StatsInterval: 200 * time.Millisecond, StopGrace: 2 * time.Second, Throwaway: true,
		ESURL: es, ESIndex: prefix + "-%{+YYYY.MM.dd}", LogQuota: 5, LogQuotaWindow: time.Hour})
	if err := f.Start(context.Background()); err != nil { // the foundation outlives ctx's requests
		t.Fatal(err)
	}
	defer f.Close()
	info := f.Info()
	cfg, err := config.New(info.APIURL, config.UserPassword(info.User, info.Password))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	one := uint(1)
	app, err := operation.NewAppPushOperation(cl, "cfbench", "apps").Push(ctx, &operation.AppManifest{Name: "logged",
		Buildpacks: []string{"binary_buildpack"}, Routes: &operation.AppManifestRoutes{{Route: "logged.apps.localhost"}},
		AppManifestProcess: operation.AppManifestProcess{Command: "./cfbench-stub", Memory: "64M", Instances: &one}}, bytes.NewReader(binZip))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the app to run", func() bool {
		code, _ := get(t, f, "logged.apps.localhost", "/hello", nil)
		return code == 200
	})
	// The lines of the wait above count toward the quota too; the window is full now
	// or after a few more.
	trace := "4bf92f3577b34da6a3ce929d0e0e4736"
	for range 12 {
		get(t, f, "logged.apps.localhost", "/hello", http.Header{"X-B3-Traceid": {trace}, "X-B3-Spanid": {"00f067aa0ba902b7"}})
	}
	waitFor(t, "the shipper to settle", func() bool {
		st, _ := f.LogShipping()
		return st.Shipped == 5 && st.Received >= 13 && st.DroppedQuota == st.Received-5-st.NoApp
	})

	// Elasticsearch holds exactly the 5, labelled with the app, its space and org.
	testhttp.Client.Post(es+"/"+prefix+"-*/_refresh", "application/json", nil)
	resp, err := testhttp.Client.Get(es + "/" + prefix + "-*/_search?size=20")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Hits struct {
			Hits []struct {
				Source map[string]any `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if len(out.Hits.Hits) != 5 {
		t.Fatalf("%d documents in Elasticsearch, want the quota's 5", len(out.Hits.Hits))
	}
	doc := out.Hits.Hits[0].Source
	for _, k := range []string{"@timestamp", "@type", "@source", "@cf", "rtr"} {
		if doc[k] == nil {
			t.Fatalf("document without %s: %v", k, doc)
		}
	}
	cf, rtr := doc["@cf"].(map[string]any), doc["rtr"].(map[string]any)
	if doc["@type"] != "LogMessage" || cf["app"] != "logged" || cf["app_id"] != app.GUID || cf["space"] != "apps" ||
		rtr["verb"] != "GET" || rtr["path"] != "/hello" || rtr["status"] != float64(200) || rtr["response_time_ms"] == nil {
		t.Fatalf("document %s", fmt.Sprint(doc))
	}
	if s, _ := json.Marshal(doc); !strings.Contains(string(s), `"x_b3_traceid"`) {
		t.Fatalf("document without rtr.extra.x_b3_traceid: %s", s)
	}
}
