-- Schema v5: router requests joined to samples, and resumable log pulls.
--
-- A router request's trace id (the B3 trace id the generator sent, which gorouter logs
-- as x_b3_traceid and, adopted, as vcap_request_id) is derived from (run tag, worker,
-- seq), so the join to samples needs no lookup: worker_id and seq are stored decoded.

ALTER TABLE router_requests
    ADD COLUMN worker_id    integer,            -- from the trace id; with seq, the sample's key
    ADD COLUMN seq          bigint,
    ADD COLUMN app_name     text NOT NULL DEFAULT '',
    ADD COLUMN router_error text NOT NULL DEFAULT '';   -- x_cf_routererror
CREATE INDEX router_requests_sample ON router_requests (worker_id, seq);

-- The apps of a run's variants, so that router logs can be queried by app (by name
-- where the logs carry names, by guid where they carry only gorouter's app_id).
ALTER TABLE run_variants
    ADD COLUMN app_name text NOT NULL DEFAULT '',
    ADD COLUMN app_guid text NOT NULL DEFAULT '';

-- One row per run and log source: where the pull stands (an opaque cursor owned by the
-- source), so that an interrupted pull resumes without duplicates, and how it went.
CREATE TABLE router_log_pulls (
    run_id           text        NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    source           text        NOT NULL,     -- e.g. elasticsearch:https://host/logs-*
    cursor           jsonb       NOT NULL,
    retrieved        bigint      NOT NULL DEFAULT 0,  -- documents read, of any run
    stored           bigint      NOT NULL DEFAULT 0,  -- rows of this run stored
    unparseable      bigint      NOT NULL DEFAULT 0,
    foreign_docs     bigint      NOT NULL DEFAULT 0,  -- without a trace id of this run
    budget_exhausted boolean     NOT NULL DEFAULT false,
    started_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz,
    PRIMARY KEY (run_id, source)
);
