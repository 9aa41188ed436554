package resultsdb

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Timeouts on every connection to a results database, unless its DSN sets them
// (connect_timeout=SECONDS, statement_timeout=MILLISECONDS): a server that accepts the
// TCP connection and never answers fails the dial in DefaultConnectTimeout with an
// error naming its address, and a statement stuck on the server (a lock, a runaway
// query) ends after DefaultStatementTimeout instead of holding a run forever. Long
// resumable streams (export) lift the statement timeout on their own connections.
const (
	DefaultConnectTimeout   = 10 * time.Second
	DefaultStatementTimeout = 10 * time.Minute
)

// applyTimeouts sets the default timeouts on cc where its DSN left them unset.
func applyTimeouts(cc *pgconn.Config) {
	if cc.ConnectTimeout <= 0 {
		cc.ConnectTimeout = DefaultConnectTimeout
	}
	if _, ok := cc.RuntimeParams["statement_timeout"]; !ok {
		cc.RuntimeParams["statement_timeout"] = strconv.FormatInt(DefaultStatementTimeout.Milliseconds(), 10)
	}
}

// serverAddr names the server cc dials, host:port (the first one when the DSN lists
// several), for error messages: never the user or password.
func serverAddr(cc *pgconn.Config) string {
	if strings.HasPrefix(cc.Host, "/") {
		return fmt.Sprintf("%s/.s.PGSQL.%d", cc.Host, cc.Port)
	}
	return net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port)))
}

// Transient reports whether err is what a results database that is away (down,
// restarting, unreachable, out of connections) gives, so that the same call can
// succeed later; an error the server answered for a statement (a constraint, a
// missing table) is not. Callers retry transient errors with backoff.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return true // no answer from the server: dial, I/O, timeout, closed connection
	}
	switch {
	case strings.HasPrefix(pgErr.Code, "08"): // connection exception
		return true
	case strings.HasPrefix(pgErr.Code, "53"): // insufficient resources: too many connections
		return true
	case pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03": // shutdown, crash, starting up
		return true
	case pgErr.Code == "40001", pgErr.Code == "40P01": // serialization failure, deadlock
		return true
	}
	return false
}
