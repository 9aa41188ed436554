#!/usr/bin/env bash
# Documents per second pulled from a real Elasticsearch (internal/testes starts one; the
# first run installs it) by collectors/routerlogs/elastic, with and without filter_path:
# the shared test data set's window of 200,000 logsearch-shaped router documents, one
# full pull per variant and iteration, the variants taking turns after a warm-up pull
# (BenchmarkFilterPath). Also reported, for context: no _source includes either, no
# gzip, raw mode; and bytes read from the connection per document (gzip on except where
# named). Written as Markdown to stdout and to BENCH_ROUTERLOGS_OUT.
#
# Example: BENCH_ROUTERLOGS_ITERATIONS=1 scripts/bench-routerlogs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N=${BENCH_ROUTERLOGS_ITERATIONS:-3}
OUT=${BENCH_ROUTERLOGS_OUT:-bench/routerlogs-latest.md}
GO=${GO:-go}
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT

echo "bench-routerlogs: BenchmarkFilterPath, $N iterations (indexing the data set first takes ~30 s)" >&2
$GO test -run '^$' -bench '^BenchmarkFilterPath$' -benchtime "${N}x" -timeout 60m ./collectors/routerlogs/elastic | tee "$raw" >&2

# metric UNIT: the value printed before UNIT on the benchmark's line.
metric() {
	grep -E '^BenchmarkFilterPath(-[0-9]+)?[[:space:]]' "$raw" | awk -v unit="$1" '{for (i = 2; i <= NF; i++) if ($i == unit) print $(i-1)}' | tail -1
}

report() {
	echo "# Router log pull: filter_path"
	echo
	echo "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, Elasticsearch from internal/testes, $N iterations."
	echo
	echo "| variant | documents/s | wire bytes/document |"
	echo "|---|---:|---:|"
	for v in filter_path no_filter_path unfiltered filter_path_nogzip raw; do
		printf '| %s | %.0f | %.0f |\n' "$v" "$(metric "${v}_docs/s")" "$(metric "${v}_wire_B/doc")"
	done
	echo
	printf 'filter_path / no_filter_path: %.2f× the documents per second\n' "$(metric filter_path/no_filter_path)"
}

mkdir -p "$(dirname "$OUT")"
report | tee "$OUT"
