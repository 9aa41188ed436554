package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/backoff"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// DefaultMaxOutage is how long a run waits for a results database that went away (down,
// restarting, unreachable) at a step boundary before it gives up (Options.MaxOutage).
// The generators keep what they measure meanwhile: a spill file, then memory (by
// default 8 Mi and 4 Mi samples per instance, minutes of load at thousands of
// requests per second), then counted drops.
const DefaultMaxOutage = 5 * time.Minute

// ErrOutage is returned when the results database stayed away longer than the run's
// MaxOutage. What the generators hold is spilled to their spill files; none of it is
// silently lost (the error of the fleet's Stop says where it is).
var ErrOutage = errors.New("results database unreachable")

// dbAttemptTimeout bounds one attempt of a step-boundary read or write: a database that
// accepts the connection and then says nothing counts as away.
const dbAttemptTimeout = time.Minute

// db runs op (one read or write of the run's plan or figures) until it succeeds, fails
// for a reason other than the database being away, ctx ends, or the database has been
// away for longer than MaxOutage. The user hears when the database goes and comes back.
func (r *runner) db(ctx context.Context, what string, op func(context.Context) error) error {
	retry := backoff.Backoff{First: 200 * time.Millisecond, Max: 2 * time.Second}
	var since time.Time
	for {
		attempt, cancel := context.WithTimeout(ctx, dbAttemptTimeout)
		err := op(attempt)
		cancel()
		if err == nil {
			if !since.IsZero() {
				r.opts.Reporter.Note(fmt.Sprintf("results database back after %s; the run goes on", time.Since(since).Round(100*time.Millisecond)))
			}
			if !since.IsZero() || r.away {
				r.back, r.away = time.Now(), false
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !r.opts.Store.Retryable(ctx, err) {
			return err
		}
		if since.IsZero() {
			since = time.Now()
			r.opts.Reporter.Note(fmt.Sprintf("results database unreachable (%s: %v); retrying for up to %s, the generators keep their samples",
				what, err, r.opts.MaxOutage))
		}
		if away := time.Since(since); away > r.opts.MaxOutage {
			return fmt.Errorf("%w for %s, longer than the run waits (%s): %s: %w", ErrOutage, away.Round(time.Second), r.opts.MaxOutage, what, err)
		}
		r.opts.Logger.Warn("results database away; retrying", "op", what, "err", err, "failures", retry.Failures()+1)
		if !retry.Wait(ctx) {
			return ctx.Err()
		}
	}
}

// record records a run event (its At set), trying again while the results database is
// away (restarting, or the tunnel app to it being moved by the very fault recorded) for
// up to MaxOutage; an event whose insert may have landed before its answer was lost is
// not recorded twice. Unlike db, it leaves the run's own view of the outage alone, so
// it may run beside the run's loop (an injected fault's watch, the loop's own events in
// goroutines of theirs: event). Failing that, it logs: an event is never fatal.
func (r *runner) record(ctx context.Context, e resultsdb.Event) {
	r.recordWithin(ctx, e, r.opts.MaxOutage)
}

// recordWithin is record with the outage bound given: a goroutine of the run's own
// must not read r.opts, which the run changes as it ends.
func (r *runner) recordWithin(ctx context.Context, e resultsdb.Event, bound time.Duration) {
	retry := backoff.Backoff{First: 200 * time.Millisecond, Max: 2 * time.Second}
	deadline := time.Now().Add(bound)
	add := r.opts.Store.AddEvent
	for {
		attempt, cancel := context.WithTimeout(ctx, dbAttemptTimeout)
		err := add(attempt, e)
		cancel()
		if err == nil {
			return
		}
		if !r.opts.Store.Retryable(ctx, err) || time.Now().After(deadline) || !retry.Wait(ctx) {
			r.opts.Logger.Warn("record run event", "kind", e.Kind, "err", err)
			return
		}
		add = r.opts.Store.AddEventOnce
	}
}

// nodeCheckTimeout bounds a look at the nodes of a Citus results database: a node that
// says nothing is not named, but it does not hold the step's watch either.
const nodeCheckTimeout = 2 * time.Second

// watchNodes says once when a node of a Citus results database stops answering, and
// when every node answers again. The generators' batches touching its shards wait for
// it (they fail as a whole), while the engine's reads go on: nothing else would say
// why the samples are late. On plain Postgres it does nothing.
func (r *runner) watchNodes(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, nodeCheckTimeout)
	err := r.opts.Store.CheckNodes(cctx)
	cancel()
	switch {
	case errors.Is(err, resultsdb.ErrNodeAway) && r.nodeAway.IsZero():
		r.nodeAway = time.Now()
		r.opts.Reporter.Note(fmt.Sprintf("results database: %v; the generators keep their samples until it is back", err))
	case err == nil && !r.nodeAway.IsZero():
		r.opts.Reporter.Note(fmt.Sprintf("results database: every Citus node answers again, after %s", time.Since(r.nodeAway).Round(100*time.Millisecond)))
		r.nodeAway = time.Time{}
		// At once, not at Citus's next recovery (up to a minute): until then a commit
		// the node missed holds its rows' locks there, and the writes of the run and
		// of the generators to them wait (a step's end waited out its generators).
		cctx, cancel := context.WithTimeout(ctx, nodeCheckTimeout)
		if err := r.opts.Store.Settle(cctx); err != nil {
			r.opts.Logger.Warn("finish the Citus nodes' two-phase commits; Citus's own recovery will", "err", err)
		}
		cancel()
	}
}

// settled reports whether the results database has been reachable for at least d since
// it last came back: before that, a generator instance's old heartbeat says nothing
// about it (it could not write one either).
func (r *runner) settled(d time.Duration) bool { return r.back.IsZero() || time.Since(r.back) >= d }
