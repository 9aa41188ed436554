#!/usr/bin/env bash
# Builds OpenTofu from its Go module into a cache dir and prints the path of the `tofu`
# binary on stdout (nothing else; progress goes to stderr). A second run finds the
# cached binary and returns at once, so CI and tests call this every time. The
# terraform/ tests (e2e/terraform_test.go) run it: `tofu fmt`, `validate`, and
# init/apply/destroy against the local foundation with the official provider; so does
# the provider's test resource by resource (e2e/tfprovider_test.go).
#
#   CFBENCH_CACHE   cache root (default: $HOME/.cache/cf-benchmark)
#
# The build carries OpenTofu's own replace of hashicorp/hcl/v2 (its fork) and its
# godebug line (scripts/lib/gomod-build.sh), and is stamped as its release build is
# (version.dev=no: `tofu version` says v1.10.10, not v1.10.10-dev). About 5 minutes on
# 2 idle cores with a cold cache (28 minutes on a machine loaded with other builds).
set -euo pipefail

readonly tofu_module=github.com/opentofu/opentofu
readonly tofu_version=v1.10.10
TAG=install-tofu
# shellcheck source=lib/gomod-build.sh
. "$(dirname "$0")/lib/gomod-build.sh"

cache_root=${CFBENCH_CACHE:-${HOME:?HOME or CFBENCH_CACHE must be set}/.cache/cf-benchmark}
bin=$cache_root/tofu/$tofu_version/tofu

# works reports whether the binary at $1 runs and is the pinned release.
works() {
	[ -x "$1" ] || return 1
	local out
	out=$("$1" version 2>/dev/null) || return 1
	[[ $out == "OpenTofu v${tofu_version#v}"$'\n'* ]]
}

if ! works "$bin"; then
	# One build at a time (test binaries of several packages may start at once).
	mkdir -p "$(dirname "$bin")"
	exec 9>"$(dirname "$bin")/.lock"
	flock 9
	if ! works "$bin"; then
		gomod_fetch "$tofu_module" "$tofu_version"
		gomod_build ./cmd/tofu "$bin" -trimpath -ldflags "-w -s -X '$tofu_module/version.dev=no'"
		works "$bin" || { log "the built binary does not report OpenTofu ${tofu_version#v}"; exit 1; }
		log "installed $bin"
	fi
fi
printf '%s\n' "$bin"
