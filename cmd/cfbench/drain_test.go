package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/drain"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/rfc5424"
	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/internal/sample"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
	"github.com/cf-benchmark/cf-benchmark/internal/testlog"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

const auth = "cfbench:0123456789abcdef0123"

func TestDrainBadConfigurationIsOneClearLine(t *testing.T) {
	good := map[string]string{"PORT": "0", "CFBENCH_DRAIN_AUTH": auth, "CFBENCH_DRAIN_RUN": "20261124-185701-ab12"}
	for name, c := range map[string]struct {
		key, value, want string
	}{
		"no run":      {"CFBENCH_DRAIN_RUN", "", `CFBENCH_DRAIN_RUN "" is not a run id`},
		"bad run":     {"CFBENCH_DRAIN_RUN", "latest", `CFBENCH_DRAIN_RUN "latest" is not a run id`},
		"no auth":     {"CFBENCH_DRAIN_AUTH", "", "CFBENCH_DRAIN_AUTH is not set"},
		"no database": {"", "", "DATABASE_URL"},
	} {
		m := map[string]string{}
		for k, v := range good {
			m[k] = v
		}
		if c.key != "" {
			m[c.key] = c.value
		}
		var stderr bytes.Buffer
		code := runDrain(t.Context(), nil, env(m), &stderr, nil)
		if code != 1 || !strings.Contains(stderr.String(), c.want) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q; want 1 and one line with %q", name, code, stderr.String(), c.want)
		}
		if strings.Contains(stderr.String(), "0123456789abcdef") {
			t.Errorf("%s: the password is in the output", name)
		}
	}
}

// TestDrainSyslogOnlyOverMutualTLS: a syslog port without the TLS files, the client CA
// among them, is refused: plain syslog carries no credentials.
func TestDrainSyslogOnlyOverMutualTLS(t *testing.T) {
	good := map[string]string{"PORT": "0", "CFBENCH_DRAIN_AUTH": auth, "CFBENCH_DRAIN_RUN": "20261124-185701-ab12"}
	for _, args := range [][]string{
		{"--syslog-port", "0"},
		{"--syslog-port", "0", "--tls-cert", "c.pem", "--tls-key", "k.pem"},
	} {
		var stderr bytes.Buffer
		code := runDrain(t.Context(), args, env(good), &stderr, nil)
		if code != 1 || !strings.Contains(stderr.String(), "--tls-client-ca") || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want 1 and one line naming --tls-client-ca", args, code, stderr.String())
		}
	}
}

// TestServesTheRunUntilSIGTERM runs the command for a run in the results database,
// posts a router line of the run as the agent does, and stops it as CF does.
func TestDrainServesTheRunUntilSIGTERM(t *testing.T) {
	dsn := testpg.DSN(t)
	store, err := resultsdb.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	runRow, err := store.CreateRun(t.Context(), "drain", "spec.yml", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	const guid = "5f0c1c7e-0000-4000-8000-000000000001"
	if err := store.AddRunVariant(t.Context(), resultsdb.RunVariant{RunID: runRow.ID, Variant: "v", GeneratorApp: "gen", AppName: "shop", AppGUID: guid, Workload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	ctx, sigterm := context.WithCancel(t.Context())
	got := make(chan *drain.Receiver, 1)
	code := make(chan int, 1)
	var stderr testlog.Buffer
	go func() {
		code <- runDrain(ctx, nil, env(map[string]string{"PORT": "0", "CFBENCH_DRAIN_AUTH": auth, "CFBENCH_DRAIN_RUN": runRow.ID, "DATABASE_URL": dsn}),
			&stderr, func(r *drain.Receiver) { got <- r })
	}()
	var r *drain.Receiver
	select {
	case r = <-got:
	case c := <-code:
		t.Fatalf("exit %d: %s", c, stderr.String())
	}
	id := sample.NewTraceID(runRow.TraceTag, 3, 7)
	line := fmt.Sprintf(`shop.apps.localhost - [2026-11-24T18:57:01.000001Z] "GET / HTTP/1.1" 200 0 2 "-" "w" "127.0.0.1:1" "127.0.0.1:2" x_forwarded_for:"-" x_forwarded_proto:"http" vcap_request_id:"%s" response_time:0.001 gorouter_time:0.0001 app_id:"%s" app_index:"0" x_b3_traceid:"%s"`, id.UUID(), guid, id)
	msg := rfc5424.Append(nil, &rfc5424.Message{Priority: 14, Timestamp: time.Now(), Hostname: "o.s.shop", AppName: guid, ProcID: "[RTR/0]", Msg: []byte(line)})
	resp, err := testhttp.Client.Post("http://"+auth+"@"+strings.Replace(r.HTTPAddr(), "0.0.0.0", "127.0.0.1", 1)+"/", "text/plain", bytes.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	sigterm()
	if c := <-code; c != 0 {
		t.Fatalf("exit %d: %s", c, stderr.String())
	}
	var n int
	if err := store.Pool().QueryRow(t.Context(), `SELECT count(*) FROM router_requests WHERE run_id = $1 AND worker_id = 3 AND seq = 7`, runRow.ID).Scan(&n); err != nil || n != 1 {
		t.Fatalf("stored %d rows (%v), want 1", n, err)
	}
	if strings.Contains(stderr.String(), "0123456789abcdef") {
		t.Error("the password is in the log")
	}
}
