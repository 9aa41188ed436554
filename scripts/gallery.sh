#!/usr/bin/env bash
# make gallery: reproduce the docs' gallery (docs/gallery.md) on the local foundation.
# Runs each shortened spec of examples/gallery with the real cf CLI and this plugin
# (the stub spec twice: the second run is compared with the first), saves each run's
# report as JSON in docs/gallery/runs, then tools/gallery draws each report in
# headless Chromium and writes docs/gallery/*.png and the tables of docs/gallery.md.
# Takes about 10 minutes. GALLERY_ONLY="stub cc-api" runs only those specs; the
# pictures are then drawn from the reports saved before for the others.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/local-cf.sh
. scripts/local-cf.sh
echo "gallery: local foundation at $api"
runs=docs/gallery/runs
mkdir -p "$runs"
only=${GALLERY_ONLY:-java-vs-node instances pool-size stub proxy cc-api lose-one-of-three}
tmp=$(mktemp -d)
cleanup() { rm -rf "$tmp" examples/gallery/.proxy-plateau.yml examples/gallery/.cc-api.yml; stop_foundation; }
trap cleanup EXIT

# run SPEC: runs it, prints its run id.
run() {
	local out="$tmp/$(basename "$1").out"
	"$cf" run-benchmark -f "$1" | tee "$out" >&2
	grep -oE '^run [0-9]{8}-[0-9]{6}-[0-9a-f]{4}' "$out" | head -n1 | cut -d' ' -f2
}
# report NAME RUN [--baseline RUN]: saves the run's report as JSON.
report() {
	local name=$1
	shift
	"$cf" benchmark-report "$@" --format json -o "$runs/$name.json"
}

for spec in $only; do
	case $spec in
	java-vs-node | instances | pool-size)
		report "$spec" "$(run "examples/gallery/$spec.yml")"
		;;
	lose-one-of-three)
		# The example itself: 2 steps of 30 s, a crash 10 s into step 2.
		report "$spec" "$(run "examples/$spec.yml")"
		;;
	stub)
		first=$(run examples/gallery/stub.yml)
		second=$(run examples/gallery/stub.yml)
		report stub-vs-baseline "$second" --baseline "$first"
		;;
	proxy)
		router=$(sed -n 's|^  Router: *http://\([^ ]*\).*$|\1|p' <<<"$info")
		sed -e "s|path: ../bin/proxy|path: $PWD/bin/proxy|" -e "s|      # CONNECT_TO: .*|      CONNECT_TO: $router|" \
			manifests/proxy-plateau.yml >examples/gallery/.proxy-plateau.yml
		report proxy "$(run examples/gallery/proxy.yml)"
		;;
	cc-api)
		# examples/cc-api.yml itself on this foundation's API, its sweep shortened.
		sed -e "s|url: https://api.sys.example.com|url: $api|" -e 's|users: \[1, 2, 4, 8, 16, 32\]|users: [1, 2, 4, 8, 16]|' \
			-e 's|hold: 60s|hold: 5s|' -e 's|warmup: 5s|warmup: 1s|' \
			examples/cc-api.yml >examples/gallery/.cc-api.yml
		# As a plugin the run takes the token of the cf CLI's login: CF_OAUTH_TOKEN.
		report cc-api "$(run examples/gallery/.cc-api.yml)"
		;;
	*)
		echo "gallery: no spec $spec" >&2
		exit 2
		;;
	esac
done
go run ./tools/gallery -runs "$runs" -out docs/gallery -page docs/gallery.md
