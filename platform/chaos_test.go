package platform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/client"
	"github.com/cloudfoundry/go-cfclient/v3/config"
)

// chaosCF is a CF on a fake CC whose root links a chaos API when chaos is set; the
// handler answers POSTs to it and the CC's process routes.
func chaosCF(t *testing.T, chaos bool, handler http.HandlerFunc) *CF {
	t.Helper()
	mux := http.NewServeMux()
	var srv *httptest.Server
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		links := fmt.Sprintf(`"self": {"href": %q}, "login": {"href": %q}, "uaa": {"href": %q}`, srv.URL, srv.URL, srv.URL)
		if chaos {
			links += fmt.Sprintf(`, "cfbench_chaos": {"href": "%s/cfbench/v1/chaos"}`, srv.URL)
		}
		fmt.Fprintf(w, `{"links": {%s}}`, links)
	})
	mux.HandleFunc("/", handler)
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	cfg, err := config.New(srv.URL, config.Token(fakeJWT(), ""))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return New(cl)
}

// TestChaos: a fault is POSTed as contract A has it (JSON, a bearer token) and its
// answer read; the API's CC-shaped refusals are errors that say them; a foundation
// without the link is ErrNoChaos.
func TestChaos(t *testing.T) {
	ctx := context.Background()
	var got map[string]any
	cf := chaosCF(t, true, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/cfbench/v1/chaos" {
			http.NotFound(w, r)
			return
		}
		if !strings.HasPrefix(r.Header.Get("Authorization"), "bearer ") && !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			t.Errorf("authorization %q, want a bearer token", r.Header.Get("Authorization"))
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("content type %q", ct)
		}
		b, _ := io.ReadAll(r.Body)
		got = nil
		if err := json.Unmarshal(b, &got); err != nil {
			t.Errorf("body %s: %v", b, err)
		}
		if got["app_guid"] == "nope" {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"errors":[{"code":10010,"title":"CF-ResourceNotFound","detail":"App not found"}]}`)
			return
		}
		fmt.Fprint(w, `{"action": "crash", "at": "2026-12-07T16:00:01.123456789Z",
			"instances": [{"app_guid": "g", "process_type": "web", "index": 1, "instance_guid": "i-1", "cell": "cell-0"}]}`)
	})
	if !cf.ChaosSupported(ctx) {
		t.Fatal("chaos not supported with the link")
	}
	res, err := cf.Chaos(ctx, ChaosRequest{Action: "crash", AppGUID: "g", ProcessType: "web", Index: 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"action": "crash", "app_guid": "g", "process_type": "web", "index": float64(1)}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("body %v, want %v", got, want)
	}
	at := time.Date(2026, 12, 7, 16, 0, 1, 123456789, time.UTC)
	if !res.At.Equal(at) || len(res.Instances) != 1 || res.Instances[0].InstanceGUID != "i-1" || res.Instances[0].Cell != "cell-0" || res.Instances[0].Index != 1 {
		t.Errorf("result %+v", res)
	}
	if _, err := cf.Chaos(ctx, ChaosRequest{Action: "crash", AppGUID: "nope"}); err == nil || !strings.Contains(err.Error(), "CF-ResourceNotFound") || !strings.Contains(err.Error(), "chaos crash") {
		t.Errorf("err %v, want the CC error", err)
	}

	plain := chaosCF(t, false, http.NotFound)
	if plain.ChaosSupported(ctx) {
		t.Error("chaos supported without the link")
	}
	if _, err := plain.Chaos(ctx, ChaosRequest{Action: "restart-router"}); !errors.Is(err, ErrNoChaos) {
		t.Errorf("err %v, want ErrNoChaos", err)
	}
}

// TestRestartInstance: the instance is stopped through the CC API of any Cloud Foundry,
// on the app's process of the type asked.
func TestRestartInstance(t *testing.T) {
	var deleted string
	cf := chaosCF(t, false, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/v3/apps/app-g/processes":
			if ty := r.URL.Query().Get("types"); ty != "web" {
				t.Errorf("types %q", ty)
			}
			fmt.Fprint(w, `{"pagination": {"total_results": 1, "total_pages": 1, "first": {"href": ""}, "last": {"href": ""}, "next": null, "previous": null},
				"resources": [{"guid": "proc-g", "type": "web", "instances": 3}]}`)
		case r.Method == http.MethodDelete:
			deleted = r.URL.Path
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
	})
	if err := cf.RestartInstance(context.Background(), "app-g", "", 2); err != nil {
		t.Fatal(err)
	}
	if deleted != "/v3/processes/proc-g/instances/2" {
		t.Errorf("deleted %q", deleted)
	}
}

// TestAppGUID: an app is found by its guid, else by its name in whatever space; no app
// of the name, or one in each of two spaces, is an error that says what to give.
func TestAppGUID(t *testing.T) {
	const guid = "0d8f5c3e-2b1a-4c6d-9e7f-112233445566"
	page := func(apps ...string) string {
		return fmt.Sprintf(`{"pagination": {"total_results": %d, "total_pages": 1, "first": {"href": ""}, "last": {"href": ""}, "next": null, "previous": null},
			"resources": [%s]}`, len(apps), strings.Join(apps, ","))
	}
	app := func(g, space string) string {
		return fmt.Sprintf(`{"guid": %q, "name": "x", "relationships": {"space": {"data": {"guid": %q}}}}`, g, space)
	}
	cf := chaosCF(t, true, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v3/apps/"+guid:
			fmt.Fprint(w, app(guid, "s-1"))
		case strings.HasPrefix(r.URL.Path, "/v3/apps/"):
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"errors":[{"code":10010,"title":"CF-ResourceNotFound","detail":"App not found"}]}`)
		case r.URL.Path == "/v3/apps":
			switch r.URL.Query().Get("names") {
			case "one":
				fmt.Fprint(w, page(app("g-one", "s-1")))
			case "twin":
				fmt.Fprint(w, page(app("g-b", "s-2"), app("g-a", "s-1")))
			default:
				fmt.Fprint(w, page())
			}
		case strings.HasPrefix(r.URL.Path, "/v3/spaces/"):
			fmt.Fprintf(w, `{"guid": %q, "name": "space-%s"}`, strings.TrimPrefix(r.URL.Path, "/v3/spaces/"), strings.TrimPrefix(r.URL.Path, "/v3/spaces/s-"))
		default:
			http.NotFound(w, r)
		}
	})
	ctx := context.Background()
	for _, c := range []struct{ app, want, err string }{
		{guid, guid, ""},
		{"one", "g-one", ""},
		{"0d8f5c3e-2b1a-4c6d-9e7f-000000000000", "", `no app named "0d8f5c3e-2b1a-4c6d-9e7f-000000000000"`},
		{"nope", "", `no app named "nope" on the foundation`},
		{"twin", "", `apps named "twin" are in more than one space: space-1 (guid g-a), space-2 (guid g-b); give the app's guid`},
	} {
		got, err := cf.AppGUID(ctx, c.app)
		if got != c.want || (c.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("AppGUID(%q) = %q, %v; want %q, %q", c.app, got, err, c.want, c.err)
		}
	}
}
