# shellcheck shell=bash
# Sourced by scripts/demo.sh and scripts/gallery.sh: starts the local foundation unless
# one runs (.cfbench/foundation; stopped again on exit if started here), and logs the
# real cf CLI in to it with its config in .cfbench/cf-home, not yours. Sets cf (the cf
# CLI), api, auth and info (the foundation's status).
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

export CF_HOME=$PWD/.cfbench/cf-home CF_COLOR=false
mkdir -p "$CF_HOME"
"$cf" api "$api" >/dev/null
# shellcheck disable=SC2086 # "user password", as the foundation prints them
"$cf" auth $auth >/dev/null
"$cf" target -o cfbench -s apps >/dev/null
"$cf" install-plugin -f bin/cf-benchmark >/dev/null
# The plugin carries the program it pushes (generators, tunnel): no CFBENCH_BIN_DIR.
