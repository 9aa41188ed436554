//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/client"

	"github.com/cf-benchmark/cf-benchmark/foundation"
	"github.com/cf-benchmark/cf-benchmark/foundation/testfoundation"
	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
)

// TestCFCLIOnShortLivedTokens: with access tokens of a few seconds, which expire
// during a cf push, the real cf CLI keeps working (it refreshes with its refresh
// token, and leaves the new token in its config), and so does go-cfclient;
// cf restart-app-instance restarts one instance through CC's terminate endpoint, as
// cf events then shows.
func TestCFCLIOnShortLivedTokens(t *testing.T) {
	testtier.External(t, "the real cf CLI and the local foundation")
	t.Parallel()
	root := moduleRoot(t)
	stub := filepath.Dir(buildOnce(t, root, append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64"),
		filepath.Join("pushed", "stub", "cfbench-stub"), "./cmd/cfbench-stub", "-ldflags", "-X main.version="+pluginVersion))
	f, cl := testfoundation.Start(t, func(c *foundation.Config) { c.AccessTokenTTL = 2 * time.Second })
	info := f.Info()
	cf := newCF(t, root)
	cf.mustRun(t, "api", info.APIURL)
	cf.mustRun(t, "auth", info.User, info.Password)
	first := cfAccessToken(t, cf)
	cf.mustRun(t, "target", "-o", "cfbench", "-s", "apps")
	cf.mustRun(t, "push", "short-tokens", "-p", stub, "-b", "binary_buildpack", "-m", "64M", "-k", "64M", "--no-route", "-u", "process",
		"-c", "./cfbench-stub", "-i", "2")
	time.Sleep(2 * time.Second) // past the lifetime of whatever token cf holds now
	out := cf.mustRun(t, "app", "short-tokens")
	if !regexp.MustCompile(`(?m)^#1\s+running\s`).MatchString(out) {
		t.Errorf("cf app short-tokens shows no running #1:\n%s", out)
	}
	if cfAccessToken(t, cf) == first {
		t.Error("the cf CLI's config still holds the token cf auth got, expired long since")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cl.Applications.ListAll(ctx, nil); err != nil {
		t.Errorf("go-cfclient after its token expired: %v", err)
	}

	guid := strings.TrimSpace(cf.mustRun(t, "app", "short-tokens", "--guid"))
	before := instanceGUID(t, cl, guid, 0)
	cf.mustRun(t, "restart-app-instance", "short-tokens", "0")
	deadline := time.Now().Add(time.Minute)
	for after := instanceGUID(t, cl, guid, 0); after == before || after == ""; after = instanceGUID(t, cl, guid, 0) {
		if time.Now().After(deadline) {
			t.Fatalf("instance 0 is still %q a minute after cf restart-app-instance", after)
		}
		time.Sleep(200 * time.Millisecond)
	}
	events := cf.mustRun(t, "events", "short-tokens")
	if !strings.Contains(events, "audit.app.process.terminate_instance") || strings.Contains(events, "audit.app.process.crash") {
		t.Errorf("cf events after cf restart-app-instance: want a terminate_instance event and no crash:\n%s", events)
	}
}

// cfAccessToken is the access token in the cf CLI's config.
func cfAccessToken(t *testing.T, cf *cfCLI) string {
	t.Helper()
	var home string
	for _, kv := range cf.env {
		if v, ok := strings.CutPrefix(kv, "CF_HOME="); ok {
			home = v
		}
	}
	b, err := os.ReadFile(filepath.Join(home, ".cf", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct{ AccessToken string }
	if err := json.Unmarshal(b, &c); err != nil || c.AccessToken == "" {
		t.Fatalf("the cf CLI's config has no access token (%v)", err)
	}
	return c.AccessToken
}

// instanceGUID is the guid of the web process's RUNNING instance of index, "" when it
// is not RUNNING.
func instanceGUID(t *testing.T, cl *client.Client, app string, index int) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stats, err := cl.Processes.GetStatsForApp(ctx, app, "web")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stats.Stats {
		if s.Index == index && s.State == "RUNNING" {
			return s.InstanceGuid
		}
	}
	return ""
}
