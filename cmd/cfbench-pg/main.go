// Command cfbench-pg manages the private PostgreSQL server of a state directory, or the
// Citus cluster of one (see package pgserver); scripts/pg-local.sh wraps it.
//
//	cfbench-pg start  [--state-dir DIR] [--db NAME] [--citus-workers N]
//	                                                  start detached, print the DSN
//	cfbench-pg status [--state-dir DIR] [--db NAME]   print pid, port and DSN, or exit 3
//	cfbench-pg stop   [--state-dir DIR]               stop it, whoever started it
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/pgserver"
)

const usage = `Usage: cfbench-pg start|status|stop [--state-dir DIR] [--db NAME] [--citus-workers N]

start --citus-workers N starts a Citus cluster instead of one server: a coordinator and
N workers in DIR/coordinator, DIR/worker-0 …, and prints the coordinator's DSN of a
database distributed over the workers. start, status and stop find a cluster in DIR by
that layout.

Examples:
  cfbench-pg start --state-dir .cfbench/pg --db cfbench
  cfbench-pg start --state-dir .cfbench/citus --citus-workers 2
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	fs := flag.NewFlagSet("cfbench-pg "+os.Args[1], flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage); fs.PrintDefaults() }
	dir := fs.String("state-dir", ".cfbench/pg", "state directory of the server or cluster")
	db := fs.String("db", "cfbench", "database to create (start) and to print the DSN of")
	workers := fs.Int("citus-workers", 0, "start: a Citus cluster of a coordinator and N workers (0: one server, or the cluster DIR holds)")
	if err := fs.Parse(os.Args[2:]); err != nil || fs.NArg() > 0 || *workers < 0 {
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code, err := run(ctx, os.Stdout, os.Args[1], *dir, *db, *workers)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cfbench-pg:", err)
	}
	os.Exit(code)
}

func run(ctx context.Context, out io.Writer, verb, dir, db string, workers int) (int, error) {
	coordinator, workerDirs, cluster := pgserver.ClusterLayout(dir)
	switch verb {
	case "start":
		if workers == 0 && !cluster {
			return start(ctx, out, pgserver.New(pgserver.Options{Dir: dir, Detach: true}), db)
		}
		if workers == 0 {
			workers = len(workerDirs)
		}
		return start(ctx, out, pgserver.NewCluster(pgserver.Options{Dir: dir, Detach: true}, workers), db)
	case "status":
		if cluster {
			return clusterStatus(out, dir, db, append([]string{coordinator}, workerDirs...))
		}
		srv, err := pgserver.Attach(dir, "")
		if errors.Is(err, pgserver.ErrNotRunning) {
			fmt.Fprintf(out, "not running (state dir %s)\n", dir)
			return 3, nil
		}
		if err != nil {
			return 1, err
		}
		fmt.Fprintf(out, "running: pid %d, 127.0.0.1:%d, data %s\n%s\n", srv.PID(), srv.Port(), srv.DataDir(), srv.DSN(db))
		return 0, nil
	case "stop":
		nodes := []string{dir}
		if cluster {
			nodes = append(workerDirs, coordinator)
		}
		return stop(out, dir, nodes)
	}
	return 2, fmt.Errorf("unknown command %q\n%s", verb, usage)
}

// database is a server or a cluster: what start does with either.
type database interface {
	Start(ctx context.Context) error
	CreateDatabase(ctx context.Context, name string) error
	DSN(db string) string
}

// start starts d, detached (it outlives this process, which exits without Close),
// creates the database db and prints its DSN.
func start(ctx context.Context, out io.Writer, d database, db string) (int, error) {
	if err := d.Start(ctx); err != nil {
		return 1, err
	}
	if err := d.CreateDatabase(ctx, db); err != nil {
		return 1, err
	}
	fmt.Fprintln(out, d.DSN(db))
	return 0, nil
}

// clusterStatus prints each node of the cluster and the coordinator's DSN; 3 when a
// node is not running.
func clusterStatus(out io.Writer, dir, db string, nodes []string) (int, error) {
	code, dsn := 0, ""
	for i, d := range nodes {
		srv, err := pgserver.Attach(d, "")
		switch {
		case errors.Is(err, pgserver.ErrNotRunning):
			fmt.Fprintf(out, "%s: not running\n", filepath.Base(d))
			code = 3
		case err != nil:
			return 1, err
		default:
			fmt.Fprintf(out, "%s: running: pid %d, 127.0.0.1:%d, data %s\n", filepath.Base(d), srv.PID(), srv.Port(), srv.DataDir())
			if i == 0 {
				dsn = srv.DSN(db)
			}
		}
	}
	if dsn != "" {
		fmt.Fprintln(out, dsn)
	}
	return code, nil
}

// stop stops the servers of the state dirs nodes, whoever started them.
func stop(out io.Writer, dir string, nodes []string) (int, error) {
	var errs []error
	stopped := 0
	for _, d := range nodes {
		srv, err := pgserver.Attach(d, "")
		if errors.Is(err, pgserver.ErrNotRunning) {
			continue
		}
		if err == nil {
			err = srv.Kill()
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		stopped++
		if len(nodes) == 1 {
			fmt.Fprintf(out, "stopped pid %d\n", srv.PID())
		} else {
			fmt.Fprintf(out, "stopped %s: pid %d\n", filepath.Base(d), srv.PID())
		}
	}
	if err := errors.Join(errs...); err != nil {
		return 1, err
	}
	if stopped == 0 {
		fmt.Fprintf(out, "not running (state dir %s)\n", dir)
	}
	return 0, nil
}
