package resultsdb

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ContainerMetric is one instance's process stats at one poll.
type ContainerMetric struct {
	RunID            string
	At               time.Time // when the stats were fetched
	AppName, AppGUID string
	ProcessType      string
	InstanceIndex    int
	State            string
	// CPU and CPUEntitlement are fractions of one core; nil when CC reported none
	// (usage {} while log-cache is unavailable, or an instance that is not running).
	CPU, CPUEntitlement *float64
	MemBytes, DiskBytes *int64
	MemQuotaBytes       *int64
	Host                string
	IsolationSegment    string
	UptimeSeconds       *int64
}

// InsertContainerMetrics stores one poll's rows with COPY.
func (s *Store) InsertContainerMetrics(ctx context.Context, rows []ContainerMetric) error {
	if len(rows) == 0 {
		return nil
	}
	_, err := s.pool.CopyFrom(ctx, pgx.Identifier{"container_metrics"},
		[]string{"run_id", "at", "app_name", "app_guid", "process_type", "instance_index", "state", "cpu", "cpu_entitlement",
			"mem_bytes", "mem_quota_bytes", "disk_bytes", "host", "isolation_segment", "uptime_s"},
		pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
			r := &rows[i]
			return []any{r.RunID, r.At, r.AppName, r.AppGUID, r.ProcessType, r.InstanceIndex, r.State, r.CPU, r.CPUEntitlement,
				r.MemBytes, r.MemQuotaBytes, r.DiskBytes, r.Host, r.IsolationSegment, r.UptimeSeconds}, nil
		}))
	if err != nil {
		return fmt.Errorf("store container metrics: %w", err)
	}
	return nil
}
