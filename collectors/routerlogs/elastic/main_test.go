package elastic

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/routerlogstest"
	"github.com/cf-benchmark/cf-benchmark/foundation/logship"
	"github.com/cf-benchmark/cf-benchmark/internal/testes"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
	"github.com/cf-benchmark/cf-benchmark/internal/testos"
	"github.com/cf-benchmark/cf-benchmark/internal/testrace"
)

// The tests run against a real Elasticsearch 8 and a real OpenSearch 2, each started
// on first use (internal/testes, internal/testos) and stopped here, or the nodes a
// test run shares (scripts/test.sh), which its data set's indices and template names
// keep apart from other packages' (testes.Index).
//
// The tests that read the shared data set run in parallel, and much of their time is
// the nodes' (searching), not this process's: unless -parallel is given, more of them
// run at once than its default, GOMAXPROCS (two on a 2-core machine), so that one
// test's pull decodes answers while others' searches run.
func TestMain(m *testing.M) {
	flag.Parse()
	parallelSet := false
	flag.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "test.parallel" })
	if !parallelSet {
		flag.Set("test.parallel", strconv.Itoa(max(6, runtime.GOMAXPROCS(0))))
	}
	code := m.Run()
	var stops sync.WaitGroup
	stops.Go(testes.Stop)
	stops.Go(testos.Stop)
	stops.Wait()
	os.Exit(code)
}

// wantedDocs is the size of the shared data set's window, what the suite retrieves:
// 200,000 requests, 2,500 under the race detector. The page sizes under the detector
// are fractions of it (pageSize, the fault tests' own), so its pulls take as many
// pages, and make the same requests, as they did at 20,000: what the detector looks
// for (pages fetched concurrently, faults between them) does not grow with the data.
func wantedDocs() int {
	if testrace.Enabled {
		return 2_500
	}
	return 200_000
}

// pageSize is the page size of the tests' sources: the default 5,000, smaller for the
// race detector's data set so that a pull still takes eight pages or more (the
// interrupted pulls stop after 1, 3, 2 and 5 pages).
func pageSize() int { return min(5000, wantedDocs()/8) }

// cluster is one test node and the shared data set indexed into it.
type cluster struct {
	name string
	node func(testing.TB) string // the node's base URL, starting it on first use

	loadOnce sync.Once
	loaded   chan struct{} // closed when the data set is indexed, or failed to be
	index    string        // the pattern matching the data set's indices
	loadErr  error
}

var clusters = []*cluster{
	{name: "elasticsearch", node: testes.URL, loaded: make(chan struct{})},
	{name: "opensearch", node: testos.URL, loaded: make(chan struct{})},
}

// forEachCluster runs f as a parallel subtest per cluster.
func forEachCluster(t *testing.T, f func(t *testing.T, c *cluster)) {
	for _, c := range clusters {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f(t, c)
		})
	}
}

var (
	datasetOnce sync.Once
	dataset     *routerlogstest.Dataset
)

// sharedData is the data set every read-only test reads (wantedDocs wanted requests).
func sharedData() *routerlogstest.Dataset {
	datasetOnce.Do(func() { dataset = routerlogstest.Generate(wantedDocs(), 42) })
	return dataset
}

// URL returns the node's base URL, starting the node on first use, and then starts
// indexing the shared data set into it in the background: the tests that index their
// own documents run first, meanwhile (they are not parallel), and the tests that read
// the shared data set wait for it in Loaded.
func (c *cluster) URL(t testing.TB) string {
	t.Helper()
	url := c.node(t)
	c.loadOnce.Do(func() { go c.load(url) })
	return url
}

// Loaded returns the index pattern of the shared data set in c, waiting for it to be
// indexed.
func (c *cluster) Loaded(t testing.TB) string {
	t.Helper()
	c.URL(t)
	<-c.loaded
	if c.loadErr != nil {
		t.Fatalf("index the data set into %s: %v", c.name, c.loadErr)
	}
	return c.index
}

// load indexes the shared data set into the node at url with foundation/logship's
// Shipper, so the documents are exactly what logship writes: daily indices (the
// window crosses midnight), each with two shards so that documents with one
// @timestamp land on different shards.
func (c *cluster) load(url string) {
	defer close(c.loaded)
	// One cluster at a time: two JVMs indexing at once on a small machine take longer
	// than one after the other.
	loadMu.Lock()
	defer loadMu.Unlock()
	begin := time.Now()
	c.index, c.loadErr = ship(url, c.name, testes.Index("logs-app-rl"), sharedData(), 2)
	if c.loadErr == nil {
		fmt.Fprintf(os.Stderr, "indexed %d documents into %s in %v\n", len(sharedData().Requests)+1, c.name, time.Since(begin).Round(time.Millisecond))
	}
}

