#!/usr/bin/env bash
# Builds the real cf CLI from its Go module into a cache dir and prints the path of the
# `cf` binary on stdout (nothing else; progress goes to stderr). A second run finds the
# cached binary and returns at once, so CI and tests call this every time.
#
#   CFBENCH_CACHE   cache root (default: $HOME/.cache/cf-benchmark)
#
# The cf CLI ships no prebuilt binary through a package registry, so it is built from
# source the way its own Makefile builds the Linux release: CGO off (so the pure Go
# resolver, which its netgo tag asks for), and the version, commit and date stamped in
# with -X so `cf version` reports the release (scripts/lib/gomod-build.sh builds it).
set -euo pipefail

readonly cli_module=code.cloudfoundry.org/cli/v8
readonly cli_version=v8.18.0
TAG=install-cf-cli
# shellcheck source=lib/gomod-build.sh
. "$(dirname "$0")/lib/gomod-build.sh"

cache_root=${CFBENCH_CACHE:-${HOME:?HOME or CFBENCH_CACHE must be set}/.cache/cf-benchmark}
cf_bin=$cache_root/cf-cli/$cli_version/cf

# works reports whether the binary at $1 runs and is the pinned release. CF_HOME points
# at a throwaway dir so the check never reads or writes the user's cf config.
works() {
	local bin=$1 home out
	[ -x "$bin" ] || return 1
	home=$(mktemp -d)
	out=$(CF_HOME=$home "$bin" version 2>/dev/null) || { rm -rf "$home"; return 1; }
	rm -rf "$home"
	[[ $out == "cf version ${cli_version#v}"* ]]
}

if works "$cf_bin"; then
	printf '%s\n' "$cf_bin"
	exit 0
fi

gomod_fetch "$cli_module" "$cli_version"
# The Makefile stamps `git rev-parse --short HEAD` and the build date; without a git
# checkout, the proxy's record of the release commit gives both.
ldflags="-w -s -X $cli_module/version.binaryVersion=$cli_version"
[ -n "$GOMOD_HASH" ] && ldflags+=" -X $cli_module/version.binarySHA=$(cut -c 1-7 <<<"$GOMOD_HASH")"
[ -n "$GOMOD_TIME" ] && ldflags+=" -X $cli_module/version.binaryBuildDate=$GOMOD_TIME"
# Built as `make build` builds (CGO off, -trimpath), so the two share the standard
# library in the build cache. The release's -tags netgo is left out: with CGO off the
# net package resolves in Go anyway, and the tag would compile net and the 11 packages
# above it (net/http, crypto/tls, ...) a second time.
gomod_build . "$cf_bin" -trimpath -ldflags "$ldflags"

works "$cf_bin" || { log "the built binary does not report cf version ${cli_version#v}"; exit 1; }
log "installed $cf_bin"
printf '%s\n' "$cf_bin"
