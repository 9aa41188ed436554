package resultsdb

import (
	"context"
	"fmt"
)

// Loss is what a run's generator instances sent and did not store. An instance's own
// count of what it sent (workers.sent) against the rows stored for it is the measure:
// the rows, not the instance's count of its acknowledged writes, say what is stored.
type Loss struct {
	// Samples is exact: over the instances that recorded their final counters, what
	// they sent less the rows stored for them; Workers is how many of them lost any.
	Samples int64
	Workers int
	// Silent counts instances that went silent (no heartbeat for 10 s) without
	// recording their final counters: killed, or stopped while neither the database
	// nor a relay could take them. At least SilentSamples were lost with them: what
	// they had sent by their last heartbeat, less the rows stored.
	Silent        int
	SilentSamples int64
	// Running counts instances that still heartbeat and have not stopped: not judged.
	Running int
}

// replacedSQL holds for the worker row w whose instance was replaced: a later worker
// of the same run, variant, app and instance index registered. Diego replaces an
// instance it evacuates (the replacement starts first, then the old one gets SIGTERM)
// or restarts (through the CC, or after a crash or an OOM kill) under a new instance
// guid and the same index, and the replacement joins the run by itself: the old one
// did not leave the step, its index carries on. Its samples still count as Loss says.
const replacedSQL = `EXISTS (SELECT 1 FROM workers r WHERE r.run_id = w.run_id AND r.variant = w.variant
  AND r.app_name = w.app_name AND r.instance_index = w.instance_index AND r.id > w.id)`

// Any reports whether samples are known to be lost. An instance that went silent
// having stored all it had sent by its last heartbeat is not: what it sent after is
// unknown, and a clean run whose instance was killed late in its stop must not warn.
func (l Loss) Any() bool { return l.Samples > 0 || l.SilentSamples > 0 }

// Loss reads what the generator instances of variant of run runID sent and did not
// store.
func (s *Store) Loss(ctx context.Context, runID, variant string) (Loss, error) {
	var l Loss
	err := s.pool.QueryRow(ctx, `
WITH stored AS (
  SELECT s.worker_id, count(*) AS n FROM workers w JOIN samples s ON s.worker_id = w.id
  WHERE w.run_id = $1 AND w.variant = $2 GROUP BY 1),
w AS (
  SELECT w.sent, w.stopped_at IS NOT NULL AS stopped,
         w.heartbeat_at < clock_timestamp() - interval '10 seconds' AS silent,
         coalesce(st.n, 0) AS stored
  FROM workers w LEFT JOIN stored st ON st.worker_id = w.id WHERE w.run_id = $1 AND w.variant = $2)
SELECT coalesce(sum(greatest(sent - stored, 0)) FILTER (WHERE stopped), 0)::bigint,
       count(*) FILTER (WHERE stopped AND sent > stored),
       count(*) FILTER (WHERE NOT stopped AND silent),
       coalesce(sum(greatest(sent - stored, 0)) FILTER (WHERE NOT stopped AND silent), 0)::bigint,
       count(*) FILTER (WHERE NOT stopped AND NOT silent)
FROM w`, runID, variant).Scan(&l.Samples, &l.Workers, &l.Silent, &l.SilentSamples, &l.Running)
	if err != nil {
		return l, fmt.Errorf("samples lost by the generators of %s: %w", variant, err)
	}
	return l, nil
}

// String says what was lost, for the run's summary.
func (l Loss) String() string {
	msg := ""
	if l.Samples > 0 || l.SilentSamples == 0 {
		msg = fmt.Sprintf("%d samples sent were not stored (exact, by the final counts of the %d generator instance(s) that stopped before they could store them)",
			l.Samples, l.Workers)
	}
	if l.SilentSamples > 0 {
		if msg != "" {
			msg += "; "
		}
		msg += fmt.Sprintf("%d generator instance(s) went away without a final count (killed, or stopped while nothing could take it): at least %d samples they sent were not stored",
			l.Silent, l.SilentSamples)
	}
	return msg
}
