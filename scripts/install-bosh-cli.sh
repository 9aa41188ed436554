#!/usr/bin/env bash
# Builds the bosh CLI from its Go module into a cache dir and prints the path of the
# `bosh` binary on stdout (nothing else; progress goes to stderr). A second run finds
# the cached binary and returns at once, so CI and tests call this every time. The
# scripts/bosh-lite tests render the director and cf-deployment with it (`bosh int`),
# and scripts/bosh-lite/*.sh use it on a user's machine.
#
#   CFBENCH_CACHE   cache root (default: $HOME/.cache/cf-benchmark)
#
# v7.4.0 is the newest tag whose dependencies the Go module proxy serves. Stamped the
# way its bin/build stamps a release, so `bosh --version` reports it. About 2 minutes
# on 2 cores, cold cache.
set -euo pipefail

readonly bosh_module=github.com/cloudfoundry/bosh-cli/v7
readonly bosh_version=v7.4.0
TAG=install-bosh-cli
# shellcheck source=lib/gomod-build.sh
. "$(dirname "$0")/lib/gomod-build.sh"

cache_root=${CFBENCH_CACHE:-${HOME:?HOME or CFBENCH_CACHE must be set}/.cache/cf-benchmark}
bin=$cache_root/bosh-cli/$bosh_version/bosh

# works reports whether the binary at $1 runs and is the pinned release.
works() {
	[ -x "$1" ] || return 1
	local out
	out=$("$1" --version 2>/dev/null) || return 1
	[[ $out == "version ${bosh_version#v}"* ]]
}

if ! works "$bin"; then
	mkdir -p "$(dirname "$bin")"
	exec 9>"$(dirname "$bin")/.lock"
	flock 9
	if ! works "$bin"; then
		gomod_fetch "$bosh_module" "$bosh_version"
		gomod_build . "$bin" -trimpath \
			-ldflags "-w -s -X '$bosh_module/cmd.VersionLabel=${bosh_version#v}'"
		works "$bin" || { log "the built binary does not report version ${bosh_version#v}"; exit 1; }
		log "installed $bin"
	fi
fi
printf '%s\n' "$bin"
