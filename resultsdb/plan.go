package resultsdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// RunVariant is the part of the plan generators of one variant follow.
type RunVariant struct {
	RunID        string
	Variant      string
	GeneratorApp string
	// AppName and AppGUID are the pushed app under test ("" for a url: variant).
	AppName, AppGUID string
	TargetURL        string
	Workload         []byte // JSON, owned by package worker
	// Listed is the variant as the spec lists it ("" = Variant); the variants of one
	// matrix share it, and Matrix is the cell (dimension → value; nil without).
	Listed string
	Matrix map[string]string
	// Config is the variant as configured ("" = Variant) when Variant is one repeat of
	// it (Config#Repeat); the repeats of a configuration share its generator app.
	// Repeat counts from 1 (0 is taken as 1).
	Config string
	Repeat int
	// App is what the app under test was pushed as; nil for a url: variant.
	App *AppConfig
}

// AppConfig is an app under test as pushed, after the spec's env and matrix.
type AppConfig struct {
	// Manifest is the manifest applied to the space.
	Manifest string
	// Env is the app's environment, per-run secrets redacted.
	Env map[string]string
	// MemoryMB is the web process's memory (0: the foundation's default); Instances
	// its instance count.
	MemoryMB, Instances int
}

// AddRunVariant records what the generators of a variant run as and send, and what
// its app under test was pushed as.
func (s *Store) AddRunVariant(ctx context.Context, v RunVariant) error {
	listed := v.Listed
	if listed == "" {
		listed = v.Variant
	}
	config, repeat := v.Config, max(v.Repeat, 1)
	if config == "" {
		config = v.Variant
	}
	matrix := v.Matrix
	if matrix == nil {
		matrix = map[string]string{}
	}
	var (
		manifest      string
		env           = map[string]string{}
		memory, insts *int
	)
	if a := v.App; a != nil {
		manifest, insts = a.Manifest, &a.Instances
		if a.Env != nil {
			env = a.Env
		}
		if a.MemoryMB > 0 {
			memory = &a.MemoryMB
		}
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO run_variants (run_id, variant, generator_app, app_name, app_guid, target_url, workload,
		listed, matrix, app_manifest, app_env, app_memory_mb, app_instances, config, repeat)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15)
		ON CONFLICT (run_id, variant) DO NOTHING`, // a retry after an answer lost in an outage
		v.RunID, v.Variant, v.GeneratorApp, v.AppName, v.AppGUID, v.TargetURL, v.Workload, listed, matrix, manifest, env, memory, insts,
		config, repeat)
	if err != nil {
		return fmt.Errorf("record variant %s: %w", v.Variant, err)
	}
	return nil
}

// Now is the database's clock. Step windows are on it, so instances on hosts with
// different clocks still change steps together.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	var t time.Time
	if err := s.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&t); err != nil {
		return t, fmt.Errorf("read database clock: %w", err)
	}
	return t, nil
}

// Assignment is what a generator instance of an app must do now: the newest running
// run for the app and, when one is planned and not over, its current step.
type Assignment struct {
	// RunVariant carries Repeat; the other fields of the variant's configuration are
	// not read.
	RunVariant
	TraceTag uint32
	Epoch    time.Time
	// Step is nil between steps.
	Step *Step
	// Live is the number of the variant's instances alive (heartbeat in the last 3 s).
	Live int
	// DBNow is the database's clock when it answered.
	DBNow time.Time
}

// Assignment returns the work for instances of app, or nil when no run wants it. The
// repeats of a variant share its generator app, and a repeat's row is added when its
// ramp begins: of the newest running run's variants with app, the latest repeat is the
// one to follow.
func (s *Store) Assignment(ctx context.Context, app string) (*Assignment, error) {
	a := &Assignment{}
	var (
		tag                     int64
		idx, instances, users   *int
		rate                    *float64
		start, warm, ends, done *time.Time
	)
	err := s.pool.QueryRow(ctx, `
SELECT rv.run_id, rv.variant, rv.generator_app, rv.target_url, rv.workload, rv.repeat, r.trace_tag, r.epoch,
       st.idx, st.instances, st.users, st.rate, st.started_at, st.warmup_until, st.ends_at, st.ended_at,
       (SELECT count(*) FROM workers w WHERE w.run_id = rv.run_id AND w.variant = rv.variant
          AND w.stopped_at IS NULL AND w.heartbeat_at > clock_timestamp() - interval '3 seconds'),
       clock_timestamp()
FROM run_variants rv
JOIN runs r ON r.id = rv.run_id AND r.status = 'running'
LEFT JOIN LATERAL (
    SELECT * FROM steps s WHERE s.run_id = rv.run_id AND s.variant = rv.variant
       AND s.ends_at > clock_timestamp() AND s.ended_at IS NULL
    ORDER BY s.idx DESC LIMIT 1) st ON true
WHERE rv.generator_app = $1
ORDER BY r.started_at DESC, rv.repeat DESC LIMIT 1`, app).Scan(
		&a.RunID, &a.Variant, &a.GeneratorApp, &a.TargetURL, &a.Workload, &a.Repeat, &tag, &a.Epoch,
		&idx, &instances, &users, &rate, &start, &warm, &ends, &done, &a.Live, &a.DBNow)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read assignment of %s: %w", app, err)
	}
	a.TraceTag = uint32(tag)
	if idx != nil {
		a.Step = &Step{RunID: a.RunID, Variant: a.Variant, Index: *idx, Instances: *instances, Users: *users,
			Started: *start, WarmupUntil: *warm, Ends: *ends}
		if rate != nil {
			a.Step.Rate = *rate
		}
	}
	return a, nil
}

// RunStatus reads the status of a run.
func (s *Store) RunStatus(ctx context.Context, id string) (RunStatus, error) {
	var st RunStatus
	if err := s.pool.QueryRow(ctx, `SELECT status FROM runs WHERE id = $1`, id).Scan(&st); err != nil {
		return "", fmt.Errorf("read status of run %s: %w", id, err)
	}
	return st, nil
}

// WorkerCounters are what a worker reports with each heartbeat.
type WorkerCounters struct {
	Sent, Stored, Spilled, Missed, Dropped uint64
}

// Heartbeat marks worker id alive and records its counters.
func (s *Store) Heartbeat(ctx context.Context, id int32, c WorkerCounters) error {
	_, err := s.pool.Exec(ctx, `UPDATE workers SET heartbeat_at = statement_timestamp(), sent = $2, stored = $3, spilled = $4, missed = $5, dropped = $6 WHERE id = $1`,
		id, int64(c.Sent), int64(c.Stored), int64(c.Spilled), int64(c.Missed), int64(c.Dropped))
	if err != nil {
		return fmt.Errorf("heartbeat of worker %d: %w", id, err)
	}
	return nil
}

// JoinStep records that worker id began step at joined (DB clock).
func (s *Store) JoinStep(ctx context.Context, id int32, st *Step, joined time.Time, late bool) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO worker_steps (worker_id, step, joined_at, skew_us, late_join) VALUES ($1,$2,$3,$4,$5)
		ON CONFLICT DO NOTHING`, id, st.Index, joined, joined.Sub(st.Started).Microseconds(), late)
	if err != nil {
		return fmt.Errorf("worker %d joins step %d: %w", id, st.Index+1, err)
	}
	return nil
}

