-- Schema v4: what happened during a run besides the samples. The engine's checks on its
-- own measurement (a generator on an app's host, generators near their CPU entitlement,
-- flat throughput while the app idles), scaling seen or done, why the run stopped: one
-- row each, in the order they were written, so a report can show them with the figures.

CREATE TABLE run_events (
    id       bigserial   PRIMARY KEY,          -- write order; exports resume after it
    run_id   text        NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    at       timestamptz NOT NULL DEFAULT now(),
    variant  text,                             -- NULL for events of the whole run
    step     smallint,                         -- 0-based ramp step; NULL when none
    kind     text        NOT NULL,             -- 'check', 'scale', 'stop', 'info', ...
    level    text        NOT NULL CHECK (level IN ('info', 'warn', 'fail')),
    message  text        NOT NULL              -- what the user reads
);
CREATE INDEX run_events_run ON run_events (run_id, id);

-- Most generator instances seen alive during the step. It differs from the planned
-- instances when someone ran `cf scale` by hand; NULL until the engine has looked.
ALTER TABLE steps ADD COLUMN instances_seen integer;
