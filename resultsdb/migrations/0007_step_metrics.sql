-- Schema v7: step metrics, and CPU from cumulative counters.
--
-- A step's figures are computed once, after its end is recorded, from the raw rows, and
-- stored: the progress line, the stop conditions, the checks, the exports and the report
-- all read these rows, so they agree to the request. Steps stay 0-based in the database
-- (steps.idx, samples.step); everything a person reads numbers them from 1.

CREATE TABLE step_metrics (
    run_id          text             NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    variant         text             NOT NULL,
    step            smallint         NOT NULL,  -- steps.idx (0-based)
    seconds         double precision NOT NULL,  -- measured window: warm-up end to step end
    count           bigint           NOT NULL,  -- requests intended in the window
    errors          bigint           NOT NULL,  -- no response, or status >= 400
    errors_by_class jsonb            NOT NULL,  -- {"timeout": n, "http_503": n, ...}
    bytes           bigint           NOT NULL,  -- response body bytes
    throughput      double precision NOT NULL,  -- count / seconds
    mean_us         double precision NOT NULL,
    p50_us          bigint           NOT NULL,  -- observed values (percentile_disc)
    p90_us          bigint           NOT NULL,
    p99_us          bigint           NOT NULL,
    p999_us         bigint           NOT NULL,
    min_us          bigint           NOT NULL,
    max_us          bigint           NOT NULL,
    instances       integer          NOT NULL,  -- generator instances asked for
    instances_seen  integer          NOT NULL,  -- most generator instances seen alive
    users           integer          NOT NULL,  -- users per instance (closed loop), else 0
    offered_rate    double precision,           -- open loop: requests per second in all
    missed          bigint           NOT NULL,  -- open-loop sends due but never sent
    send_lag_mean_us double precision NOT NULL, -- generators' own delay: start - intended
    send_lag_p99_us bigint           NOT NULL,
    stalled_ms      bigint           NOT NULL,  -- longest time the target answered (almost) nothing
    omitted         bigint           NOT NULL,  -- closed loop: requests not sent during stalls
    app_timed       bigint           NOT NULL,  -- requests with app timings (flushed at the step's end)
    app_total_us    double precision,           -- their mean app time
    app_pool_wait_us double precision,          -- their mean wait for a DB connection
    app_query_us    double precision,           -- their mean time in queries
    db_connections  integer,                    -- most connections to the apps' database server in the window
    db_max_connections integer,                 -- its max_connections; both NULL when not watched
    computed_at     timestamptz      NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, variant, step)
);

-- One row per step and app (the variant's app under test, its generator app): CPU in
-- cores, memory, and what the CPU figure rests on.
CREATE TABLE step_app_metrics (
    run_id          text             NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    variant         text             NOT NULL,
    step            smallint         NOT NULL,
    app_name        text             NOT NULL,
    role            text             NOT NULL CHECK (role IN ('app', 'generator')),
    instances       integer          NOT NULL,  -- distinct instances with usage in the window
    cpu_source      text             NOT NULL,  -- 'counters' (cumulative CPU time), 'stats' (sampled), '' (none)
    cpu_points      integer          NOT NULL,  -- readings the CPU figure rests on
    cpu_covered     double precision NOT NULL,  -- share of the window those readings span (0..1)
    cpu_mean_cores  double precision,           -- per instance, over the window
    cpu_max_cores   double precision,           -- the busiest instance
    cpu_total_cores double precision,           -- all instances together
    mem_mean_bytes  double precision,           -- per instance
    mem_max_bytes   bigint,
    mem_quota_bytes bigint,
    cores_available double precision,           -- per instance: the cores of its cell, where known
    PRIMARY KEY (run_id, variant, step, app_name)
);

-- Cumulative counters where the platform has them (Log Cache's absolute_usage,
-- absolute_entitlement and container_age gauges; the local foundation's cgroups): a
-- step's CPU is then exact from two readings instead of resting on sampled rates.
ALTER TABLE container_metrics
    ADD COLUMN cpu_time_ns      bigint,         -- CPU time used since the container started
    ADD COLUMN entitlement_ns   bigint,         -- CPU time the container was entitled to
    ADD COLUMN container_age_ns bigint,
    ADD COLUMN source           text NOT NULL DEFAULT 'stats';  -- 'stats' (CC) or 'logcache'

-- A finding (run_events.kind 'check') names its check and carries its evidence, the
-- figures its rule judged, so a report can show them beside the message.
ALTER TABLE run_events
    ADD COLUMN check_name text,                 -- e.g. 'generator-saturation'; NULL for other kinds
    ADD COLUMN evidence   jsonb;                -- {"send_lag_mean_ms": 1.2, ...}

-- Connections to the apps' database server, where the run can reach it: a database plan
-- capped at 100 connections capped the study's throughput.
CREATE TABLE db_connections (
    id              bigserial   PRIMARY KEY,
    run_id          text        NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    at              timestamptz NOT NULL,
    service         text        NOT NULL,       -- the service instance watched
    in_use          integer     NOT NULL,       -- client connections to the server, all databases
    to_database     integer     NOT NULL,       -- of them to the service's database
    max_connections integer     NOT NULL        -- the server's max_connections
);
CREATE INDEX db_connections_run ON db_connections (run_id, at);