// FinishStep records that every sample worker id took in step is stored.
func (s *Store) FinishStep(ctx context.Context, id int32, step int, sent, missed uint64) error {
	_, err := s.pool.Exec(ctx, `UPDATE worker_steps SET sent = $3, missed = $4, done_at = statement_timestamp() WHERE worker_id = $1 AND step = $2`,
		id, step, int64(sent), int64(missed))
	if err != nil {
		return fmt.Errorf("worker %d finishes step %d: %w", id, step+1, err)
	}
	return nil
}

// StepProgress is how far the workers of one step are.
type StepProgress struct {
	Joined, Done int
	// Stopped counts workers that joined, are not done and stopped, or went silent and
	// were replaced (replacedSQL: their container is gone): they will not store more of
	// the step's samples.
	Stopped int
}

// StepProgress reports how many workers joined step idx of variant and how many stored
// all its samples.
func (s *Store) StepProgress(ctx context.Context, runID, variant string, idx int) (StepProgress, error) {
	var p StepProgress
	err := s.pool.QueryRow(ctx, `
SELECT count(*), count(ws.done_at),
       count(*) FILTER (WHERE ws.done_at IS NULL AND (w.stopped_at IS NOT NULL
         OR (w.heartbeat_at < clock_timestamp() - interval '10 seconds' AND `+replacedSQL+`)))
FROM worker_steps ws JOIN workers w ON w.id = ws.worker_id
WHERE w.run_id = $1 AND w.variant = $2 AND ws.step = $3`, runID, variant, idx).Scan(&p.Joined, &p.Done, &p.Stopped)
	if err != nil {
		return p, fmt.Errorf("progress of step %d of %s: %w", idx+1, variant, err)
	}
	return p, nil
}

