-- Results schema v1. Every figure a report shows is derivable by SQL from these rows.
-- Times: timestamptz for wall-clock events; *_us columns are microseconds.

CREATE TABLE runs (
    id          text PRIMARY KEY,              -- generated: YYYYMMDD-HHMMSS-xxxx (UTC)
    name        text        NOT NULL,          -- spec name
    spec_file   text        NOT NULL,
    spec        text        NOT NULL,          -- the spec as written, for reproducibility
    trace_tag   bigint      NOT NULL,          -- first 4 bytes of every trace id of the run
    status      text        NOT NULL DEFAULT 'running'
                CHECK (status IN ('running', 'completed', 'stopped', 'aborted', 'failed')),
    reason      text        NOT NULL DEFAULT '',
    epoch       timestamptz NOT NULL,          -- samples' *_us offsets count from here
    started_at  timestamptz NOT NULL DEFAULT now(),
    ended_at    timestamptz
);

CREATE TABLE steps (
    run_id       text        NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    variant      text        NOT NULL,
    idx          smallint    NOT NULL,         -- 0-based ramp step
    instances    integer     NOT NULL,         -- generator instances asked for
    users        integer     NOT NULL,         -- users per instance (closed loop)
    started_at   timestamptz NOT NULL,
    warmup_until timestamptz NOT NULL,         -- samples before this are tagged warm-up
    ended_at     timestamptz,
    stop_reason  text        NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, variant, idx)
);

CREATE TABLE workers (
    id             serial PRIMARY KEY,         -- part of every trace id; compact sample key
    run_id         text        NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    variant        text        NOT NULL,
    app_name       text        NOT NULL,
    instance_index integer     NOT NULL,
    instance_guid  text        NOT NULL DEFAULT '',
    host           text        NOT NULL DEFAULT '',
    started_at     timestamptz NOT NULL DEFAULT now(),
    heartbeat_at   timestamptz NOT NULL DEFAULT now(),
    stopped_at     timestamptz,
    dropped        bigint      NOT NULL DEFAULT 0   -- samples lost (buffer full); never silent
);
CREATE INDEX workers_run ON workers (run_id);

-- One row per request. Keyed by (worker_id, seq): no per-row run id or text.
CREATE TABLE samples (
    worker_id      integer  NOT NULL,
    seq            bigint   NOT NULL,
    step           smallint NOT NULL,
    request        smallint NOT NULL,          -- index into the workload's request mix
    intended_us    bigint   NOT NULL,          -- µs since runs.epoch the request was due
    start_delay_us integer  NOT NULL,          -- actual start - intended
    latency_us     integer  NOT NULL,          -- end - intended
    status         smallint NOT NULL,          -- HTTP status, 0 = no response
    bytes          integer  NOT NULL,          -- response body bytes
    error          smallint NOT NULL,          -- 0 none, 1 other, 2 timeout, 3 refused, 4 reset, 5 tls, 6 dns, 7 canceled
    warmup         boolean  NOT NULL,
    PRIMARY KEY (worker_id, seq)
);

CREATE TABLE container_metrics (
    run_id            text        NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    at                timestamptz NOT NULL,    -- when the stats were fetched
    app_name          text        NOT NULL,
    app_guid          text        NOT NULL,
    process_type      text        NOT NULL,
    instance_index    integer     NOT NULL,
    state             text        NOT NULL,
    cpu               double precision,        -- fraction of one core
    cpu_entitlement   double precision,
    mem_bytes         bigint,
    mem_quota_bytes   bigint,
    disk_bytes        bigint,
    host              text        NOT NULL DEFAULT '',
    isolation_segment text        NOT NULL DEFAULT '',
    uptime_s          bigint
);
CREATE INDEX container_metrics_run ON container_metrics (run_id, at);

CREATE TABLE router_requests (
    run_id           text        NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    trace_id         uuid        NOT NULL,
    at               timestamptz NOT NULL,
    app_guid         text        NOT NULL DEFAULT '',
    app_index        integer,
    status           smallint,
    response_time_us bigint,
    gorouter_time_us bigint,
    PRIMARY KEY (run_id, trace_id)
);

CREATE TABLE app_timings (
    run_id         text        NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    trace_id       uuid        NOT NULL,
    app_name       text        NOT NULL,
    instance_index integer     NOT NULL,
    at             timestamptz NOT NULL,
    pool_wait_us   bigint      NOT NULL,       -- waiting for a DB connection
    query_us       bigint      NOT NULL,       -- in the query
    total_us       bigint      NOT NULL,
    PRIMARY KEY (run_id, trace_id)
);
