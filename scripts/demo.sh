#!/usr/bin/env bash
# make demo: the main job, end to end, without a Cloud Foundry. It starts the local
# foundation (a CC v3 API, a router, cells, a postgres service; .cfbench/foundation),
# logs the real cf CLI in to it (its config in .cfbench/cf-home, not yours), installs
# this plugin and runs
#
#   cf run-benchmark -f examples/stub-on-cf.yml
#
# which pushes two stub apps and a generator app per variant to separate isolation
# segments (cells on separate CPUs), ramps the generators 1 -> 3 with cf scale, polls
# container metrics, prints a summary and writes results/RUN_ID/*.csv. A foundation the
# demo started is stopped at the end; one that was already running is left alone.
#
# Another spec runs the same way: scripts/demo.sh examples/java-vs-node.yml (or
# make demo SPEC=examples/java-vs-node.yml), once `make deps apps` has installed the
# JDK, Maven and Node.js (make demo installs only what stub-on-cf.yml uses) and built
# the sample apps.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/local-cf.sh
. scripts/local-cf.sh
echo "demo: local foundation at $api"
"$cf" run-benchmark -f "${1:-examples/stub-on-cf.yml}"
