#!/usr/bin/env bash
# The body of `make test` (after deps, build and lint): every test, as CI runs it. Never
# -short: a test whose program is missing fails here instead of skipping.
#
# Stage 1 runs three jobs at once, since each spends much of its time waiting (on
# search nodes, foundations, runs' steps) and together they keep both cores busy:
#   - every Go package but e2e, under the race detector;
#   - the e2e package without it: in its own process it runs only the local foundation,
#     whose packages' own tests run under the detector, and the plugin, workers and
#     apps it drives are binaries built without it. Under the detector the foundation's
#     staging and router took several times the CPU (a stub push 4.5 s instead of
#     0.45 s), which slowed every run and took CPU from the apps e2e measures;
#   - the sample apps' own tests (scripts/test-apps.sh), their output shown when done.
# Stage 2, alone: the end-to-end runs that judge their own measurements (a clean run must
# trip no check). Beside the other jobs a 2-core host is contended, and the contention
# and plateau checks would rightly say so. The host is checked first
# (scripts/lib/hostcheck.sh): a failure on a host busy with other work says so.
set -uo pipefail
cd "$(dirname "$0")/.."
go=${GO:-go}
measured='^(TestJavaVsNodeOnLocalFoundation|TestConfounders)$'

apps_log=$(mktemp /tmp/cfbench-test-apps.XXXXXX)
trap 'rm -f "$apps_log"' EXIT
packages=$($go list ./... | grep -v '/e2e$') || exit 1

# Four test binaries at a time, not one per core: many of them mostly wait (search
# nodes starting, outages and dead runs timed out on purpose). On a fresh clone with
# dependencies cached, make test took 792 s at -p 2 (1.2 of 2 cores busy on average)
# and 673 s at -p 4.
# shellcheck disable=SC2086 # one word per package
CGO_ENABLED=1 $go test -race -p 4 -count=1 -timeout 20m -skip "$measured" $packages &
race=$!
# Three e2e tests at a time, not GOMAXPROCS (2): they mostly wait on their foundations'
# pushes and runs, and with two at a time the package's longest path was decided by how
# its five foundation tests packed into two places.
$go test -count=1 -parallel 3 -timeout 20m -skip "$measured" ./e2e &
e2e=$!
scripts/test-apps.sh >"$apps_log" 2>&1 &
apps=$!

failed=()
wait "$race" || failed+=("the Go packages (race detector)")
wait "$e2e" || failed+=("e2e")
wait "$apps" || failed+=("the sample apps (scripts/test-apps.sh)")
echo "--- scripts/test-apps.sh"
cat "$apps_log"
if [ ${#failed[@]} -gt 0 ]; then
	printf 'test: failed: %s\n' "${failed[@]}" >&2
	exit 1
fi

echo "--- the measured end-to-end runs, alone"
# shellcheck source=scripts/lib/hostcheck.sh
. scripts/lib/hostcheck.sh
host_check 3
if ! $go test -count=1 -timeout 20m -run "$measured" ./e2e; then
	echo "test: failed: the measured end-to-end runs${HOST_CHECK_LINE:+ ($HOST_CHECK_LINE)}" >&2
	exit 1
fi
