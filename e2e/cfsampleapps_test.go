//go:build linux

package e2e

import (
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/foundation"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
)

// cfSampleApps pushes the two sample apps with the real cf CLI from their own
// manifests, as their comments tell a newcomer: the Java bulletin board (its jar, java
// buildpack) and the Node one (npm ci at staging, as the instances' user), both bound
// to a postgres service instance. Each answers through the router, and, reading the
// same database, with the same bytes.
func cfSampleApps(t *testing.T, cf *cfCLI, info foundation.Info) {
	root := moduleRoot(t)
	cf.mustRun(t, "target", "-o", "cfbench", "-s", "apps")
	cf.mustRun(t, "create-service", "postgres", "db", "bulletin-db")
	running := regexp.MustCompile(`(?m)^#0\s+running\s`)
	bodies := map[string]string{}
	for _, app := range []string{"bulletin-java", "bulletin-node"} {
		out := cf.mustRun(t, "push", "-f", filepath.Join(root, "manifests", app+".yml"))
		if !running.MatchString(out) {
			t.Errorf("cf push -f manifests/%s.yml shows no running instance:\n%s", app, out)
			continue
		}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+info.RouterAddr+"/ads?limit=5", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = app + "." + info.AppsDomain
		resp, err := testhttp.Client.Do(req)
		if err != nil {
			t.Fatalf("GET /ads of %s: %v", app, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("GET /ads of %s = %s %q: %s", app, resp.Status, resp.Header.Get("Content-Type"), b)
		}
		bodies[app] = string(b)
	}
	if bodies["bulletin-java"] != bodies["bulletin-node"] {
		t.Errorf("the two apps answer GET /ads?limit=5 from one database differently:\njava %s\nnode %s", bodies["bulletin-java"], bodies["bulletin-node"])
	}
	for _, app := range []string{"bulletin-java", "bulletin-node"} {
		cf.mustRun(t, "delete", "-f", "-r", app)
	}
	cf.mustRun(t, "delete-service", "-f", "bulletin-db")
}
