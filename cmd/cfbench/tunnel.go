// The tunnel command (tunnel.go) is the tunnel app cf-benchmark pushes to Cloud Foundry (binary
// buildpack, manifests/tunnel.yml) and binds to the results database: a chisel server on
// $PORT, behind the router, that lets the CLI reach that one database and nothing else.
//
// It reads the database's host and port from the binding (VCAP_SERVICES) or DATABASE_URL,
// the per-run credentials from CFBENCH_TUNNEL_AUTH (user:password, the password at least
// 16 characters) and its key from CFBENCH_TUNNEL_KEY (a "ck-…" key, or a seed), and logs
// its key's fingerprint, which clients pin. It never logs the credentials.
//
// Outside Cloud Foundry:
//
//	PORT=8080 DATABASE_URL=postgres://… CFBENCH_TUNNEL_AUTH=u:p… CFBENCH_TUNNEL_KEY=ck-… cfbench tunnel

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/cfenv"
	"github.com/cf-benchmark/cf-benchmark/dbaccess/tunnel"
	"github.com/cf-benchmark/cf-benchmark/internal/cli"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
)

// runTunnel is the tunnel command; it serves until ctx ends (SIGTERM). started, when not nil,
// receives the server once it listens (for tests).
func runTunnel(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer, started func(*tunnel.Server)) int {
	fs := flag.NewFlagSet("cfbench tunnel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	port := fs.String("port", getenv("PORT"), "port to listen on, on all interfaces (default $PORT)")
	service := fs.String("service", getenv("CFBENCH_DB_SERVICE"), "name of the bound results DB service when several Postgres services are bound")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: cfbench tunnel [--port PORT] [--service NAME]\n\nExample:\n  PORT=8080 DATABASE_URL=postgres://u:p@127.0.0.1:5432/results CFBENCH_TUNNEL_AUTH=cfbench:$(openssl rand -hex 16) CFBENCH_TUNNEL_KEY=\"a long random seed\" cfbench tunnel\n\nOptions:")
		fs.PrintDefaults()
	}
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	fail := cli.Failer(fs)
	addr, err := cli.ListenAddr(*port, "")
	if err != nil {
		return fail(err)
	}
	auth, key := getenv("CFBENCH_TUNNEL_AUTH"), getenv("CFBENCH_TUNNEL_KEY")
	if auth == "" {
		return fail(errors.New("CFBENCH_TUNNEL_AUTH is not set: give the per-run user:password (cf set-env cfbench-tunnel CFBENCH_TUNNEL_AUTH …)"))
	}
	if key == "" {
		return fail(errors.New("CFBENCH_TUNNEL_KEY is not set: give the server key, a ck-… key or a long random seed, so that its fingerprint stays the same across restarts"))
	}
	dsn, err := cfenv.ResultsDSN(getenv, *service)
	if err != nil {
		return fail(err)
	}
	remote, err := tunnel.DBRemote(dsn)
	if err != nil {
		return fail(err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	srv, err := tunnel.NewServer(tunnel.ServerConfig{Addr: addr, Remote: remote, Auth: auth, Key: key, Logger: logger})
	if err != nil {
		return fail(err)
	}
	return serve(ctx, fail, func() {
		if started != nil {
			started(srv)
		}
	}, lifecycle.Member{Name: "tunnel server", Part: srv})
}
