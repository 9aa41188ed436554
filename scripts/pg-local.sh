#!/usr/bin/env bash
# A private PostgreSQL server for local use, in a state directory of its own (default
# .cfbench/pg, the one `cf-benchmark run` uses). It listens on 127.0.0.1 only, with a
# generated password, and runs as an unprivileged user when started as root.
#
#   scripts/pg-local.sh start  [--state-dir DIR] [--db NAME]   prints the DSN
#   scripts/pg-local.sh start  --citus-workers N [--state-dir DIR] [--db NAME]
#   scripts/pg-local.sh status [--state-dir DIR]
#   scripts/pg-local.sh stop   [--state-dir DIR]
#
# With --citus-workers, a Citus cluster instead (scripts/install-citus.sh installs
# Citus): a coordinator and N workers in DIR/coordinator, DIR/worker-0 …, one password;
# it prints the coordinator's DSN of a database distributed over the workers. status
# and stop know such a state dir by its layout, and start restarts it.
#
# A restart (stop, then start) listens on the port the server had, so an exported DSN
# reaches it again; only a port another process took meanwhile makes it move (a
# cluster's nodes do not move: the start fails).
#
# Example: export CFBENCH_DB=$(scripts/pg-local.sh start)
set -euo pipefail
cd "$(dirname "$0")/.."
CGO_ENABLED=0 go build -trimpath -o bin/cfbench-pg ./cmd/cfbench-pg
exec bin/cfbench-pg "$@"
