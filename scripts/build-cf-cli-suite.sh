#!/usr/bin/env bash
# Builds what running the cf CLI's own integration suites needs, into a cache dir, and
# prints one NAME=PATH line each on stdout (progress goes to stderr):
#
#   scripts/build-cf-cli-suite.sh [SUITE...]   the suites named (push, isolated,
#                                              global; all three by default), each
#                                              compiled once: make test's quick subset
#                                              needs only isolated
#
#   cf=       the cf CLI (scripts/install-cf-cli.sh)
#   ginkgo=   the ginkgo v2 CLI, at the version the cf CLI's go.mod pins
#   suites=   the dir holding SUITE/SUITE.test, the compiled Ginkgo suites of
#             integration/v7 (push, isolated, global); Ginkgo runs each in its own dir,
#             where ../../assets is the release's integration/assets, as the specs
#             expect
#   source=   the cf CLI module's source (read-only, in the Go module cache)
# A second run finds everything cached and returns at once.
#
#   CFBENCH_CACHE   cache root (default: $HOME/.cache/cf-benchmark)
#
# The suites come from the same release the cf CLI is built from, fetched the same way
# (scripts/lib/gomod-build.sh): ginkgo and the test dependencies resolve from the
# release's own go.sum. They build as the cf CLI does (CGO off, -trimpath), so the
# standard library and the cf CLI's packages they use are compiled once for both.
set -euo pipefail

readonly cli_module=code.cloudfoundry.org/cli/v8
readonly cli_version=v8.18.0
readonly known=(push isolated global)
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=("${known[@]}")
for s in "${suites[@]}"; do
	case " ${known[*]} " in
	*" $s "*) ;;
	*)
		echo "build-cf-cli-suite: no suite $s: the suites are ${known[*]}" >&2
		exit 2
		;;
	esac
done
TAG=build-cf-cli-suite
# shellcheck source=lib/gomod-build.sh
. "$(dirname "$0")/lib/gomod-build.sh"

cf=$("$(dirname "$0")/install-cf-cli.sh")
cache_root=${CFBENCH_CACHE:-${HOME:?HOME or CFBENCH_CACHE must be set}/.cache/cf-benchmark}
dir=$cache_root/cf-cli-suite/$cli_version
v7=$dir/integration/v7

# The module's source dir, without a download when it is cached.
source_dir=$(cd /tmp && GOWORK=off GOFLAGS=-mod=mod go mod download -json "$cli_module@$cli_version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')

need_ginkgo=
[ -x "$dir/ginkgo" ] && [ -d "$dir/integration/assets" ] || need_ginkgo=1
todo=()
for s in "${suites[@]}"; do
	[ -x "$v7/$s/$s.test" ] || todo+=("$s")
done
if [ -n "$need_ginkgo" ] || [ ${#todo[@]} -gt 0 ]; then
	gomod_fetch "$cli_module" "$cli_version"
	mkdir -p "$dir"
	if [ -n "$need_ginkgo" ]; then
		ginkgo_version=$(sed -n 's/^[[:space:]]*github.com\/onsi\/ginkgo\/v2 \(v[^ ]*\)$/\1/p' "$GOMOD_SRC/go.mod" | head -n 1)
		log "building ginkgo $ginkgo_version (the version $cli_module $cli_version pins)"
		(cd "$GOMOD_WORK" && GOWORK=off CGO_ENABLED=0 go build -mod=mod -trimpath -o "$dir/.ginkgo.tmp" github.com/onsi/ginkgo/v2/ginkgo) || exit 1
		mv -f "$dir/.ginkgo.tmp" "$dir/ginkgo"
	fi
	for s in "${todo[@]}"; do
		log "compiling the $s suite"
		mkdir -p "$v7/$s"
		(cd "$GOMOD_WORK" && GOWORK=off CGO_ENABLED=0 go test -mod=mod -trimpath -c -o "$v7/$s/.$s.tmp" "$cli_module/integration/v7/$s") || exit 1
		mv -f "$v7/$s/.$s.tmp" "$v7/$s/$s.test"
	done
	ln -sfn "$GOMOD_SRC/integration/assets" "$dir/integration/assets"
fi
printf 'cf=%s\nginkgo=%s\nsuites=%s\nsource=%s\n' "$cf" "$dir/ginkgo" "$v7" "$source_dir"
