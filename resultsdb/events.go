package resultsdb

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Event is one thing that happened during a run besides the samples: a check that
// tripped, a scale seen or done, why the ramp stopped. Kind is free text ("check",
// "scale", "stop", "info"); Level is "info", "warn" or "fail" (the database refuses
// others).
type Event struct {
	RunID string
	// At is when it happened; the zero time means now, on the database's clock.
	At time.Time
	// Variant is "" for an event of the whole run.
	Variant string
	// Step is the 0-based ramp step, -1 when the event belongs to none. Any negative
	// value is stored as none and read back as -1.
	Step    int
	Kind    string
	Level   string
	Message string
	// Check names the check of a finding (kind "check"), and Evidence holds the figures
	// it judged (stored as JSON); empty and nil for other events.
	Check    string
	Evidence map[string]any
}

// AddEvent stores e after every event already stored for its run.
func (s *Store) AddEvent(ctx context.Context, e Event) error {
	var at *time.Time
	if !e.At.IsZero() {
		at = &e.At
	}
	var variant *string
	if e.Variant != "" {
		variant = &e.Variant
	}
	var step *int
	if e.Step >= 0 {
		step = &e.Step
	}
	var check *string
	if e.Check != "" {
		check = &e.Check
	}
	var evidence any
	if e.Evidence != nil {
		evidence = e.Evidence // pgx writes a map as jsonb
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO run_events (run_id, at, variant, step, kind, level, message, check_name, evidence)
		VALUES ($1, coalesce($2, now()), $3, $4, $5, $6, $7, $8, $9)`,
		e.RunID, at, variant, step, e.Kind, e.Level, e.Message, check, evidence)
	if err != nil {
		return fmt.Errorf("add %s event to run %s: %w", e.Kind, e.RunID, err)
	}
	return nil
}

// AddEventOnce records e, whose At must be set, unless the run has an event of the same
// time, kind and message already: so that trying again after an insert whose answer was
// lost (the database or the way to it went away meanwhile) records the event once.
func (s *Store) AddEventOnce(ctx context.Context, e Event) error {
	if e.At.IsZero() {
		return fmt.Errorf("add %s event to run %s once: the event has no time", e.Kind, e.RunID)
	}
	var recorded bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM run_events WHERE run_id = $1 AND at = $2 AND kind = $3 AND message = $4)`,
		e.RunID, e.At, e.Kind, e.Message).Scan(&recorded)
	if err != nil {
		return fmt.Errorf("add %s event to run %s: %w", e.Kind, e.RunID, err)
	}
	if recorded {
		return nil
	}
	return s.AddEvent(ctx, e)
}

// Events returns the run's events in the order they were added; none is not an error.
func (s *Store) Events(ctx context.Context, runID string) ([]Event, error) {
	rows, err := s.pool.Query(ctx, `SELECT at, coalesce(variant, ''), coalesce(step, -1), kind, level, message,
		coalesce(check_name, ''), evidence FROM run_events WHERE run_id = $1 ORDER BY id`, runID)
	if err != nil {
		return nil, fmt.Errorf("read events of run %s: %w", runID, err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		e := Event{RunID: runID}
		if err := rows.Scan(&e.At, &e.Variant, &e.Step, &e.Kind, &e.Level, &e.Message, &e.Check, &e.Evidence); err != nil {
			return nil, fmt.Errorf("read events of run %s: %w", runID, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read events of run %s: %w", runID, err)
	}
	return out, nil
}

// DeleteFindings removes the run's findings (events of kind "check") of the named
// checks, so that judging them again does not repeat them.
func (s *Store) DeleteFindings(ctx context.Context, runID string, checks ...string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM run_events WHERE run_id = $1 AND kind = 'check' AND check_name = ANY($2)`, runID, checks); err != nil {
		return fmt.Errorf("delete findings of run %s: %w", runID, err)
	}
	return nil
}

// ErrStepNotFound is returned when a run has no step of the given variant and index.
var ErrStepNotFound = errors.New("step not found")

// SetInstancesSeen records that n generator instances were alive during the step. The
// stored value only grows: the engine may report every poll, and a step's figure is the
// most instances it saw at once.
func (s *Store) SetInstancesSeen(ctx context.Context, runID, variant string, step, n int) error {
	if n < 0 {
		return fmt.Errorf("set instances seen in step %d of %s: negative count %d", step+1, variant, n)
	}
	// greatest ignores NULL, so the first report sets the value.
	tag, err := s.pool.Exec(ctx, `UPDATE steps SET instances_seen = greatest(instances_seen, $4)
		WHERE run_id = $1 AND variant = $2 AND idx = $3`, runID, variant, step, n)
	if err != nil {
		return fmt.Errorf("set instances seen in step %d of %s: %w", step+1, variant, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("set instances seen in step %d of %s in run %s: %w", step+1, variant, runID, ErrStepNotFound)
	}
	return nil
}
