-- Schema v11: repeats. A spec with repeat: N runs every variant N times, interleaved
-- (A B A B); each repeat is a variant of its own in every table (named VARIANT#R), and
-- its row here says which configuration it repeats and which repeat it is. The repeats
-- of one variant share its generator app: a generator instance follows the newest one.

ALTER TABLE run_variants
    ADD COLUMN config text     NOT NULL DEFAULT '', -- the variant as configured (its name in the spec after the matrix); '' in older runs: = variant
    ADD COLUMN repeat smallint NOT NULL DEFAULT 1;  -- which repeat, from 1
