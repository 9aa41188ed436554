// Command cfbench-pg manages the private PostgreSQL server of a state directory (see
// package pgserver); scripts/pg-local.sh wraps it.
//
//	cfbench-pg start  [--state-dir DIR] [--db NAME]   start detached, print the DSN
//	cfbench-pg status [--state-dir DIR] [--db NAME]   print pid, port and DSN, or exit 3
//	cfbench-pg stop   [--state-dir DIR]               stop it, whoever started it
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/pgserver"
)

const usage = `Usage: cfbench-pg start|status|stop [--state-dir DIR] [--db NAME]

Example:
  cfbench-pg start --state-dir .cfbench/pg --db cfbench
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	fs := flag.NewFlagSet("cfbench-pg "+os.Args[1], flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage); fs.PrintDefaults() }
	dir := fs.String("state-dir", ".cfbench/pg", "state directory of the server")
	db := fs.String("db", "cfbench", "database to create (start) and to print the DSN of")
	if err := fs.Parse(os.Args[2:]); err != nil || fs.NArg() > 0 {
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code, err := run(ctx, os.Args[1], *dir, *db)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cfbench-pg:", err)
	}
	os.Exit(code)
}

func run(ctx context.Context, verb, dir, db string) (int, error) {
	switch verb {
	case "start":
		// Detached, the server outlives this process, which exits without Close.
		srv := pgserver.New(pgserver.Options{Dir: dir, Detach: true})
		if err := srv.Start(ctx); err != nil {
			return 1, err
		}
		if err := srv.CreateDatabase(ctx, db); err != nil {
			return 1, err
		}
		fmt.Println(srv.DSN(db))
		return 0, nil
	case "status":
		srv, err := pgserver.Attach(dir, "")
		if errors.Is(err, pgserver.ErrNotRunning) {
			fmt.Printf("not running (state dir %s)\n", dir)
			return 3, nil
		}
		if err != nil {
			return 1, err
		}
		fmt.Printf("running: pid %d, 127.0.0.1:%d, data %s\n%s\n", srv.PID(), srv.Port(), srv.DataDir(), srv.DSN(db))
		return 0, nil
	case "stop":
		srv, err := pgserver.Attach(dir, "")
		if errors.Is(err, pgserver.ErrNotRunning) {
			fmt.Printf("not running (state dir %s)\n", dir)
			return 0, nil
		}
		if err != nil {
			return 1, err
		}
		if err := srv.Kill(); err != nil {
			return 1, err
		}
		fmt.Printf("stopped pid %d\n", srv.PID())
		return 0, nil
	}
	fmt.Fprint(os.Stderr, usage)
	return 2, nil
}
