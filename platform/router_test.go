package platform

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/client"
	"github.com/cloudfoundry/go-cfclient/v3/config"
)

// TestRouteTargetOnOtherCFs covers what the local foundation cannot show: a CC whose
// root has no cfbench_router link (any real CF) gives https targets dialled directly,
// a route path is kept, TCP routes are skipped, and a broken link is an error. The
// root is read once per CF.
func TestRouteTargetOnOtherCFs(t *testing.T) {
	cases := []struct {
		name, routerLink string // the link's JSON, "" for none
		routes           string // resources of GET /v3/apps/app/routes
		want             Target
		err              string
	}{
		{"real CF", "", `{"url": "app.example.com", "protocol": "http"}`, Target{URL: "https://app.example.com"}, ""},
		{"real CF, route with a path", "", `{"url": "tcp.example.com:1024", "protocol": "tcp"}, {"url": "app.example.com/api", "protocol": "http"}`,
			Target{URL: "https://app.example.com/api"}, ""},
		{"local foundation", `{"href": "http://127.0.0.1:4321"}`, `{"url": "app.apps.localhost", "protocol": "http"}`,
			Target{URL: "http://app.apps.localhost", ConnectTo: "127.0.0.1:4321"}, ""},
		{"no http route", "", `{"url": "tcp.example.com:1024", "protocol": "tcp"}`, Target{}, "has no HTTP route"},
		{"broken link", `{"href": "not a url"}`, `{"url": "app.example.com", "protocol": "http"}`, Target{}, `cfbench_router link "not a url" is not a URL`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var roots atomic.Int32
			mux := http.NewServeMux()
			var srv *httptest.Server
			mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
				roots.Add(1)
				links := fmt.Sprintf(`"self": {"href": %q}, "login": {"href": %q}, "uaa": {"href": %q}`, srv.URL, srv.URL, srv.URL)
				if c.routerLink != "" {
					links += `, "cfbench_router": ` + c.routerLink
				}
				fmt.Fprintf(w, `{"links": {%s}}`, links)
			})
			mux.HandleFunc("GET /v3/apps/app/routes", func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprintf(w, `{"pagination": {"total_results": 1, "total_pages": 1, "first": {"href": ""}, "last": {"href": ""}, "next": null, "previous": null},
					"resources": [%s]}`, c.routes)
			})
			srv = httptest.NewServer(mux)
			defer srv.Close()
			cfg, err := config.New(srv.URL, config.Token(fakeJWT(), ""))
			if err != nil {
				t.Fatal(err)
			}
			cl, err := client.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			cf := New(cl)
			var afterFirst int32
			for i := range 2 {
				if i == 1 {
					afterFirst = roots.Load()
				}
				got, err := cf.RouteTarget(context.Background(), "app")
				if c.err != "" {
					if err == nil || !strings.Contains(err.Error(), c.err) {
						t.Fatalf("err = %v, want %q", err, c.err)
					}
					return
				}
				if err != nil || got != c.want {
					t.Fatalf("= %+v, %v; want %+v", got, err, c.want)
				}
			}
			if n := roots.Load(); n != afterFirst {
				t.Fatalf("the root was read again by a second RouteTarget")
			}
		})
	}
}

// fakeJWT is a token go-cfclient accepts without asking a UAA: unsigned, valid a day.
func fakeJWT() string {
	enc := base64.RawURLEncoding.EncodeToString
	claims := fmt.Sprintf(`{"exp": %d, "user_name": "test"}`, time.Now().Add(24*time.Hour).Unix())
	return enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc([]byte(claims)) + "." + enc([]byte("sig"))
}

// TestLogCacheAndCellCores reads links.log_cache and the local foundation's
// cfbench_cells (cores per segment and per host) from the root: a real CF links a Log
// Cache and says nothing of cores;
// the local foundation says both; a CF without Log Cache links null.
func TestLogCacheAndCellCores(t *testing.T) {
	cases := []struct {
		name, links  string
		url          string
		cores, hosts map[string]float64
		err          string
	}{
		{"real CF", `"log_cache": {"href": "https://log-cache.sys.example.com"}`, "https://log-cache.sys.example.com", map[string]float64{}, map[string]float64{}, ""},
		{"local foundation", `"log_cache": {"href": "http://127.0.0.1:4000/"}, "cfbench_cells": {"apps": {"cores": 1, "hosts": ["127.0.1.1"]}, "loadgen": {"cores": 2, "hosts": ["127.0.1.2"]}}`,
			"http://127.0.0.1:4000", map[string]float64{"apps": 1, "loadgen": 2}, map[string]float64{"127.0.1.1": 1, "127.0.1.2": 2}, ""},
		{"an older local foundation: cores without hosts", `"log_cache": null, "cfbench_cells": {"apps": {"cores": 1}}`,
			"", map[string]float64{"apps": 1}, map[string]float64{}, ""},
		{"no log cache", `"log_cache": null`, "", map[string]float64{}, map[string]float64{}, ""},
		{"broken link", `"log_cache": {"href": "log-cache"}`, "", nil, nil, `log_cache link "log-cache" is not a URL`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var srv *httptest.Server
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprintf(w, `{"links": {"self": {"href": %q}, "login": {"href": %q}, "uaa": {"href": %q}, %s}}`, srv.URL, srv.URL, srv.URL, c.links)
			}))
			defer srv.Close()
			cfg, err := config.New(srv.URL, config.Token(fakeJWT(), ""))
			if err != nil {
				t.Fatal(err)
			}
			cl, err := client.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			cf := New(cl)
			u, err := cf.LogCacheURL(context.Background())
			cores, cerr := cf.CellCores(context.Background())
			if c.err != "" {
				if err == nil || cerr == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, %v; want %q", err, cerr, c.err)
				}
				return
			}
			hosts, herr := cf.HostCores(context.Background())
			if err != nil || cerr != nil || herr != nil || u != c.url || fmt.Sprint(cores) != fmt.Sprint(c.cores) || fmt.Sprint(hosts) != fmt.Sprint(c.hosts) {
				t.Fatalf("= %q %v %v (%v, %v, %v); want %q %v %v", u, cores, hosts, err, cerr, herr, c.url, c.cores, c.hosts)
			}
		})
	}
}
