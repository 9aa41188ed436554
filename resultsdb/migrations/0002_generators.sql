-- Schema v2: what generator instances follow. The engine writes the plan (the workload
-- per variant and the window of each step); every instance, in process or pushed to CF
-- and scaled by hand, reads it, registers itself and reports what it did per step.

CREATE TABLE run_variants (
    run_id        text  NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    variant       text  NOT NULL,
    generator_app text  NOT NULL,              -- app name the variant's generators run as
    target_url    text  NOT NULL,
    workload      jsonb NOT NULL,              -- the workload, as the generators read it
    PRIMARY KEY (run_id, variant)
);
CREATE INDEX run_variants_app ON run_variants (generator_app);

-- started_at is the planned start every instance aligns on; ends_at the planned end.
ALTER TABLE steps ADD COLUMN ends_at timestamptz;

ALTER TABLE workers
    ADD COLUMN sent    bigint NOT NULL DEFAULT 0,    -- requests started
    ADD COLUMN stored  bigint NOT NULL DEFAULT 0,    -- samples written to this database
    ADD COLUMN spilled bigint NOT NULL DEFAULT 0,    -- samples that went through local disk
    ADD COLUMN missed  bigint NOT NULL DEFAULT 0;    -- open-loop slots never sent

-- One row per worker and step it took part in.
CREATE TABLE worker_steps (
    worker_id  integer     NOT NULL REFERENCES workers(id) ON DELETE CASCADE,
    step       smallint    NOT NULL,
    joined_at  timestamptz NOT NULL,           -- when it began the step, on the DB's clock
    skew_us    bigint      NOT NULL,           -- joined_at - steps.started_at
    late_join  boolean     NOT NULL,           -- joined a step already running (cf scale)
    sent       bigint,                         -- set when the step's samples are stored
    missed     bigint,
    done_at    timestamptz,
    PRIMARY KEY (worker_id, step)
);
