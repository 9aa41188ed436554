-- Schema v8: run-queue wait, the evidence of CPU contention (a noisy neighbour).
--
-- A container whose threads are ready to run but wait for a CPU loses time to its
-- cell's other containers or the host. The local foundation's cells count that wait
-- per instance (the kernel's per-thread schedstat) and send it to Log Cache as the
-- cumulative gauge absolute_cpu_wait; Diego sends no such gauge, so on a real Cloud
-- Foundry these columns stay NULL and the contention check says it could not judge.

ALTER TABLE container_metrics
    ADD COLUMN cpu_wait_ns bigint;              -- run-queue wait since the container started

ALTER TABLE step_app_metrics
    ADD COLUMN cpu_wait_cores double precision, -- per instance: run-queue wait / window (cores' worth of time waited)
    ADD COLUMN cpu_wait_share double precision; -- wait / (wait + CPU time): the share of its ready time it did not run
