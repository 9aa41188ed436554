package resultsdb

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLock is the advisory lock key that serialises concurrent migrators (several
// workers may start at once against a fresh DB).
const migrationLock = 0x6366626e // "cfbn"

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		prefix, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a number and _", e.Name())
		}
		body, err := fs.ReadFile(migrationFiles, "migrations/"+e.Name())
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s share version %d", ms[i-1].name, ms[i].name, ms[i].version)
		}
	}
	return ms, nil
}

// SchemaVersion is the newest migration embedded in this binary.
func SchemaVersion() int {
	ms, err := loadMigrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// Migrate applies the embedded migrations that the database has not seen, each in its own
// transaction, under an advisory lock. It is idempotent and safe to call concurrently.
// A database newer than this binary is an error: an old binary must not write into it.
// On a Citus coordinator the new tables are then laid out over the cluster (citus.go); a
// worker node's database is refused while migrations are pending.
func Migrate(ctx context.Context, conn *pgx.Conn) error {
	ms, err := loadMigrations()
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	return migrate(ctx, conn, ms)
}

// migrate applies ms, the migrations in order, as Migrate does.
func migrate(ctx context.Context, conn *pgx.Conn, ms []migration) error {
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrationLock); err != nil {
		return fmt.Errorf("lock schema: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLock) //nolint:errcheck // the session ends soon anyway
	latest := ms[len(ms)-1].version
	citus, err := citusVersion(ctx, conn)
	if err != nil {
		return err
	}
	coordinator := false
	if citus != "" {
		// Before anything is created: a table made on a worker node would be its own,
		// in the way of the coordinator's.
		if coordinator, err = checkCitus(ctx, conn, citus); err != nil {
			return err
		}
		if !coordinator {
			return checkWorkerSchema(ctx, conn, latest)
		}
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	var current int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if current > latest {
		return fmt.Errorf("results db schema is version %d, this binary knows up to %d: upgrade cf-benchmark", current, latest)
	}
	for _, m := range ms {
		if m.version <= current {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name)
			return err
		})
		if err != nil {
			return fmt.Errorf("apply migration %s: %w", m.name, err)
		}
	}
	if coordinator {
		return distribute(ctx, conn)
	}
	return nil
}
