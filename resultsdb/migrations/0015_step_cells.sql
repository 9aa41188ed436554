-- Schema v15: the CPU available to a step's instances, from where they ran.
--
-- cores_available was one instance's cell's cores, and the report multiplied it by the
-- instance count: instances sharing a cell counted its cores once each (1, 2 and 3
-- instances on one 1-core cell: 1, 2 and 3 cores "available"). A step now stores the
-- distinct hosts its instances ran on (CC process stats' host) and the cores of those
-- hosts together, each host counted once.
ALTER TABLE step_app_metrics
    ADD COLUMN cells               integer,          -- distinct hosts the instances ran on; NULL: unknown (no host in the readings)
    ADD COLUMN cpu_available_cores double precision; -- all instances together: the cores of those hosts; NULL: unknown

-- Older runs had cores_available only from the local foundation, which has one cell per
-- isolation segment: all of an app's instances ran on that one cell, so its cores are
-- what they had together. Elsewhere it was NULL, and the cells stay unknown.
UPDATE step_app_metrics SET cells = 1, cpu_available_cores = cores_available WHERE cores_available IS NOT NULL;

ALTER TABLE step_app_metrics DROP COLUMN cores_available;
