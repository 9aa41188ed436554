package testnode

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
)

func TestWriteConfigPointsTheNodeAtItsDir(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "config", "jvm.options.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	jvm := "-XX:HeapDumpPath=data\n-XX:ErrorFile=logs/hs_err_pid%p.log\n9-:-Xlog:gc*:file=logs/gc.log\n"
	if err := os.WriteFile(filepath.Join(home, "config", "jvm.options"), []byte(jvm), 0o644); err != nil {
		t.Fatal(err)
	}
	f := Flavor{Name: "OpenSearch", Command: "opensearch", Settings: func(h string) string {
		if h != home {
			t.Errorf("Settings got home %q, want %q", h, home)
		}
		return "extra.setting: true\n"
	}}
	conf, data, logs := filepath.Join(dir, "config"), filepath.Join(dir, "data"), filepath.Join(dir, "logs")
	if err := writeConfig(f, home, conf, data, logs, 9201, 9301); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(conf, "jvm.options"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"HeapDumpPath=" + data + "\n", "ErrorFile=" + logs + "/hs_err", "file=" + logs + "/gc.log"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("jvm.options lacks %q:\n%s", want, b)
		}
	}
	if _, err := os.Stat(filepath.Join(conf, "jvm.options.d")); err != nil {
		t.Errorf("config subdir not copied: %v", err)
	}
	yml, err := os.ReadFile(filepath.Join(conf, "opensearch.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"path.data: " + data + "\n", "http.port: 9201\n", "transport.port: 9301\n", "network.host: 127.0.0.1\n", "discovery.type: single-node\n", "extra.setting: true\n"} {
		if !strings.Contains(string(yml), want) {
			t.Errorf("opensearch.yml lacks %q:\n%s", want, yml)
		}
	}
}

func TestIndexNamesAreUnique(t *testing.T) {
	a, b := Index("x"), Index("x")
	if a == b || !strings.HasPrefix(a, "x-") {
		t.Errorf("Index gave %q and %q", a, b)
	}
}

// fatalTB records the message of a Fatalf and ends the goroutine, as testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// server calls s.Server with a fatalTB in a goroutine of its own and returns the node
// and the Fatalf message, if any.
func server(t *testing.T, s *Shared) (*Node, string) {
	tb := &fatalTB{TB: t}
	var n *Node
	done := make(chan struct{})
	go func() {
		defer close(done)
		n = s.Server(tb)
	}()
	<-done
	return n, tb.msg
}

// TestSharedUsesTheNodeURLEnvNames: with URLEnv set, Server starts no node but
// attaches to the named one, once, if it answers as the flavor does; Stop leaves
// it running. Otherwise the test fails with a message naming the variable.
func TestSharedUsesTheNodeURLEnvNames(t *testing.T) {
	if testing.Short() {
		t.Skip("Server skips under -short")
	}
	var gets atomic.Int64
	openSearch := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/_cluster/health" {
			t.Errorf("%s %s: want only GET /_cluster/health", r.Method, r.URL.Path)
		}
		gets.Add(1)
		io.WriteString(w, `{"cluster_name":"cfbench-test","status":"yellow","number_of_nodes":1}`)
	}))
	defer openSearch.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	notJSON := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") }))
	defer notJSON.Close()

	const env = "CFBENCH_TEST_TESTNODE_URL"
	for _, tc := range []struct {
		name, product, url, wantErr string
	}{
		{"attached", "", openSearch.URL + "/", ""},
		{"nothing listens", "", closed.URL, "no OpenSearch answers there"},
		{"not a search node", "", notJSON.URL, "not as OpenSearch does"},
		{"the other flavor", "Elasticsearch", openSearch.URL, `X-Elastic-Product "": not Elasticsearch`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(env, tc.url)
			name := "OpenSearch"
			if tc.product != "" {
				name = "Elasticsearch"
			}
			// Script and HomeEnv are unset: a Start would fail.
			s := &Shared{Flavor: Flavor{Name: name, URLEnv: env, Product: tc.product}}
			before := gets.Load()
			n, msg := server(t, s)
			if tc.wantErr != "" {
				if n != nil || !strings.Contains(msg, env+"="+tc.url) || !strings.Contains(msg, tc.wantErr) {
					t.Fatalf("got node %v, failure %q; want a failure naming %s and saying %q", n, msg, env, tc.wantErr)
				}
				return
			}
			if msg != "" || n == nil || n.URL != openSearch.URL || !n.External || n.PID != 0 || n.Dir != "" {
				t.Fatalf("got node %+v, failure %q; want the external node at %s", n, msg, openSearch.URL)
			}
			if again, _ := server(t, s); again != n || gets.Load() != before+1 {
				t.Errorf("a second Server call gave %p (first %p) after %d GET /, want the same node after 1", again, n, gets.Load()-before)
			}
			s.Stop()
			if err := n.Stop(); err != nil {
				t.Errorf("Stop of an external node: %v", err)
			}
			if res, err := testhttp.Client.Get(openSearch.URL + "/_cluster/health"); err != nil {
				t.Errorf("the node is gone after Stop: %v", err)
			} else {
				res.Body.Close()
			}
		})
	}
}
