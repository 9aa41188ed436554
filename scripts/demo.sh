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
# make demo SPEC=examples/java-vs-node.yml).
set -euo pipefail
cd "$(dirname "$0")/.."

cf=$(scripts/install-cf-cli.sh)
fdir=.cfbench/foundation
started=
stop_foundation() {
	if [ -n "$started" ]; then
		bin/cf-benchmark foundation stop --state-dir "$fdir" >/dev/null || true
	fi
}
trap stop_foundation EXIT
if ! bin/cf-benchmark foundation status --state-dir "$fdir" >/dev/null 2>&1; then
	# Container metrics every second (Diego: 15 s), so that 5 s steps get figures.
	bin/cf-benchmark foundation start --detach --state-dir "$fdir" --metrics-interval 1s >/dev/null
	started=1
fi
info=$(bin/cf-benchmark foundation status --state-dir "$fdir")
api=$(sed -n 's/^  cf api \(.*\)$/\1/p' <<<"$info")
auth=$(sed -n 's/^  cf auth \(.*\)$/\1/p' <<<"$info")
echo "demo: local foundation at $api"

export CF_HOME=$PWD/.cfbench/cf-home CF_COLOR=false
mkdir -p "$CF_HOME"
"$cf" api "$api" >/dev/null
# shellcheck disable=SC2086 # "user password", as the foundation prints them
"$cf" auth $auth >/dev/null
"$cf" target -o cfbench -s apps >/dev/null
"$cf" install-plugin -f bin/cf-benchmark >/dev/null

# The plugin pushes bin/cfbench-worker and bin/cfbench-tunnel; cf runs it from its own
# copy under CF_HOME, so say where they are.
CFBENCH_BIN_DIR=$PWD/bin "$cf" run-benchmark -f "${1:-examples/stub-on-cf.yml}"
