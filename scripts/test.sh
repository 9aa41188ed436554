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
# The Go packages share one Elasticsearch and one OpenSearch (tools/testnodes, started
# first, stopped once those packages are done; e2e, the apps and stage 2 use none):
# five of their test binaries used to start an Elasticsearch each and three an
# OpenSearch, eight JVMs each paying its start and its JIT's warm-up on a stage that
# keeps both cores busy, so only CPU saved shortens it (the seven packages that use
# them: 477 CPU-s with nodes of their own, 276 to 375 sharing; docs/development.md).
# The launcher's own tests (internal/testes, internal/testos) still start theirs;
# tests on a shared node keep to indices of their own (testes.Index).
# Stage 2, alone: the end-to-end runs that judge their own measurements (a clean run must
# trip no check). Beside the other jobs a 2-core host is contended, and the contention
# and plateau checks would rightly say so. The host is checked first
# (scripts/lib/hostcheck.sh): a failure on a host busy with other work says so.
set -uo pipefail
cd "$(dirname "$0")/.."
go=${GO:-go}
# make lint has run the full go vet already (go test would run a subset again), and
# nothing reads the test binaries' DWARF: race reports and stack traces come from the
# symbol table. Without it a race test binary links with a quarter less CPU (engine's
# 5.3 -> 3.9 CPU-s), and a run links about 130 of them.
quick=(-vet=off -ldflags=-w)
# e2e (the measured runs too) builds as make build, the installs and make lint's vet of
# linux/amd64 do (-trimpath, CGO off), so it compiles nothing they have not: on a cold
# cache, the dependencies compiled both ways took about 110 CPU-seconds more.
e2e_flags=(-trimpath)
measured='^(TestJavaVsNodeOnLocalFoundation|TestConfounders)$'
# The race detector's work is our code's (and its dependencies') memory accesses; the
# races it is here for are there, and that code stays instrumented. Left out, for what
# they cost and cannot find:
#   - compress/flate and the standard library's hashes and ciphers
#     (crypto/internal/fips140/...): pure computation on buffers no test shares between
#     goroutines. The compressor took most of the CPU of the tests that push apps
#     (platform's TestCF: 34 s with it, 10 s without), and SCRAM's 4,096 rounds of
#     HMAC-SHA-256 19 ms of CPU per Postgres connection (10 ms without; a make test opens
#     about 3,000);
#   - checkptr in the standard library (-race turns it on everywhere): its checks of
#     unsafe pointer conversions in reflect and encoding/json were about a tenth of the
#     CPU of the tests that decode JSON (routerlogs/elastic). The standard library is
#     checked by its own builders; our code and its dependencies keep the checks.
# Per package the last pattern that matches wins, so compress/flate and the ciphers are
# built without the detector (which checkptr is part of) and the rest of std with it.
# Both cuts together: export's tests 22.2 -> 19.3 CPU-s, routerlogs/elastic's 42.7 -> 39.6.
race_flags=(-gcflags=std=-d=checkptr=0 -gcflags=compress/flate=-race=false -gcflags=crypto/internal/fips140/...=-race=false)

apps_log=$(mktemp /tmp/cfbench-test-apps.XXXXXX)
nodes_dir=$(mktemp -d /tmp/cfbench-test-nodes.XXXXXX)
nodes=
stop_nodes() {
	[ -n "$nodes" ] || return 0
	exec 3>&-
	kill -TERM "$nodes" 2>/dev/null
	wait "$nodes" 2>/dev/null
	nodes=
}
# The nodes stop however this script ends: failed tests, Ctrl-C, SIGTERM (the traps),
# or even SIGKILL (the end of their stdin, fd 3 here).
trap 'stop_nodes; rm -rf "$apps_log" "$nodes_dir"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
packages=$($go list ./... | grep -v '/e2e$') || exit 1
# The packages that take longest go first, the rest in go list's order: go test starts
# them in the order given, and each of these mostly waits (on outages, dead runs, its
# foundation), so started last one kept the stage going with a core idle (alphabetical,
# tools/bench/capacity ran its 41 s alone at the end). Their wall times in a make test
# of 2026-11-28: engine 288 s, elastic 270, foundation 268, the others 40 to 75.
slowest="engine collectors/routerlogs/elastic foundation platform collectors/logcache
collectors/routerlogs/file resultsdb/export collectors/ccstats foundation/clisuite report
plugin/command foundation/cc tools/bench/capacity"
module=$($go list -m) || exit 1
ordered=()
for p in $slowest; do
	grep -qx "$module/$p" <<<"$packages" || { echo "test: scripts/test.sh names $p among the slowest packages, but there is no such package" >&2; exit 1; }
	ordered+=("$module/$p")
done
packages="${ordered[*]} $(grep -vxF -f <(printf '%s\n' "${ordered[@]}") <<<"$packages")"

$go build -o "$nodes_dir/testnodes" ./tools/testnodes || exit 1
mkfifo "$nodes_dir/stdin"
: >"$nodes_dir/env"
"$nodes_dir/testnodes" <"$nodes_dir/stdin" >"$nodes_dir/env" 2>"$nodes_dir/log" &
nodes=$!
exec 3<>"$nodes_dir/stdin" # read-write: opening it does not wait for the reader

# Three e2e tests at a time, not GOMAXPROCS (2): they mostly wait on their foundations'
# pushes and runs, and with two at a time the package's longest path was decided by how
# its five foundation tests packed into two places. e2e and the apps use no search node:
# they start while the nodes do.
$go test "${quick[@]}" "${e2e_flags[@]}" -count=1 -parallel 3 -timeout 20m -skip "$measured" ./e2e 3>&- &
e2e=$!
scripts/test-apps.sh >"$apps_log" 2>&1 3>&- &
apps=$!

failed=()
# The nodes' variables, once both are ready (within testnode.StartTimeout, 3 min; a
# node that cannot start makes testnodes exit with its log's tail).
node_env=()
for ((i = 0; i < 1000; i++)); do # 200 s
	mapfile -t node_env <"$nodes_dir/env"
	[ ${#node_env[@]} -ge 2 ] && break
	kill -0 "$nodes" 2>/dev/null || break
	sleep 0.2
done
if [ ${#node_env[@]} -lt 2 ]; then
	if kill -0 "$nodes" 2>/dev/null; then
		echo "--- tools/testnodes: the search nodes were not ready within 200 s" >&2
	else
		echo "--- tools/testnodes: the search nodes did not start" >&2
	fi
	stop_nodes
	tail -c 8000 "$nodes_dir/log" >&2
	failed+=("the search nodes (tools/testnodes)")
else
	# Four test binaries at a time, not one per core: many of them mostly wait (outages
	# and dead runs timed out on purpose). On a fresh clone with dependencies cached,
	# make test took 792 s at -p 2 (1.2 of 2 cores busy on average) and 673 s at -p 4.
	# shellcheck disable=SC2086 # one word per package
	env "${node_env[@]}" CGO_ENABLED=1 $go test "${quick[@]}" -race "${race_flags[@]}" -p 4 -count=1 -timeout 20m -skip "$measured" $packages 3>&- &
	race=$!
	wait "$race" || failed+=("the Go packages (race detector)")
	stop_nodes
fi
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
if ! $go test "${quick[@]}" "${e2e_flags[@]}" -count=1 -timeout 20m -run "$measured" ./e2e; then
	echo "test: failed: the measured end-to-end runs${HOST_CHECK_LINE:+ ($HOST_CHECK_LINE)}" >&2
	exit 1
fi
