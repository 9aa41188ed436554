// The relay command (relay.go) lets many generator instances share a few connections to the
// results database (package relay): pushed to Cloud Foundry beside the generators
// (binary buildpack, bound to the results database), it serves them on $PORT and holds
// at most --conns connections. Generators use it with --relay URL (or
// CFBENCH_RELAY_URL) and the same CFBENCH_RELAY_TOKEN.
//
// Outside Cloud Foundry:
//
//	PORT=8080 DATABASE_URL=postgres://… CFBENCH_RELAY_TOKEN=… cfbench relay --conns 8

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/cfenv"
	"github.com/cf-benchmark/cf-benchmark/dbaccess/relay"
	"github.com/cf-benchmark/cf-benchmark/internal/cli"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// runRelay is the relay command; it serves until ctx ends (SIGTERM). started, when not nil,
// receives the relay once it listens (for tests).
func runRelay(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer, started func(*relay.Server)) int {
	fs := flag.NewFlagSet("cfbench relay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	port := fs.String("port", getenv("PORT"), "port to listen on, on all interfaces (default $PORT)")
	service := fs.String("service", getenv("CFBENCH_DB_SERVICE"), "name of the bound results DB service when several Postgres services are bound")
	conns := fs.Int("conns", 8, "most connections to the results database")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: cfbench relay [--port PORT] [--conns N] [--service NAME]\n\nExample:\n  PORT=8080 DATABASE_URL=postgres://u:p@127.0.0.1:5432/results CFBENCH_RELAY_TOKEN=$(openssl rand -hex 16) cfbench relay --conns 8\n\nOptions:")
		fs.PrintDefaults()
	}
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	fail := cli.Failer(fs)
	addr, err := cli.ListenAddr(*port, "")
	switch {
	case err != nil:
		return fail(err)
	case *conns < 1:
		return fail(fmt.Errorf("--conns %d: want at least 1", *conns))
	case len(getenv("CFBENCH_RELAY_TOKEN")) < 16:
		return fail(errors.New("CFBENCH_RELAY_TOKEN must be set to a secret of at least 16 characters"))
	}
	dsn, err := cfenv.ResultsDSN(getenv, *service)
	if err != nil {
		return fail(err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	store, err := resultsdb.OpenWaiting(ctx, dsn, *conns, logger)
	if err != nil {
		return 0 // stopped while waiting
	}
	defer store.Close()
	srv := relay.New(relay.Config{Store: store, Addr: addr, Token: getenv("CFBENCH_RELAY_TOKEN"), Logger: logger})
	code := serve(ctx, fail, func() {
		logger.Info("relaying", "port", *port, "conns", *conns)
		if started != nil {
			started(srv)
		}
	}, lifecycle.Member{Name: "relay", Part: srv})
	st := srv.Stats()
	logger.Info("stopped", "requests", st.Requests, "plan_queries", st.PlanQueries, "beat_statements", st.BeatStatements, "copies", st.Copies, "rows", st.CopiedRows)
	return code
}
