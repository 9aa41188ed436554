//go:build unix

package testos

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
)

// The launcher's own tests look at the node's process: they start a node of their own
// even when the run shares one (CFBENCH_TEST_OPENSEARCH_URL).
func TestMain(m *testing.M) {
	os.Unsetenv(flavor.URLEnv)
	Main(m)
}

func TestNodeAnswersOnLoopback(t *testing.T) {
	n := Server(t)
	if !strings.HasPrefix(n.URL, "http://127.0.0.1:") {
		t.Fatalf("URL %s is not on 127.0.0.1", n.URL)
	}
	var root struct {
		Version struct {
			Distribution string `json:"distribution"`
			Number       string `json:"number"`
		} `json:"version"`
	}
	res := call(t, "GET", n.URL+"/", "", &root)
	if root.Version.Distribution != "opensearch" || !strings.HasPrefix(root.Version.Number, "2.") {
		t.Errorf("GET / says %+v, want OpenSearch 2.x", root.Version)
	}
	// The official Elasticsearch Go client (v8) refuses servers without this header.
	if v := res.Header.Values("X-Elastic-Product"); len(v) != 0 {
		t.Errorf("OpenSearch sent X-Elastic-Product: %q", v)
	}
	var h struct {
		Status        string `json:"status"`
		NumberOfNodes int    `json:"number_of_nodes"`
	}
	call(t, "GET", n.URL+"/_cluster/health", "", &h)
	if h.NumberOfNodes != 1 || (h.Status != "green" && h.Status != "yellow") {
		t.Errorf("health %+v", h)
	}
	var plugins []struct{ Component string }
	call(t, "GET", n.URL+"/_cat/plugins?format=json", "", &plugins)
	for _, p := range plugins {
		if p.Component == "opensearch-security" {
			t.Errorf("the security plugin is installed: %+v", plugins)
		}
	}
	t.Logf("OpenSearch %s at %s (pid %d) ready in %v", root.Version.Number, n.URL, n.PID, n.Started)
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

// TestPointInTimeSearchAfter pages through a point in time the way a reader of logs
// would: sorted by @timestamp, ties broken by _id (OpenSearch 2 has no _shard_doc).
func TestPointInTimeSearchAfter(t *testing.T) {
	url := URL(t)
	index := Index("pit")
	call(t, "PUT", url+"/"+index, `{
		"settings": {"number_of_shards": 2, "number_of_replicas": 0},
		"mappings": {"properties": {"@timestamp": {"type": "date"}, "msg": {"type": "keyword"}}}}`, nil)
	docs := []struct{ id, ts string }{
		{"d", "2024-01-01T00:00:03Z"},
		{"a", "2024-01-01T00:00:01Z"},
		{"c", "2024-01-01T00:00:02Z"},
		{"b", "2024-01-01T00:00:02Z"},
		{"e", "2024-01-01T00:00:04Z"},
	}
	var bulk strings.Builder
	for _, d := range docs {
		bulk.WriteString(`{"index":{"_id":"` + d.id + `"}}` + "\n")
		bulk.WriteString(`{"@timestamp":"` + d.ts + `","msg":"` + d.id + `"}` + "\n")
	}
	bulkIndex(t, url+"/"+index+"/_bulk?refresh=true", bulk.String())

	var pit struct {
		PitID string `json:"pit_id"`
	}
	call(t, "POST", url+"/"+index+"/_search/point_in_time?keep_alive=1m", "", &pit)
	if pit.PitID == "" {
		t.Fatal("no pit_id")
	}
	// Written after the PIT opened: a search through the PIT must not see it.
	bulkIndex(t, url+"/"+index+"/_bulk?refresh=true",
		`{"index":{"_id":"late"}}`+"\n"+`{"@timestamp":"2024-01-01T00:00:05Z","msg":"late"}`+"\n")

	var got []string
	var after []any
	for page := 0; page < 10; page++ {
		req := map[string]any{
			"size": 2,
			"pit":  map[string]any{"id": pit.PitID, "keep_alive": "1m"},
			"sort": []any{map[string]string{"@timestamp": "asc"}, map[string]string{"_id": "asc"}},
		}
		if after != nil {
			req["search_after"] = after
		}
		var res struct {
			PitID string `json:"pit_id"`
			Hits  struct {
				Hits []struct {
					ID   string `json:"_id"`
					Sort []any  `json:"sort"`
				} `json:"hits"`
			} `json:"hits"`
		}
		// A search through a PIT names no index.
		call(t, "POST", url+"/_search", mustJSON(t, req), &res)
		if len(res.Hits.Hits) == 0 {
			break
		}
		if res.PitID != "" {
			pit.PitID = res.PitID
		}
		for _, h := range res.Hits.Hits {
			got = append(got, h.ID)
		}
		after = res.Hits.Hits[len(res.Hits.Hits)-1].Sort
	}
	if want := []string{"a", "b", "c", "d", "e"}; !reflect.DeepEqual(got, want) {
		t.Errorf("paged through the PIT and got %v, want %v", got, want)
	}

	var count struct{ Count int }
	call(t, "GET", url+"/"+index+"/_count", "", &count)
	if count.Count != len(docs)+1 {
		t.Errorf("the index holds %d docs, want %d", count.Count, len(docs)+1)
	}

	t.Run("shard_doc rejected", func(t *testing.T) {
		body := `{"pit": {"id": "` + pit.PitID + `"}, "sort": [{"_shard_doc": "asc"}]}`
		if status, _ := do(t, "POST", url+"/_search", body); status != http.StatusBadRequest {
			t.Errorf("sort by _shard_doc: HTTP %d, want 400 (OpenSearch 2 has no such field; sort by _id)", status)
		}
	})

	call(t, "DELETE", url+"/_search/point_in_time", `{"pit_id": ["`+pit.PitID+`"]}`, nil)
	if status, _ := do(t, "POST", url+"/_search", `{"pit": {"id": "`+pit.PitID+`"}}`); status == http.StatusOK {
		t.Error("a search through a deleted PIT succeeded")
	}
}

func bulkIndex(t *testing.T, url, ndjson string) {
	t.Helper()
	var res struct{ Errors bool }
	call(t, "POST", url, ndjson, &res)
	if res.Errors {
		t.Fatalf("bulk request reported errors")
	}
}

// call sends a request, fails t unless the answer is 200 OK, and decodes its body into
// out (unless out is nil).
func call(t *testing.T, method, url, body string, out any) *http.Response {
	t.Helper()
	status, res := do(t, method, url, body)
	if status != http.StatusOK {
		t.Fatalf("%s %s: HTTP %d: %s", method, url, status, res.body)
	}
	if out != nil {
		if err := json.Unmarshal(res.body, out); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, url, res.body, err)
		}
	}
	return res.Response
}

type response struct {
	*http.Response
	body []byte
}

func do(t *testing.T, method, url, body string) (int, response) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
		if strings.Contains(url, "/_bulk") {
			req.Header.Set("Content-Type", "application/x-ndjson")
		}
	}
	res, err := testhttp.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, response{res, bytes.TrimSpace(b)}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
