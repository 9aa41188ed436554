//go:build unix

package testes

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
)

// The launcher's own tests look at the node's process: they start a node of their own
// even when the run shares one (CFBENCH_TEST_ES_URL).
func TestMain(m *testing.M) {
	os.Unsetenv(flavor.URLEnv)
	Main(m)
}

func TestNodeAnswersOnLoopback(t *testing.T) {
	n := Server(t)
	if !strings.HasPrefix(n.URL, "http://127.0.0.1:") {
		t.Fatalf("URL %s is not on 127.0.0.1", n.URL)
	}
	res, err := testhttp.Client.Get(n.URL + "/_cluster/health")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var h struct {
		Status        string `json:"status"`
		NumberOfNodes int    `json:"number_of_nodes"`
	}
	if err := json.NewDecoder(res.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	if res.Header.Get("X-Elastic-Product") != "Elasticsearch" || h.NumberOfNodes != 1 || (h.Status != "green" && h.Status != "yellow") {
		t.Errorf("health %+v, product %q", h, res.Header.Get("X-Elastic-Product"))
	}
	t.Logf("Elasticsearch at %s (pid %d) ready in %v", n.URL, n.PID, n.Started)
	if URL(t) != n.URL {
		t.Error("a second call started another node")
	}
}

func TestNodeRunsUnprivileged(t *testing.T) {
	n := Server(t)
	st, err := os.Stat("/proc/" + strconv.Itoa(n.PID))
	if err != nil {
		t.Fatal(err)
	}
	uid := st.Sys().(*syscall.Stat_t).Uid
	if os.Geteuid() == 0 && uid == 0 {
		t.Errorf("the node (pid %d) runs as root", n.PID)
	}
	if os.Geteuid() != 0 && int(uid) != os.Geteuid() {
		t.Errorf("the node runs as uid %d, want ours (%d)", uid, os.Geteuid())
	}
}

func TestIndexNamesAreUnique(t *testing.T) {
	a, b := Index("x"), Index("x")
	if a == b || !strings.HasPrefix(a, "x-") {
		t.Errorf("Index gave %q and %q", a, b)
	}
}
