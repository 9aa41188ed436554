package resultsdb

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Sources of container metrics (container_metrics.source).
const (
	// SourceStats rows are CC process stats, one per instance per poll, at when the
	// poll fetched them.
	SourceStats = "stats"
	// SourceLogCache rows are Log Cache's container metric gauges, one per instance
	// per envelope, at the envelope's own timestamp (when the cell sampled them).
	SourceLogCache = "logcache"
)

// ContainerMetric is one instance's usage at one time: a poll of its process stats, or
// a reading of its container metrics.
type ContainerMetric struct {
	RunID string
	// At is when the stats were fetched (SourceStats) or sampled (SourceLogCache).
	At               time.Time
	AppName, AppGUID string
	ProcessType      string
	InstanceIndex    int
	State            string
	// CPU and CPUEntitlement are fractions of one core; nil when CC reported none
	// (usage {} while log-cache is unavailable, or an instance that is not running),
	// and on SourceLogCache rows, whose counters give the rate between two readings.
	CPU, CPUEntitlement *float64
	MemBytes, DiskBytes *int64
	MemQuotaBytes       *int64
	Host                string
	IsolationSegment    string
	UptimeSeconds       *int64
	// CPUTimeNS, EntitlementNS and ContainerAgeNS are the container's cumulative
	// counters, in nanoseconds since it started: CPU time used (Log Cache's
	// absolute_usage), CPU time it was entitled to (absolute_entitlement) and its age
	// (container_age); nil where unknown (CC stats carry none). An instance's CPU in
	// cores between two readings is ΔCPUTimeNS / ΔAt.
	CPUTimeNS, EntitlementNS, ContainerAgeNS *int64
	// CPUWaitNS is the container's cumulative run-queue wait in nanoseconds: how long
	// its threads were ready to run but waited for a CPU (the local foundation's
	// absolute_cpu_wait gauge); nil where unknown (Diego sends no such gauge).
	CPUWaitNS *int64
	// Source is SourceStats or SourceLogCache; "" stores SourceStats.
	Source string
}

// InsertContainerMetrics stores rows with COPY.
func (s *Store) InsertContainerMetrics(ctx context.Context, rows []ContainerMetric) error {
	if len(rows) == 0 {
		return nil
	}
	_, err := s.pool.CopyFrom(ctx, pgx.Identifier{"container_metrics"},
		[]string{"run_id", "at", "app_name", "app_guid", "process_type", "instance_index", "state", "cpu", "cpu_entitlement",
			"mem_bytes", "mem_quota_bytes", "disk_bytes", "host", "isolation_segment", "uptime_s",
			"cpu_time_ns", "entitlement_ns", "container_age_ns", "cpu_wait_ns", "source"},
		pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
			r := &rows[i]
			source := r.Source
			if source == "" {
				source = SourceStats
			}
			return []any{r.RunID, r.At, r.AppName, r.AppGUID, r.ProcessType, r.InstanceIndex, r.State, r.CPU, r.CPUEntitlement,
				r.MemBytes, r.MemQuotaBytes, r.DiskBytes, r.Host, r.IsolationSegment, r.UptimeSeconds,
				r.CPUTimeNS, r.EntitlementNS, r.ContainerAgeNS, r.CPUWaitNS, source}, nil
		}))
	if err != nil {
		return fmt.Errorf("store container metrics: %w", err)
	}
	return nil
}