// appLookup gives logship the data set's app names.
type appLookup map[string]string

func (a appLookup) App(guid string) (logship.AppInfo, bool) {
	name, ok := a[guid]
	return logship.AppInfo{Name: name, SpaceName: "prod", SpaceGUID: "5pace-0001", OrgName: "acme", OrgGUID: "0rg-0001"}, ok
}

// productHeader makes OpenSearch's answers acceptable to the Elasticsearch client
// inside logship's Shipper (which checks the X-Elastic-Product header), so that both
// clusters get documents from the same code.
type productHeader struct{ http.RoundTripper }

func (p productHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := p.RoundTripper.RoundTrip(r)
	if err == nil {
		res.Header.Set("X-Elastic-Product", "Elasticsearch")
	}
	return res, err
}

// ship indexes d's lines with a logship Shipper into prefix-YYYY.MM.dd indices with
// the given number of shards and returns "prefix-*". A first line, from 2001, makes
// the Shipper install its index template (and an index outside every window), which
// then gets the shard count.
func ship(url, flavor, prefix string, d *routerlogstest.Dataset, shards int) (string, error) {
	var tr http.RoundTripper = http.DefaultTransport
	if flavor == "opensearch" {
		tr = productHeader{tr}
	}
	s := logship.New(logship.Config{URL: url, Index: prefix + "-%{+YYYY.MM.dd}", Apps: appLookup(d.Apps),
		BatchSize: 5000, FlushEvery: 20 * time.Millisecond, MaxBuffered: len(d.Requests) + 10,
		FlushTimeout: 10 * time.Minute, MaxAttempts: 20, Transport: tr})
	s.Start(context.Background())
	first := strings.Replace(d.Requests[0].Line, "[2024-03-", "[2001-01-", 1)
	first = strings.Replace(first, `vcap_request_id:"`, `vcap_request_id:"2001-`, 1)
	if _, err := s.Write([]byte(first + "\n")); err != nil {
		return "", err
	}
	for deadline := time.Now().Add(time.Minute); s.Stats().Shipped < 1; {
		if time.Now().After(deadline) {
			return "", fmt.Errorf("first document not shipped: %+v", s.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := setTemplateShards(url, prefix+"-*", shards); err != nil {
		return "", err
	}
	var buf bytes.Buffer
	for i := range d.Requests {
		buf.WriteString(d.Requests[i].Line)
		buf.WriteByte('\n')
		if buf.Len() > 1<<20 || i == len(d.Requests)-1 {
			if _, err := s.Write(buf.Bytes()); err != nil {
				return "", err
			}
			buf.Reset()
		}
	}
	if err := s.Close(); err != nil {
		return "", err
	}
	if st := s.Stats(); st.Shipped != int64(len(d.Requests)+1) {
		return "", fmt.Errorf("shipped %+v, want %d", st, len(d.Requests)+1)
	}
	pattern := prefix + "-*"
	if err := httpDo("POST", url+"/"+pattern+"/_refresh", nil, nil); err != nil {
		return "", err
	}
	var count struct{ Count int }
	if err := httpDo("GET", url+"/"+pattern+"/_count", nil, &count); err != nil {
		return "", err
	}
	if count.Count != len(d.Requests)+1 {
		return "", fmt.Errorf("%d documents in %s, want %d", count.Count, pattern, len(d.Requests)+1)
	}
	return pattern, nil
}

// setTemplateShards sets the shard count in the index template logship installed for
// pattern.
func setTemplateShards(url, pattern string, shards int) error {
	var list struct {
		IndexTemplates []struct {
			Name          string         `json:"name"`
			IndexTemplate map[string]any `json:"index_template"`
		} `json:"index_templates"`
	}
	if err := httpDo("GET", url+"/_index_template/cf-benchmark-*", nil, &list); err != nil {
		return err
	}
	for _, it := range list.IndexTemplates {
		pats, _ := json.Marshal(it.IndexTemplate["index_patterns"])
		if string(pats) != `["`+pattern+`"]` {
			continue
		}
		tmpl, _ := it.IndexTemplate["template"].(map[string]any)
		// No refreshes while loading (the loader refreshes once at the end).
		tmpl["settings"] = map[string]any{"index": map[string]any{"number_of_shards": shards, "number_of_replicas": 0,
			"refresh_interval": "-1", "translog": map[string]any{"durability": "async"}}}
		return httpDo("PUT", url+"/_index_template/"+it.Name, it.IndexTemplate, nil)
	}
	return fmt.Errorf("no index template for %s among %d", pattern, len(list.IndexTemplates))
}

// httpDo sends a JSON request and decodes the answer into out.
func httpDo(method, url string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := testhttp.Client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s %s", method, url, res.Status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: %v in %.300s", method, url, err, b)
		}
	}
	return nil
}

var loadMu sync.Mutex
