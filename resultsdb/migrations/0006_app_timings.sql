-- Schema v6: in-app timings joined to samples, and what each flush brought.
--
-- The apps key their timings by the B3 trace id the generator sent, which is derived
-- from (run tag, worker, seq): worker_id and seq are stored decoded, as for router
-- requests, so the three views of a request join on the sample's key.

ALTER TABLE app_timings
    ADD COLUMN worker_id integer,
    ADD COLUMN seq       bigint;
CREATE INDEX app_timings_sample ON app_timings (worker_id, seq);

-- One row per flush of one app instance (at the end of each step): how many rows it
-- handed over, how many were this run's and new, and how many it could not keep
-- because its buffer was full. An instance that could not be flushed has error set.
CREATE TABLE app_timing_flushes (
    id             bigserial   PRIMARY KEY,
    run_id         text        NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    variant        text        NOT NULL,
    step           integer     NOT NULL,
    app_name       text        NOT NULL,
    instance_index integer     NOT NULL,
    at             timestamptz NOT NULL,
    rows_received  integer     NOT NULL DEFAULT 0,
    stored         integer     NOT NULL DEFAULT 0,
    foreign_rows   integer     NOT NULL DEFAULT 0,  -- trace ids of other runs or clients
    dropped        bigint      NOT NULL DEFAULT 0,  -- not kept by the app: buffer full
    error          text        NOT NULL DEFAULT ''
);
CREATE INDEX app_timing_flushes_run ON app_timing_flushes (run_id, variant, step);
