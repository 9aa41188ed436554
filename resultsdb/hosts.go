package resultsdb

import (
	"context"
	"fmt"
)

// InstanceHost is where one app instance ran.
type InstanceHost struct {
	App   string
	Index int
	Host  string
}

// latestHostsSQL reads each app's latest poll of CC's process stats. A poll stores all
// instances of an app at one time, so the rows at the app's greatest time are that
// poll. Log Cache rows are left out: each is one instance's reading at its own time,
// without state or host.
const latestHostsSQL = `
WITH latest AS (
    SELECT app_name, max(at) AS at FROM container_metrics
    WHERE run_id = $1 AND source = 'stats' AND ($2::text[] IS NULL OR app_name = ANY($2))
    GROUP BY app_name)
SELECT DISTINCT cm.app_name, cm.instance_index, cm.host
FROM container_metrics cm JOIN latest l ON l.app_name = cm.app_name AND l.at = cm.at
WHERE cm.run_id = $1 AND cm.source = 'stats' AND cm.state = 'RUNNING'
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
