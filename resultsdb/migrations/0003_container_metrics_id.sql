-- Schema v3: container_metrics gets a key. Exports read every table in the order of a key
-- unique within the run, so that a stream cut off mid-table resumes after the last row
-- written; container_metrics had none (one poll may report the same instance twice).
-- Existing rows are numbered in physical order; new rows in insertion order.
ALTER TABLE container_metrics ADD COLUMN id bigserial PRIMARY KEY;
