package engine

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cf-benchmark/cf-benchmark/collectors/dbconns"
	"github.com/cf-benchmark/cf-benchmark/platform"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// watchedDB is an apps' database whose server's connections the run reads.
type watchedDB struct {
	service string
	dsn     string
}

// findDatabases finds, for each service instance of the landscape's apps
// (landscape.services, guids by name), a variant app bound to it and the uri of that
// binding: the database the apps use, as they reach it. A service no app is bound to,
// or whose binding has no uri, is not watched, and note says so.
func findDatabases(ctx context.Context, cf *platform.CF, sp *spec.Spec, guids map[string]string, d *Deployment, note func(string)) []watchedDB {
	var out []watchedDB
	for _, si := range sp.Landscape.Services {
		guid := guids[si.Name]
		var dsn string
		for _, name := range d.order {
			app := d.variants[name].app
			if app == nil {
				continue
			}
			if creds, err := cf.BindingCredentials(ctx, app.GUID, guid); err == nil {
				dsn, _ = creds["uri"].(string)
				break
			}
		}
		if dsn == "" {
			note(fmt.Sprintf("database connections of %s not watched: no variant app has a binding to it with a uri credential", si.Name))
			continue
		}
		out = append(out, watchedDB{service: si.Name, dsn: dsn})
	}
	return out
}

// dbProbeTimeout bounds the first connection to an apps' database: one that does not
// answer in time is taken as unreachable from here.
const dbProbeTimeout = 5 * time.Second

// startDBWatch reads the connections of each reachable apps' database server into the
// store until the returned stop is called. A database this machine cannot reach (on a
// real Cloud Foundry, usually) is said once in a note and not watched: the
// pool-exhaustion check then rests on the app timings alone.
func (d *Deployment) startDBWatch(ctx context.Context, runID string, every time.Duration, note func(string), log *slog.Logger) (stop func()) {
	var parts []*dbconns.Poller
	for _, db := range d.databases {
		pctx, cancel := context.WithTimeout(ctx, dbProbeTimeout)
		conn, err := pgx.Connect(pctx, db.dsn)
		cancel()
		if err != nil {
			note(fmt.Sprintf("database connections of %s not watched: its server is not reachable from here (%v); the pool-exhaustion check rests on the app timings",
				db.service, err))
			continue
		}
		conn.Close(context.WithoutCancel(ctx))
		p := dbconns.New(dbconns.Config{DSN: db.dsn, Service: db.service, Store: d.Store, RunID: runID, Interval: every, Logger: log})
		if err := p.Start(ctx); err != nil { // a new poller starts; this is a guard
			log.Warn("database connections not watched", "service", db.service, "err", err)
			continue
		}
		parts = append(parts, p)
	}
	return func() {
		for _, p := range parts {
			p.Close()
		}
	}
}
