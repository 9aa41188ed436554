package resultsdb

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// LayerOrder counts, for one step, the requests whose layers contradict each other: an
// inner layer that took longer than the one around it. The client's time is its own
// response time (latency minus send lag: from when the request really went out), the
// router's its response_time, the app's its total.
type LayerOrder struct {
	Variant string
	Step    int // 0-based
	// AppAndRouter counts requests with both app and router times, AppOverRouter those
	// whose app time exceeds the router's, by at most AppOverRouterMax.
	AppAndRouter, AppOverRouter int64
	AppOverRouterMax            time.Duration
	// RouterAndClient counts requests with a router time, RouterOverClient those whose
	// router time exceeds the client's, by at most RouterOverClientMax.
	RouterAndClient, RouterOverClient int64
	RouterOverClientMax               time.Duration
}

// AppOverRouterShare is AppOverRouter relative to AppAndRouter (0 without any).
func (o LayerOrder) AppOverRouterShare() float64 { return share(o.AppOverRouter, o.AppAndRouter) }

// RouterOverClientShare is RouterOverClient relative to RouterAndClient (0 without any).
func (o LayerOrder) RouterOverClientShare() float64 {
	return share(o.RouterOverClient, o.RouterAndClient)
}

func share(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

const layerOrderSQL = `
SELECT st.variant, st.idx,
       count(*) FILTER (WHERE a.total_us IS NOT NULL AND r.response_time_us IS NOT NULL),
       count(*) FILTER (WHERE a.total_us > r.response_time_us),
       coalesce(max(a.total_us - r.response_time_us) FILTER (WHERE a.total_us > r.response_time_us), 0)::bigint,
       count(*) FILTER (WHERE r.response_time_us IS NOT NULL AND s.status > 0),
       count(*) FILTER (WHERE r.response_time_us > s.latency_us - s.start_delay_us AND s.status > 0),
       coalesce(max(r.response_time_us - (s.latency_us - s.start_delay_us))
                FILTER (WHERE r.response_time_us > s.latency_us - s.start_delay_us AND s.status > 0), 0)::bigint
FROM steps st
JOIN workers w ON w.run_id = st.run_id AND w.variant = st.variant
JOIN samples s ON s.worker_id = w.id AND s.step = st.idx AND NOT s.warmup
LEFT JOIN router_requests r ON r.run_id = st.run_id AND r.worker_id = s.worker_id AND r.seq = s.seq
LEFT JOIN app_timings a ON a.run_id = st.run_id AND a.worker_id = s.worker_id AND a.seq = s.seq
WHERE st.run_id = $1
GROUP BY st.variant, st.idx, st.started_at
HAVING count(r.trace_id) > 0 OR count(a.trace_id) > 0
ORDER BY st.started_at, st.variant, st.idx`

// LayerOrders returns the layer order of every step of the run that has router or app
// timings, in the order the steps ran. Requests without a response are left out of the
// client comparison: their client time is the timeout, not a response time.
func (s *Store) LayerOrders(ctx context.Context, runID string) ([]LayerOrder, error) {
	// The pull just stored the run's router requests: without fresh statistics the
	// planner may join them to the samples without their index.
	if _, err := s.pool.Exec(ctx, `ANALYZE router_requests, app_timings`); err != nil {
		return nil, fmt.Errorf("compare the layers of run %s: analyze: %w", runID, err)
	}
	rows, err := s.pool.Query(ctx, layerOrderSQL, runID)
	if err != nil {
		return nil, fmt.Errorf("compare the layers of run %s: %w", runID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (LayerOrder, error) {
		var (
			o          LayerOrder
			appMax, rc int64
		)
		err := r.Scan(&o.Variant, &o.Step, &o.AppAndRouter, &o.AppOverRouter, &appMax, &o.RouterAndClient, &o.RouterOverClient, &rc)
		o.AppOverRouterMax, o.RouterOverClientMax = us(appMax), us(rc)
		return o, err
	})
	if err != nil {
		return nil, fmt.Errorf("compare the layers of run %s: %w", runID, err)
	}
	return out, nil
}
