-- Schema v11: router requests received through a syslog drain.
--
-- A drain receiver stores each router request as it arrives, under a router_log_pulls
-- row like a pull's (source 'drain', counters over the run), and what it received but
-- did not store, by kind, in counters: other sources' lines, refused requests and
-- messages, bad frames by reason, lines dropped while the database was away.
ALTER TABLE router_log_pulls
    ADD COLUMN counters jsonb NOT NULL DEFAULT '{}';