// StepLoad is what became of the generator instances that joined a step.
type StepLoad struct {
	// Joined counts the instances that joined the step; Left those of them that
	// stopped before its planned end (or, when asked, went silent before it).
	Joined, Left int
	// Ended, when every instance that joined left before the planned end, is when the
	// last of them did: the step's load ended then. Zero otherwise.
	Ended time.Time
}

// StepLoad reports how many instances that joined step idx of variant left before its
// planned end, and when its load ended if all of them did. An instance left when it
// stopped, unless it was replaced (replacedSQL: evacuated or restarted, its index
// carries on); with silent, also when it has sent no heartbeat for 10 s and has not stored
// the step's samples (its last heartbeat is when it left: it died, or was killed before
// it could say so). silent is for a database that has been reachable for a while: during
// an outage nobody heartbeats. An instance done with the step did not leave it, even
// when its heartbeats lag: through a relay that lost the database they resumed after
// its step's samples were stored, and the step was taken as lost.
func (s *Store) StepLoad(ctx context.Context, runID, variant string, idx int, silent bool) (StepLoad, error) {
	var (
		l     StepLoad
		ended *time.Time
	)
	err := s.pool.QueryRow(ctx, `
WITH gone AS (
  SELECT st.ends_at, CASE WHEN NOT `+replacedSQL+` THEN least(w.stopped_at,
           CASE WHEN $4 AND ws.done_at IS NULL AND w.heartbeat_at < clock_timestamp() - interval '10 seconds' THEN w.heartbeat_at END) END AS at
  FROM worker_steps ws JOIN workers w ON w.id = ws.worker_id
  JOIN steps st ON st.run_id = w.run_id AND st.variant = w.variant AND st.idx = ws.step
  WHERE w.run_id = $1 AND w.variant = $2 AND ws.step = $3)
SELECT count(*), count(*) FILTER (WHERE at < ends_at),
       CASE WHEN count(*) > 0 AND bool_and(coalesce(at < ends_at, false)) THEN max(at) END
FROM gone`, runID, variant, idx, silent).Scan(&l.Joined, &l.Left, &ended)
	if err != nil {
		return l, fmt.Errorf("generator instances of step %d of %s: %w", idx+1, variant, err)
	}
	if ended != nil {
		l.Ended = *ended
	}
	return l, nil
}

// LiveWorkers counts a variant's instances that sent a heartbeat in the last 3 s and
// have not stopped.
func (s *Store) LiveWorkers(ctx context.Context, runID, variant string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM workers WHERE run_id = $1 AND variant = $2
		AND stopped_at IS NULL AND heartbeat_at > clock_timestamp() - interval '3 seconds'`, runID, variant).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count live workers of %s: %w", variant, err)
	}
	return n, nil
}
