// The worker command (worker.go) is the load-generator instance cf-benchmark pushes to Cloud
// Foundry (binary buildpack, no route, process health check) as many times as the load
// needs. It finds the results database in VCAP_SERVICES or DATABASE_URL, follows the run
// planned for its app (package worker) and exits 0 after a graceful stop on SIGTERM.
//
// With --relay (CFBENCH_RELAY_URL) and CFBENCH_RELAY_TOKEN it reaches the database
// through a relay (cfbench relay) instead, holding no connection to it: the way to
// run more instances than the database's connection limit allows. CFBENCH_RELAY_CONNECT_TO
// names the host:port to dial for it where its route's domain does not resolve (the
// local foundation's router).
//
// Outside Cloud Foundry the same binary runs with flags:
//
//	DATABASE_URL=postgres://… cfbench worker --app cfbench-loadgen --index 3

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/cfenv"
	"github.com/cf-benchmark/cf-benchmark/dbaccess/relay"
	"github.com/cf-benchmark/cf-benchmark/internal/cli"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
	"github.com/cf-benchmark/cf-benchmark/loadgen/worker"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// runWorker is the worker command; ctx ends on SIGTERM or SIGINT, which stops the worker
// gracefully. started, when not nil, receives the worker once it runs (for tests).
func runWorker(ctx context.Context, args []string, getenv func(string) string, hostname string, stderr io.Writer, started func(*worker.Worker)) int {
	fs := flag.NewFlagSet("cfbench worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	app := fs.String("app", "", "generator app name whose runs to follow (default: the name in VCAP_APPLICATION, else $CFBENCH_APP)")
	index := fs.Int("index", -1, "instance index (default $CF_INSTANCE_INDEX, else 0)")
	service := fs.String("service", getenv("CFBENCH_DB_SERVICE"), "name of the bound results DB service when several Postgres services are bound")
	spillDir := fs.String("spill-dir", "", "directory for the spill file (default $TMPDIR, else /tmp)")
	relayURL := fs.String("relay", getenv("CFBENCH_RELAY_URL"), "base URL of a relay (cfbench relay) to reach the results database through (token in $CFBENCH_RELAY_TOKEN)")
	poll := fs.Duration("poll", 500*time.Millisecond, "how often to read the run plan and heartbeat")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: cfbench worker [--app NAME] [--index N] [--service NAME]\n\nExample:\n  DATABASE_URL=postgres://u:p@127.0.0.1:5432/results cfbench worker --app cfbench-loadgen --index 0\n\nOptions:")
		fs.PrintDefaults()
	}
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	fail := cli.Failer(fs)

	if *app == "" {
		if va := getenv("VCAP_APPLICATION"); va != "" {
			a, err := cfenv.ParseApplication(va)
			if err != nil {
				return fail(err)
			}
			*app = a.Name
		} else {
			*app = getenv("CFBENCH_APP")
		}
	}
	if *app == "" {
		return fail(errors.New("no app name: run on Cloud Foundry (VCAP_APPLICATION), or give --app or CFBENCH_APP"))
	}
	if *index < 0 {
		*index = 0
		if s := getenv("CF_INSTANCE_INDEX"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				return fail(fmt.Errorf("CF_INSTANCE_INDEX=%q is not an instance index", s))
			}
			*index = n
		}
	}
	host := getenv("CF_INSTANCE_IP")
	if host == "" {
		host = hostname
	}
	if *spillDir == "" {
		if *spillDir = getenv("TMPDIR"); *spillDir == "" {
			*spillDir = "/tmp"
		}
	}
	var db worker.Backend
	if *relayURL != "" {
		c, err := relay.NewClient(*relayURL, getenv("CFBENCH_RELAY_TOKEN"), getenv("CFBENCH_RELAY_CONNECT_TO"))
		if err != nil {
			return fail(err)
		}
		defer c.Close()
		db = c
	} else {
		dsn, err := cfenv.ResultsDSN(getenv, *service)
		if err != nil {
			return fail(err)
		}
		store, err := resultsdb.OpenWaiting(ctx, dsn, 0, logger)
		if err != nil {
			return 0 // stopped while waiting
		}
		defer store.Close()
		db = store
	}

	w := worker.New(worker.Config{Store: db, App: *app, Index: *index, GUID: getenv("CF_INSTANCE_GUID"), Host: host,
		PollEvery: *poll, SpillDir: *spillDir, Logger: logger})
	return serve(ctx, fail, func() {
		logger.Info("following runs", "app", *app, "index", *index, "host", host)
		if started != nil {
			started(w)
		}
	}, lifecycle.Member{Name: "worker", Part: w})
}
