-- Schema v15: the run's own heartbeat.
--
-- The process that runs a run updates heartbeat_at every few seconds. A run still
-- 'running' whose heartbeat is older than resultsdb.RunStaleAfter lost its process (it
-- died, kill -9, the machine went away): the next status or run marks it aborted.
-- Runs recorded before this version have no heartbeat and are left as they are.
ALTER TABLE runs ADD COLUMN heartbeat_at timestamptz;
