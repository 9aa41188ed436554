#!/usr/bin/env bash
# Builds the real cf CLI from its Go module into a cache dir and prints the path of the
# `cf` binary on stdout (nothing else; progress goes to stderr). A second run finds the
# cached binary and returns at once, so CI and tests call this every time.
#
#   CFBENCH_CACHE   cache root (default: $HOME/.cache/cf-benchmark)
#
# The cf CLI ships no prebuilt binary through a package registry, so it is built from
# source the way its own Makefile builds the Linux release: CGO off, netgo, and the
# version, commit and date stamped in with -X so `cf version` reports the release.
set -euo pipefail

readonly cli_module=code.cloudfoundry.org/cli/v8
readonly cli_version=v8.18.0

log() { printf 'install-cf-cli: %s\n' "$*" >&2; }

cache_root=${CFBENCH_CACHE:-${HOME:?HOME or CFBENCH_CACHE must be set}/.cache/cf-benchmark}
cache_dir=$cache_root/cf-cli/$cli_version
cf_bin=$cache_dir/cf

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

command -v go >/dev/null 2>&1 || { log "go is not on PATH; install Go first"; exit 1; }

mkdir -p "$cache_dir"
work=$(mktemp -d)
# Built beside its final place, then renamed: a reader never sees a half-written cf.
tmp_dir=$(mktemp -d "$cache_dir/.build.XXXXXX")
tmp_bin=$tmp_dir/cf
trap 'rm -rf "$work" "$tmp_dir"' EXIT

# A throwaway module outside any workspace, so the project's go.mod is never touched.
export GOWORK=off CGO_ENABLED=0
cd "$work"

log "fetching $cli_module@$cli_version"
info=$(go mod download -json "$cli_module@$cli_version") || { log "download failed: $info"; exit 1; }
# field NAME prints the first "NAME": "value" of the download record.
field() { sed -n 's/^[[:space:]]*"'"$1"'": "\(.*\)",\{0,1\}$/\1/p' <<<"$info" | head -n 1; }
src=$(field Dir)
[ -n "$src" ] && [ -f "$src/go.sum" ] || { log "no source for $cli_module@$cli_version in the module cache"; exit 1; }

# The build module requires exactly the release, at the release's own go version, and
# starts from the release's go.sum: that file came inside the module zip that the
# checksum database just verified, so it vouches for every dependency. `go get` would
# instead ask the checksum database for the go.mod of each module in the whole graph,
# test-only ones included, and fails where one of those lookups is not served.
go_line=$(sed -n 's/^go \([0-9][0-9.]*\)$/\1/p' "$src/go.mod" | head -n 1)
{
	printf 'module cfcli-build\n\n'
	[ -n "$go_line" ] && printf 'go %s\n\n' "$go_line"
	printf 'require %s %s\n' "$cli_module" "$cli_version"
} >go.mod
{
	cat "$src/go.sum"
	printf '%s %s %s\n' "$cli_module" "$cli_version" "$(field Sum)"
	printf '%s %s/go.mod %s\n' "$cli_module" "$cli_version" "$(field GoModSum)"
} >go.sum

# The Makefile stamps `git rev-parse --short HEAD` and the build date; without a git
# checkout, the proxy's record of the release commit gives both.
sha=$(field Hash | cut -c 1-7)
date=$(go list -mod=mod -m -f '{{with .Time}}{{.UTC.Format "2006-01-02"}}{{end}}' "$cli_module")

ldflags="-w -s -X $cli_module/version.binaryVersion=$cli_version"
[ -n "$sha" ] && ldflags+=" -X $cli_module/version.binarySHA=$sha"
[ -n "$date" ] && ldflags+=" -X $cli_module/version.binaryBuildDate=$date"

log "building cf $cli_version (a few minutes on a cold build cache)"
go build -mod=mod -tags netgo -ldflags "$ldflags" -o "$tmp_bin" "$cli_module"

works "$tmp_bin" || { log "the built binary does not report cf version ${cli_version#v}"; exit 1; }
mv -f "$tmp_bin" "$cf_bin"
log "installed $cf_bin"
printf '%s\n' "$cf_bin"
