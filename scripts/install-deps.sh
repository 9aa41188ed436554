#!/usr/bin/env bash
# Installs what `make demo` and `make test` need on a fresh Debian machine, and nothing
# that is already there: PostgreSQL server binaries, a JDK, Maven, Node.js, nginx and Chromium (Debian packages),
# the Go modules, the real cf CLI, OpenTofu and the bosh CLI (built from the Go module
# proxy into a cache dir, once per machine: about 3, 5 and 2 minutes on 2 cores), and
# Elasticsearch and OpenSearch for tests (scripts/install-es.sh, install-opensearch.sh).
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

# The local foundation stages Java and Node.js apps with the machine's toolchains.
missing=()
have_pg_server || missing+=(postgresql)
command -v javac >/dev/null 2>&1 && command -v jar >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
# The local foundation serves Staticfile apps with nginx, as CF's staticfile buildpack does.
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
# Maven builds the Java sample app and fetches the search engines' test distributions.
command -v mvn >/dev/null 2>&1 || missing+=(maven)
# The report's browser test renders the HTML report in headless Chromium.
command -v chromium >/dev/null 2>&1 || missing+=(chromium)

if [ ${#missing[@]} -gt 0 ]; then
	echo "install-deps: installing Debian packages: ${missing[*]}" >&2
	as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

go mod download
scripts/install-cf-cli.sh >/dev/null
# OpenTofu, for the terraform/ tests (e2e/terraform_test.go).
scripts/install-tofu.sh >/dev/null
# The bosh CLI, for the bosh-lite rendering tests (e2e/boshlite_test.go).
scripts/install-bosh-cli.sh >/dev/null
# Elasticsearch's integ-test distribution, for the router-log tests (Maven Central).
scripts/install-es.sh >/dev/null
# OpenSearch's integ-test distribution, for the OpenSearch tests (Maven Central).
scripts/install-opensearch.sh >/dev/null
