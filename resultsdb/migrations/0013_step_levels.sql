-- Schema v14: load levels. A ramp steps generator instances, or one of: the open loop's
-- offered rate in all, the closed loop's users in all (users stays per instance), or the
-- app under test's instances. Each step says what it asked for, so that offered vs
-- achieved and CPU per app-instance count are read from the results alone.

ALTER TABLE steps
    ADD COLUMN rate          double precision, -- offered req/s in all, split over the live generator instances; NULL: the workload's rate
    ADD COLUMN app_instances integer;          -- instances the app under test was scaled to for the step; NULL: as pushed
