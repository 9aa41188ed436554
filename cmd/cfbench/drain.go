// The drain command (drain.go) is the syslog drain app cf-benchmark pushes to Cloud Foundry
// (binary buildpack) for a run whose router logs come from a drain
// (collectors.router_logs.source: drain), bound to the results database: the run's
// apps' log lines arrive through a user-provided service's drain URL, and every router
// line of the run's requests is stored in router_requests as it arrives (package drain).
//
// It takes HTTP drain requests on $PORT (Cloud Foundry's router terminates TLS for
// https:// drain URLs) with the run's credentials CFBENCH_DRAIN_AUTH (user:password,
// the password at least 16 characters; the drain URL carries them as user info), and,
// with --syslog-port, syslog over mutual TLS (--tls-cert and --tls-key, and
// --tls-client-ca, the CA of the client certificate the agent presents for a
// syslog-tls:// drain whose service has "cert" and "key" credentials): plain syslog
// carries no credentials, so the drain does not take it. The run
// is CFBENCH_DRAIN_RUN; its trace tag is read from the database, and its apps too
// unless CFBENCH_DRAIN_APPS gives them (a JSON object, app GUID to name: a run pushes
// its drain before its variants are recorded).
//
// Outside Cloud Foundry:
//
//	PORT=8080 DATABASE_URL=postgres://… CFBENCH_DRAIN_AUTH=u:p… CFBENCH_DRAIN_RUN=RUN_ID cfbench drain

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/drain"
	"github.com/cf-benchmark/cf-benchmark/dbaccess/cfenv"
	"github.com/cf-benchmark/cf-benchmark/internal/cli"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// runDrain is the drain command; it serves until ctx ends (SIGTERM), then stores what is
// buffered within the grace. started, when not nil, receives the receiver once it
// listens (for tests).
func runDrain(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer, started func(*drain.Receiver)) int {
	fs := flag.NewFlagSet("cfbench drain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	port := fs.String("port", getenv("PORT"), "port for HTTP drain requests, on all interfaces (default $PORT; empty: none)")
	syslogPort := fs.String("syslog-port", "", "port for syslog over mutual TLS (octet counting); empty: none")
	certFile := fs.String("tls-cert", "", "certificate (PEM) for syslog over TLS")
	keyFile := fs.String("tls-key", "", "its key (PEM)")
	clientCA := fs.String("tls-client-ca", "", "CA (PEM) whose client certificates may send syslog: the only credential a syslog sender has")
	service := fs.String("service", getenv("CFBENCH_DB_SERVICE"), "name of the bound results DB service when several Postgres services are bound")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: cfbench drain [--port PORT] [--syslog-port PORT --tls-cert FILE --tls-key FILE --tls-client-ca FILE] [--service NAME]\n\nExample:\n  PORT=8080 DATABASE_URL=postgres://u:p@127.0.0.1:5432/results CFBENCH_DRAIN_AUTH=cfbench:$(openssl rand -hex 16) CFBENCH_DRAIN_RUN=20261124-185701-ab12 cfbench drain\n\nOptions:")
		fs.PrintDefaults()
	}
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	fail := cli.Failer(fs)
	cfg := drain.Config{RunID: getenv("CFBENCH_DRAIN_RUN"), Logger: slog.New(slog.NewTextHandler(stderr, nil))}
	for _, l := range []struct{ port, addr *string }{{port, &cfg.HTTPAddr}, {syslogPort, &cfg.SyslogAddr}} {
		if *l.port == "" {
			continue // that one is off
		}
		var err error
		if *l.addr, err = cli.ListenAddr(*l.port, ""); err != nil {
			return fail(err)
		}
	}
	if *syslogPort != "" {
		if *certFile == "" || *keyFile == "" || *clientCA == "" {
			return fail(errors.New("--syslog-port needs --tls-cert, --tls-key and --tls-client-ca: syslog is taken only over mutual TLS, as plain syslog carries no credentials"))
		}
		cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
		if err != nil {
			return fail(fmt.Errorf("tls: %w", err))
		}
		pem, err := os.ReadFile(*clientCA)
		if err != nil {
			return fail(fmt.Errorf("--tls-client-ca: %w", err))
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fail(fmt.Errorf("--tls-client-ca %s: no PEM certificate in it", *clientCA))
		}
		cfg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if cfg.RunID == "" || !resultsdb.ValidRunID(cfg.RunID) {
		return fail(fmt.Errorf("CFBENCH_DRAIN_RUN %q is not a run id: give the run whose router lines to keep", cfg.RunID))
	}
	if auth := getenv("CFBENCH_DRAIN_AUTH"); auth != "" {
		cfg.User, cfg.Password, _ = strings.Cut(auth, ":")
	} else if cfg.HTTPAddr != "" {
		return fail(errors.New("CFBENCH_DRAIN_AUTH is not set: give the run's user:password, which the drain URL carries"))
	}
	dsn, err := cfenv.ResultsDSN(getenv, *service)
	if err != nil {
		return fail(err)
	}
	store, err := resultsdb.Open(ctx, dsn)
	if err != nil {
		return fail(err)
	}
	defer store.Close()
	if cfg.TraceTag, cfg.Apps, err = drain.RunApps(ctx, store, cfg.RunID, getenv("CFBENCH_DRAIN_APPS")); err != nil {
		return fail(err)
	}
	cfg.Store = store
	r, err := drain.New(cfg)
	if err != nil {
		return fail(err)
	}
	// SIGTERM closes it (serve), with its grace to store what is buffered.
	return serve(ctx, fail, func() {
		if started != nil {
			started(r)
		}
	}, lifecycle.Member{Name: "drain", Part: r})
}
