#!/usr/bin/env bash
# make lint's go vet: every package, its tests too, as each platform the cf CLI ships
# the plugin for builds it (linux, darwin and windows; amd64 and arm64), two at a time,
# as one vet keeps about one core busy.
#
# A vet on a cold build cache compiles every dependency, the standard library too, for
# its platform: about 150 CPU-seconds each here (a first `make test` is about 2,600). So:
#   - linux/amd64 is vetted with -trimpath, as make build, the installs and the tests
#     build: the compiles are shared, not done twice;
#   - the other platforms' compiles serve nothing but vet, so they are made without
#     optimisation or inlining (-N -l: 17% less CPU; vet reads only their types);
#   - a platform whose files are those of one vetted here (the same GOOS and a
#     GOARCH no file of this module is specific to: linux/arm64 beside linux/amd64,
#     darwin/amd64 beside darwin/arm64) is not vetted again. `go list` says which files
#     each platform builds; once a file names an architecture, its platforms are
#     vetted too. What the twin's vet cannot see is a type of a system package that
#     differs by architecture (a field of x/sys/unix's Stat_t, say); make release,
#     not make test, builds the plugin for every platform.
set -euo pipefail
cd "$(dirname "$0")/.."
go=${GO:-go}

# files PLATFORM prints every package's Go files as PLATFORM selects them.
files() {
	GOOS=${1%/*} GOARCH=${1#*/} $go list -e -f '{{.ImportPath}} {{.GoFiles}} {{.CgoFiles}} {{.TestGoFiles}} {{.XTestGoFiles}}' ./...
}

vetted=(linux/amd64 darwin/arm64 windows/amd64)
for pair in linux/arm64=linux/amd64 darwin/amd64=darwin/arm64; do
	p=${pair%=*} twin=${pair#*=}
	if [ "$(files "$p")" = "$(files "$twin")" ]; then
		echo "go vet $p: the files of $twin, vetted"
	else
		vetted+=("$p")
	fi
done

printf '%s\n' "${vetted[@]}" | GO=$go xargs -P 2 -n 1 sh -c '
	flags="-gcflags=all=-N -l"
	[ "$0" = linux/amd64 ] && flags=-trimpath
	echo "go vet $0"
	GOOS=${0%/*} GOARCH=${0#*/} $GO vet "$flags" ./... || { echo "go vet failed for $0"; exit 1; }'
