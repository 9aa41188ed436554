#!/usr/bin/env bash
# Installs Citus 13.2.2 for PostgreSQL 15, the extension pgserver's Cluster preloads (a
# coordinator and workers on 127.0.0.1), from the pinned tarball of the shared tools
# folder (shared/tools/citus, see its README): unpacked over / as root, once per
# tarball (its sha256 is recorded beside the extension). Citus here is built against
# PostgreSQL 15.20, so an older postgresql-15 is upgraded first (a Debian package).
# Prints nothing when both are in place already.
#
#   CFBENCH_CITUS_TARBALL   the tarball (default: shared/tools/citus/<name> in the
#                           nearest folder above the checkout that has it)
#
# Example: scripts/install-citus.sh
set -euo pipefail
cd "$(dirname "$0")/.."

readonly name=citus-13.2.2-pg15-linux-amd64.tar.gz
readonly sha=b7bb98ec399267ac3a56d9bdb1bc0464093c7ce8f3b16bb9816225fd5d8e2d20
readonly pg=/usr/lib/postgresql/15
readonly marker=/usr/share/postgresql/15/extension/.cfbench-citus-sha256

die() { echo "install-citus: $*" >&2; exit 1; }

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"
	elif command -v sudo >/dev/null 2>&1; then sudo "$@"
	else die "need root to run: $*"
	fi
}

# minor prints the minor version of the PostgreSQL 15 server, 0 when there is none.
minor() {
	local v
	v=$("$pg/bin/postgres" --version 2>/dev/null | awk '{print $3}') || true
	v=${v#15.}
	v=${v%%[!0-9]*}
	echo "${v:-0}"
}

if [ "$(minor)" -lt 20 ] || [ ! -x "$pg/bin/initdb" ]; then
	command -v apt-get >/dev/null 2>&1 || die "Citus here needs PostgreSQL 15.20 or newer in $pg (Debian's postgresql-15)"
	echo "install-citus: installing postgresql-15 (15.20 or newer)" >&2
	as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql-15 >&2
	[ "$(minor)" -ge 20 ] || die "postgresql-15 is still 15.$(minor) after apt-get install; Citus here needs 15.20"
fi

[ -f "$pg/lib/citus.so" ] && [ "$(cat "$marker" 2>/dev/null)" = "$sha" ] && exit 0

tarball=${CFBENCH_CITUS_TARBALL:-}
if [ -z "$tarball" ]; then
	dir=$(dirname "$PWD")
	until [ -f "$dir/shared/tools/citus/$name" ]; do
		[ "$dir" = / ] && die "no shared/tools/citus/$name in any folder above $PWD: set CFBENCH_CITUS_TARBALL"
		dir=$(dirname "$dir")
	done
	tarball=$dir/shared/tools/citus/$name
fi
[ -f "$tarball" ] || die "no tarball $tarball"
got=$(sha256sum "$tarball" | awk '{print $1}')
[ "$got" = "$sha" ] || die "$tarball: sha256 $got, want $sha"

echo "install-citus: unpacking $tarball over /" >&2
# Existing folders (/usr, /usr/lib …) keep their owners and modes.
as_root tar -xzf "$tarball" -C / --no-same-owner --no-overwrite-dir
echo "$sha" | as_root tee "$marker" >/dev/null
