package foundation

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	lcclient "code.cloudfoundry.org/go-log-cache/v3"
	"code.cloudfoundry.org/go-loggregator/v10/rpc/loggregator_v2"

	"github.com/cf-benchmark/cf-benchmark/foundation/cells"
	"github.com/cf-benchmark/cf-benchmark/foundation/logcache"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
)

// anyone lets every request with a token read every source.
type anyone struct{}

func (anyone) Authenticated(string) bool   { return true }
func (anyone) CanRead(string, string) bool { return true }

// bearer sends a token.
type bearer struct{}

func (bearer) Do(r *http.Request) (*http.Response, error) {
	r.Header.Set("Authorization", "bearer t")
	return testhttp.Client.Do(r)
}

// The envelopes the foundation puts into its Log Cache in one go (the container
// metrics of every instance, sampled at one time; the lines of one log scan) carry
// timestamps no two alike, as Loggregator's emitters stamp each as they send it, so
// that the official client's Walk, which pages on from the last timestamp it saw plus
// a nanosecond, reads every one of them a page at a time.
func TestEnvelopesWalk(t *testing.T) {
	t.Parallel()
	const app = "app-1"
	store := logcache.NewStore(0)
	sampled := time.Unix(1_700_000_000, 0)
	var ms []cells.ContainerMetrics
	for i := range 3 {
		ms = append(ms, cells.ContainerMetrics{AppGUID: app, ProcessGUID: app, ProcessType: "web", Index: i, Time: sampled, MemBytes: 1 << 20})
	}
	store.Put(containerEnvelopes(ms)...)

	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, app), 0o755); err != nil {
		t.Fatal(err)
	}
	a := newAppLogs(dir, "", store, func(p string) (string, bool) { return p, true })
	if err := os.WriteFile(filepath.Join(dir, app, "0.log"), []byte("one\ntwo\nthree\nfour\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a.scan(sampled.Add(time.Second))

	srv := httptest.NewServer(logcache.Handler(logcache.APIConfig{Store: store, Auth: anyone{}, Clock: func() time.Time { return sampled.Add(time.Hour) }}))
	defer srv.Close()
	c := lcclient.NewClient(srv.URL, lcclient.WithHTTPClient(bearer{}))
	var got []string
	lcclient.Walk(context.Background(), app, func(es []*loggregator_v2.Envelope) bool {
		for _, e := range es {
			what := string(e.GetLog().GetPayload())
			if g := e.GetGauge(); g != nil {
				what = "usage"
				if _, ok := g.Metrics["absolute_usage"]; ok {
					what = "counters"
				}
			}
			got = append(got, e.InstanceId+" "+what)
		}
		return true
	}, c.Read, lcclient.WithWalkStartTime(sampled), lcclient.WithWalkEndTime(sampled.Add(time.Hour)), lcclient.WithWalkLimit(1))
	want := []string{"0 usage", "0 counters", "1 usage", "1 counters", "2 usage", "2 counters", "0 one", "0 two", "0 three", "0 four"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Walk read\n %q\nwant\n %q", got, want)
	}
}
