package resultsdb

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// RunHeartbeatEvery is how often the process that runs a run marks it alive, and
// RunStaleAfter how old its last mark must be for the run to count as dead. The margin
// covers a results-database outage of up to about 30 s that the run's process rides out
// (its own marks fail meanwhile); a status read in a longer outage's first seconds
// after the database comes back can take a living run for dead, and that run then ends
// as aborted with everything it stored kept (see HeartbeatRun).
const (
	RunHeartbeatEvery = 2 * time.Second
	RunStaleAfter     = 30 * time.Second
)

// ErrRunNotRunning is returned by HeartbeatRun when the run is no longer running: it
// was marked aborted (or finished) by another process; and by JoinRun for a run
// that ended or whose process is gone.
var ErrRunNotRunning = fmt.Errorf("run is no longer running")

// HeartbeatRun marks run id alive. It fails with ErrRunNotRunning when the run is no
// longer running.
func (s *Store) HeartbeatRun(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE runs SET heartbeat_at = statement_timestamp() WHERE id = $1 AND status = 'running'`, id)
	if err != nil {
		return fmt.Errorf("heartbeat of run %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("heartbeat of run %s: %w", id, ErrRunNotRunning)
	}
	return nil
}

// DeadRun is a run AbortDeadRuns marked aborted, with what was left of it to clean up.
type DeadRun struct {
	ID string
	// LastHeartbeat is when its process was last seen.
	LastHeartbeat time.Time
	// GeneratorApps are the generator apps its variants used (one per configuration)
	// that no live run uses: what is the dead run's to scale down.
	GeneratorApps []string
	// InUse are the generator apps its variants used that a live run (one of the same
	// spec, started after it died) uses now: not the dead run's to touch.
	InUse []string
}

// usedByLiveRun is whether a run other than r, running and heartbeating within $1
// seconds, names rv's generator app: runs of one spec share their generator apps
// (SPEC-gen-VARIANT), and a dead run's cleanup must not stop a live run's load. Within
// the UPDATE it sees the runs as they were before it, so dead runs sharing an app do
// not protect it from each other: their heartbeats are stale.
const usedByLiveRun = `EXISTS (SELECT 1 FROM run_variants lv JOIN runs l ON l.id = lv.run_id
       WHERE lv.generator_app = rv.generator_app AND l.id <> r.id AND l.status = 'running'
         AND l.heartbeat_at >= statement_timestamp() - make_interval(secs => $1))`

// AbortDeadRuns marks aborted every running run whose heartbeat is older than
// staleAfter (RunStaleAfter when 0) and returns them. Its workers see that at their
// next poll and stop issuing; scaling pushed generators down is the caller's, and only
// those of DeadRun.GeneratorApps: a live run uses the others.
func (s *Store) AbortDeadRuns(ctx context.Context, staleAfter time.Duration) ([]DeadRun, error) {
	if staleAfter <= 0 {
		staleAfter = RunStaleAfter
	}
	// The dead runs and their apps are read in one snapshot, then each is marked on its
	// own: Citus does not let an UPDATE of a reference table format a column (to_char)
	// or return subqueries. A run another process marked meanwhile is not returned.
	rows, err := s.pool.Query(ctx, `
SELECT r.id, r.heartbeat_at,
       ARRAY(SELECT DISTINCT rv.generator_app FROM run_variants rv WHERE rv.run_id = r.id AND NOT `+usedByLiveRun+` ORDER BY 1),
       ARRAY(SELECT DISTINCT rv.generator_app FROM run_variants rv WHERE rv.run_id = r.id AND `+usedByLiveRun+` ORDER BY 1)
FROM runs r WHERE r.status = 'running' AND r.heartbeat_at < statement_timestamp() - make_interval(secs => $1)
ORDER BY r.id`, staleAfter.Seconds())
	if err != nil {
		return nil, fmt.Errorf("abort dead runs: %w", err)
	}
	dead, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DeadRun, error) {
		var d DeadRun
		return d, r.Scan(&d.ID, &d.LastHeartbeat, &d.GeneratorApps, &d.InUse)
	})
	if err != nil {
		return nil, fmt.Errorf("abort dead runs: %w", err)
	}
	var out []DeadRun
	for _, d := range dead {
		reason := "the run's process stopped: no heartbeat since " + d.LastHeartbeat.UTC().Format("2006-01-02 15:04:05") + " UTC"
		tag, err := s.pool.Exec(ctx, `UPDATE runs SET status = 'aborted', ended_at = heartbeat_at, reason = $3
WHERE id = $1 AND status = 'running' AND heartbeat_at = $2`, d.ID, d.LastHeartbeat, reason)
		if err != nil {
			return out, fmt.Errorf("abort dead run %s: %w", d.ID, err)
		}
		if tag.RowsAffected() == 1 {
			out = append(out, d)
		}
	}
	return out, nil
}

// LiveRun is a run whose process is alive: running, with a fresh heartbeat.
type LiveRun struct {
	ID            string
	LastHeartbeat time.Time
}

// LiveRuns returns the live runs of the spec named name, oldest first.
func (s *Store) LiveRuns(ctx context.Context, name string) ([]LiveRun, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, heartbeat_at FROM runs
WHERE name = $1 AND status = 'running' AND heartbeat_at >= clock_timestamp() - make_interval(secs => $2) ORDER BY id`, name, RunStaleAfter.Seconds())
	if err != nil {
		return nil, fmt.Errorf("look for live runs: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[LiveRun])
	if err != nil {
		return nil, fmt.Errorf("look for live runs: %w", err)
	}
	return out, nil
}
