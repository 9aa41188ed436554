// Package dbconns watches the connections to the apps' database server during a run: a
// database plan capped at 100 connections capped a classic study's throughput while
// every app looked idle. It reads pg_stat_activity with the service binding's own
// credentials, so it works wherever the run can reach the database (the local
// foundation's postgres service; on a real Cloud Foundry usually not, and the run says
// so).
package dbconns

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Reading is the server's connections at one moment.
type Reading struct {
	// InUse counts client connections to the server (all databases, all users),
	// ToDatabase those to the connection's own database, MaxConnections the limit.
	InUse, ToDatabase, MaxConnections int
}

// readSQL counts client backends only: the server's own processes (checkpointer,
// walwriter, autovacuum) hold no connection slot. A user that is not a superuser sees
// every backend's row, without its query, which is all this needs.
const readSQL = `
SELECT count(*) FILTER (WHERE backend_type = 'client backend'),
       count(*) FILTER (WHERE backend_type = 'client backend' AND datname = current_database()),
       current_setting('max_connections')::int
FROM pg_stat_activity`

// Read takes one reading over conn; conn's own connection counts among those in use.
func Read(ctx context.Context, conn *pgx.Conn) (Reading, error) {
	var r Reading
	if err := conn.QueryRow(ctx, readSQL).Scan(&r.InUse, &r.ToDatabase, &r.MaxConnections); err != nil {
		return r, fmt.Errorf("read the database's connections: %w", err)
	}
	return r, nil
}
