-- Schema v8: what the report needs per second and per step, stored once when the data
-- arrives, so that a report reads a few small rows instead of scanning every sample.
--
-- step_series is written with a step's metrics (ComputeStepMetrics); step_router_metrics
-- after each router-log pull (ComputeRouterMetrics). Both are derived: they can be
-- computed again from samples, router_requests and app_timings at any time, and a run
-- recorded before this version is reported by computing them live.

-- One row per step: its requests per second of intended send time (seconds since the
-- run's epoch, samples.intended_us / 1e6), warm-up included, in arrays of equal length
-- ordered by second. A step without samples has a row with empty arrays.
CREATE TABLE step_series (
    run_id           text             NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    variant          text             NOT NULL,
    step             smallint         NOT NULL,  -- steps.idx (0-based)
    second           bigint[]         NOT NULL,  -- intended_us / 1000000
    count            bigint[]         NOT NULL,  -- requests intended in that second
    errors           bigint[]         NOT NULL,  -- of them without a response or status >= 400
    p99_us           bigint[]         NOT NULL,  -- observed p99 latency (percentile_disc)
    intended_mean_us double precision[] NOT NULL, -- mean intended send time, µs since the epoch
    computed_at      timestamptz      NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, variant, step)
);

-- One row per step with measured requests (warm-up excluded), written after the run's
-- router logs were pulled: router-log coverage, and the latency decomposition as sums
-- over the requests seen by the generator, the router (response_time and gorouter_time)
-- and the app (app_timings), so the layers of a step add up exactly.
CREATE TABLE step_router_metrics (
    run_id            text             NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    variant           text             NOT NULL,
    step              smallint         NOT NULL,
    sent              bigint           NOT NULL,  -- measured requests
    found             bigint           NOT NULL,  -- of them with a router access-log line
    no_response       bigint           NOT NULL,  -- missing ones that got no response at all
    seconds           integer          NOT NULL,  -- seconds with measured requests
    empty_seconds     integer          NOT NULL,  -- of them without a router line found
    partial_seconds   integer          NOT NULL,  -- with some missing
    missing_in_empty  bigint           NOT NULL,  -- requests sent in the empty seconds
    decomposed        bigint           NOT NULL,  -- requests with all three views
    client_us_sum     double precision NOT NULL,  -- their client latency, summed
    generator_network_us_sum double precision NOT NULL, -- latency - response_time
    router_us_sum     double precision NOT NULL,  -- gorouter_time
    router_app_us_sum double precision NOT NULL,  -- response_time - gorouter_time - app total
    app_code_us_sum   double precision NOT NULL,  -- app total - pool wait - query
    pool_wait_us_sum  double precision NOT NULL,
    query_us_sum      double precision NOT NULL,
    computed_at       timestamptz      NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, variant, step)
);
