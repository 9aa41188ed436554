#!/usr/bin/env bash
# The first end-to-end run: a stub HTTP target on 127.0.0.1:18080, a short closed-loop ramp
# against it (examples/demo.yml), every request stored in a private Postgres under
# .cfbench/, a summary table, and CSV files under results/RUN_ID/.
set -euo pipefail
cd "$(dirname "$0")/.."

addr=127.0.0.1:18080
if (exec 3<>/dev/tcp/127.0.0.1/18080) 2>/dev/null; then
	echo "demo: $addr is already in use; examples/demo.yml targets it. Stop what listens there and retry." >&2
	exit 1
fi

bin/cfbench-stub --listen "$addr" --dither 1ms 2>.cfbench-stub.log &
stub_pid=$!
trap 'kill "$stub_pid" 2>/dev/null; wait "$stub_pid" 2>/dev/null || true' EXIT

for _ in $(seq 50); do
	(exec 3<>/dev/tcp/127.0.0.1/18080) 2>/dev/null && break
	kill -0 "$stub_pid" 2>/dev/null || { echo "demo: the stub target did not start:" >&2; cat .cfbench-stub.log >&2; exit 1; }
	sleep 0.1
done

bin/cf-benchmark run -f examples/demo.yml --state-dir .cfbench
