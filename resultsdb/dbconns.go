package resultsdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// DBConnections is one reading of the connections to the apps' database server.
type DBConnections struct {
	RunID   string
	At      time.Time
	Service string // the service instance watched
	// InUse counts client connections to the server (all databases), ToDatabase those
	// to the service's database, MaxConnections the server's limit.
	InUse, ToDatabase, MaxConnections int
}

// AddDBConnections stores one reading.
func (s *Store) AddDBConnections(ctx context.Context, c DBConnections) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO db_connections (run_id, at, service, in_use, to_database, max_connections)
		VALUES ($1, $2, $3, $4, $5, $6)`, c.RunID, c.At, c.Service, c.InUse, c.ToDatabase, c.MaxConnections)
	if err != nil {
		return fmt.Errorf("store the database connections of run %s: %w", c.RunID, err)
	}
	return nil
}

// dbConnectionsSQL is the most connections any watched server had in use in a window,
// with that server's limit.
const dbConnectionsSQL = `
SELECT in_use, max_connections FROM db_connections
WHERE run_id = $1 AND at BETWEEN $2 AND $3
ORDER BY in_use::float8 / greatest(max_connections, 1) DESC, at
LIMIT 1`

// dbConnections fills m's database connections from the readings in its window.
func (s *Store) dbConnections(ctx context.Context, runID string, m *StepSummary) error {
	var inUse, limit int
	err := s.pool.QueryRow(ctx, dbConnectionsSQL, runID, m.From, m.To).Scan(&inUse, &limit)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return fmt.Errorf("read the database connections of step %d of %s: %w", m.Step+1, m.Variant, err)
	}
	m.DBConnections, m.DBMaxConnections = &inUse, &limit
	return nil
}
