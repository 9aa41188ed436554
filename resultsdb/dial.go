package resultsdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cf-benchmark/cf-benchmark/internal/backoff"
	"github.com/cf-benchmark/cf-benchmark/internal/wait"
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
// restarting, unreachable, out of connections, not answering in time) gives, so that
// the same call can succeed later. An error the server answered for a statement (a
// constraint, a missing table) is not, nor is one of ours (no such row, a closed
// store). Callers retry transient errors with backoff.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"): // connection exception
			return true
		case strings.HasPrefix(pgErr.Code, "53"): // insufficient resources: too many connections
			return true
		case pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03": // shutdown, crash, starting up
			return true
		case pgErr.Code == "57014" && errors.Is(err, context.DeadlineExceeded): // our timeout cancelled it
			return true
		}
		return false
	}
	var (
		connectErr *pgconn.ConnectError
		netErr     net.Error
	)
	return errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		pgconn.Timeout(err) || pgconn.SafeToRetry(err)
}

// OpenWaiting opens the store as OpenPool does and, while that fails (a database that
// comes up after the caller, on a fresh landscape), logs and tries again with backoff
// until ctx ends; then it returns ctx's error.
func OpenWaiting(ctx context.Context, dsn string, maxConns int, log *slog.Logger) (*Store, error) {
	retry := backoff.Backoff{First: 250 * time.Millisecond, Max: 10 * time.Second}
	for {
		store, err := OpenPool(ctx, dsn, maxConns)
		if err == nil {
			return store, nil
		}
		delay := retry.Next()
		log.Warn("open results db; retrying", "err", err, "retry_in", delay)
		if !wait.For(ctx, delay) {
			return nil, ctx.Err()
		}
	}
}
