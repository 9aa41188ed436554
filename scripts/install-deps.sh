#!/usr/bin/env bash
# Installs what `make demo` and `make test` need on a fresh Debian machine, and nothing
# that is already there: PostgreSQL server binaries (Debian package), the Go modules, and
# the real cf CLI (built from the Go module proxy into a cache dir).
set -euo pipefail
cd "$(dirname "$0")/.."

have_pg_server() {
	command -v initdb >/dev/null 2>&1 && return 0
	if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; then return 0; fi
	compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null
}

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"
	elif command -v sudo >/dev/null 2>&1; then sudo "$@"
	else echo "install-deps: need root to run: $*" >&2; exit 1
	fi
}

if ! have_pg_server; then
	echo "install-deps: installing the PostgreSQL server (Debian package postgresql)" >&2
	as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql
fi

go mod download
scripts/install-cf-cli.sh >/dev/null
