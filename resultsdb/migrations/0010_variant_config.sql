-- Schema v8: experiments. A listed variant with a matrix runs as one variant per
-- combination of its values; each row of run_variants now says which listed variant and
-- which cell it is, and what its app under test was pushed as after the matrix, so a run
-- can be reproduced and compared by configuration from the results alone.

ALTER TABLE run_variants
    ADD COLUMN listed        text    NOT NULL DEFAULT '',   -- the variant as the spec lists it; '' in older runs
    ADD COLUMN matrix        jsonb   NOT NULL DEFAULT '{}', -- the matrix cell: {"env.DB_POOL_SIZE": "60", "memory": "1G", "instances": "2"}
    ADD COLUMN app_manifest  text    NOT NULL DEFAULT '',   -- the manifest applied to the space (after the matrix); '' for a url: variant
    ADD COLUMN app_env       jsonb   NOT NULL DEFAULT '{}', -- the app's env (manifest's, spec's, matrix's), per-run secrets redacted
    ADD COLUMN app_memory_mb integer,                       -- the web process's memory limit; NULL: the foundation's default, or not pushed
    ADD COLUMN app_instances integer;                       -- the web process's instances; NULL: not pushed
