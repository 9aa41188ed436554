package resultsdb

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// AppMetrics sums up one app's container metrics over a window, typically a ramp step.
// Rows without usage (an instance that was down, or CC had no metrics yet) count for
// Hosts only. An instance is a process type and index: one app may run several
// processes.
type AppMetrics struct {
	App string
	// Instances is how many distinct instances reported usage in the window.
	Instances int
	// Polls is how many polls reported usage for at least one instance: the number of
	// points the figures below rest on. 0 means the figures are all zero and unknown.
	Polls int
	// MeanCPU and MaxCPU are per instance and poll, in fractions of one core.
	MeanCPU, MaxCPU float64
	// MeanEntitlement and MaxEntitlement are CPU used relative to the instance's CPU
	// entitlement (1 = exactly the entitlement); nil when no row had it.
	MeanEntitlement, MaxEntitlement *float64
	// MeanMemBytes is the mean memory in use per instance and poll.
	MeanMemBytes float64
	// Hosts are the distinct, non-empty hosts of instances seen RUNNING, sorted.
	Hosts []string
}

const stepMetricsSQL = `
SELECT app_name,
       count(DISTINCT (process_type, instance_index)) FILTER (WHERE cpu IS NOT NULL),
       count(DISTINCT at) FILTER (WHERE cpu IS NOT NULL),
       coalesce(avg(cpu), 0)::float8,
       coalesce(max(cpu), 0)::float8,
       avg(cpu_entitlement)::float8,
       max(cpu_entitlement)::float8,
       coalesce(avg(mem_bytes), 0)::float8,
       coalesce(array_agg(DISTINCT host ORDER BY host) FILTER (WHERE state = 'RUNNING' AND host <> ''), '{}')
FROM container_metrics
WHERE run_id = $1 AND at BETWEEN $2 AND $3 AND ($4::text[] IS NULL OR app_name = ANY($4))
GROUP BY app_name
ORDER BY app_name`

// StepMetrics sums up the container metrics of the run polled at a time in [from, to],
// both ends included, per app. With apps given, the result has one entry per distinct
// name in apps, in their order, zero (Polls 0) for an app without rows in the window;
// with none, one entry per app with rows, sorted by name.
func (s *Store) StepMetrics(ctx context.Context, runID string, from, to time.Time, apps []string) ([]AppMetrics, error) {
	rows, err := s.pool.Query(ctx, stepMetricsSQL, runID, from, to, appFilter(apps))
	if err != nil {
		return nil, fmt.Errorf("sum up container metrics of run %s: %w", runID, err)
	}
	defer rows.Close()
	var found []AppMetrics
	for rows.Next() {
		var m AppMetrics
		if err := rows.Scan(&m.App, &m.Instances, &m.Polls, &m.MeanCPU, &m.MaxCPU, &m.MeanEntitlement, &m.MaxEntitlement,
			&m.MeanMemBytes, &m.Hosts); err != nil {
			return nil, fmt.Errorf("sum up container metrics of run %s: %w", runID, err)
		}
		found = append(found, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sum up container metrics of run %s: %w", runID, err)
	}
	if len(apps) == 0 {
		return found, nil
	}
	out := make([]AppMetrics, 0, len(apps))
	for _, app := range apps {
		if slices.ContainsFunc(out, func(m AppMetrics) bool { return m.App == app }) {
			continue
		}
		m := AppMetrics{App: app, Hosts: []string{}}
		if i := slices.IndexFunc(found, func(m AppMetrics) bool { return m.App == app }); i >= 0 {
			m = found[i]
		}
		out = append(out, m)
	}
	return out, nil
}

// InstanceHost is where one app instance ran.
type InstanceHost struct {
	App   string
	Index int
	Host  string
}

// latestHostsSQL reads each app's latest poll. A poll stores all instances of an app at
// one time, so the rows at the app's greatest time are that poll.
const latestHostsSQL = `
WITH latest AS (
    SELECT app_name, max(at) AS at FROM container_metrics
    WHERE run_id = $1 AND ($2::text[] IS NULL OR app_name = ANY($2))
    GROUP BY app_name)
SELECT DISTINCT cm.app_name, cm.instance_index, cm.host
FROM container_metrics cm JOIN latest l ON l.app_name = cm.app_name AND l.at = cm.at
WHERE cm.run_id = $1 AND cm.state = 'RUNNING'
ORDER BY cm.app_name, cm.instance_index, cm.host`

// LatestHosts returns, per app, the instances RUNNING at the app's latest poll and their
// hosts (as CC reports them; "" when it did not say), sorted by index. An app with no
// poll, or none running at its latest, has no entry. With no apps given, every app of
// the run is read.
func (s *Store) LatestHosts(ctx context.Context, runID string, apps []string) (map[string][]InstanceHost, error) {
	rows, err := s.pool.Query(ctx, latestHostsSQL, runID, appFilter(apps))
	if err != nil {
		return nil, fmt.Errorf("read latest hosts of run %s: %w", runID, err)
	}
	defer rows.Close()
	out := map[string][]InstanceHost{}
	for rows.Next() {
		var h InstanceHost
		if err := rows.Scan(&h.App, &h.Index, &h.Host); err != nil {
			return nil, fmt.Errorf("read latest hosts of run %s: %w", runID, err)
		}
		out[h.App] = append(out[h.App], h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read latest hosts of run %s: %w", runID, err)
	}
	return out, nil
}

// appFilter is the query argument selecting apps: NULL for all of them.
func appFilter(apps []string) any {
	if len(apps) == 0 {
		return nil
	}
	return apps
}
