package foundation

import (
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/rfc5424"
)

// syslogDrain binds app stub (GUID stubGUID) to a user-provided service with a syslog
// drain URL, as `cf cups -l` and `cf bind-service` do, checks that the router's lines
// for it arrive at the drain in the syslog agent's format with the URL's credentials,
// and unbinds and deletes the service again.
func syslogDrain(t *testing.T, f *Foundation, cf *cfCLI, stubGUID string) {
	t.Helper()
	var mu sync.Mutex
	var msgs []rfc5424.Message
	var auths []string
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		user, pass, _ := r.BasicAuth()
		rfc5424.SplitBody(body, func(b []byte) {
			m, err := rfc5424.Parse(b)
			if err != nil {
				t.Errorf("drain got %q: %v", b, err)
				return
			}
			m.Msg = append([]byte(nil), m.Msg...)
			mu.Lock()
			msgs, auths = append(msgs, m), append(auths, user+":"+pass)
			mu.Unlock()
		})
	})}
	go srv.Serve(ln)
	defer srv.Close()

	cf.must(t, "create-user-provided-service", "drain", "-l", "http://run:s3cret-0123456789@"+ln.Addr().String()+"/", "-p", `{"token":"t"}`)
	cf.must(t, "bind-service", "stub", "drain")
	if out := cf.must(t, "env", "stub"); !strings.Contains(out, `"user-provided": [`) || !strings.Contains(out, `"syslog_drain_url": "http://run:s3cret-0123456789@`) {
		t.Fatalf("cf env stub with a user-provided service:\n%s", out)
	}
	if out := cf.must(t, "services"); !regexp.MustCompile(`(?m)^drain\s+user-provided\s+stub`).MatchString(out) {
		t.Fatalf("cf services with a user-provided service:\n%s", out)
	}
	rtr := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for i, m := range msgs {
			if m.IsRouter() && m.AppName == stubGUID && m.Hostname == "cfbench.apps.stub" && auths[i] == "run:s3cret-0123456789" &&
				regexp.MustCompile(`^stub\.apps\.localhost - \[.*"GET /hello\?drained HTTP/1.1" 200 .*app_id:"`+stubGUID+`"`).Match(m.Msg) {
				n++
			}
		}
		return n
	}
	defer func() {
		if t.Failed() {
			mu.Lock()
			defer mu.Unlock()
			for i, m := range msgs {
				t.Logf("drain got %s %s %s %s: %s", auths[i], m.Hostname, m.AppName, m.ProcID, m.Msg)
			}
		}
	}()
	waitFor(t, "router lines at the drain", func() bool {
		get(t, f, "stub.apps.localhost", "/hello?drained", nil) // again until the agent has seen the binding
		return rtr() > 0
	})
	cf.must(t, "update-user-provided-service", "drain", "-p", `{"token":"u"}`)
	cf.must(t, "unbind-service", "stub", "drain")
	cf.must(t, "delete-service", "drain", "-f")
	if out := cf.must(t, "services"); strings.Contains(out, "drain") {
		t.Fatalf("cf services after delete-service:\n%s", out)
	}
}
