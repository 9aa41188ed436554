-- Schema v16: the observed p50 per second, beside the p99, in a step's stored series
-- (the report and the live page draw both per variant).
--
-- A row stored before this version has p50_us NULL: its p50 was never computed, and is
-- not guessed. A reader takes such a row as no row at all: the step's series is
-- computed from its samples with the SQL that stores it (resultsdb's stepSeriesSQL, as
-- for a step still running or a run recorded before v8), so every figure of it, p99
-- included, is the one it would have stored. An export of such a row has an empty
-- p50_us (an export made before this version, no p50_us column): cf-benchmark report
-- computes that variant's series from samples.csv alike, and without samples.csv shows
-- the stored series without a p50. Rows stored from this version on always have it (an
-- empty array for a step without samples, like the other arrays).
ALTER TABLE step_series
    ADD COLUMN p50_us bigint[]; -- observed p50 latency (percentile_disc); NULL: stored before v16
