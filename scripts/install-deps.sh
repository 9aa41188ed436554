#!/usr/bin/env bash
# Installs what a make target needs on a fresh Debian machine, and nothing that is
# already there:
#
#   scripts/install-deps.sh demo   what `make demo` needs: the PostgreSQL server binaries
#                                  (the local foundation's private Postgres; a Debian
#                                  package) and the real cf CLI (scripts/install-cf-cli.sh
#                                  builds it from the Go module proxy into a cache dir,
#                                  once per machine: 110 CPU-seconds on a cold cache, 90 s
#                                  beside make build on 2 cores, as make demo runs them)
#   scripts/install-deps.sh test   what `make test` needs (the default): the demo's, and a
#                                  JDK, Maven, Node.js, Ruby, nginx, Chromium and Prometheus
#                                  (Debian packages), the Go modules, OpenTofu and the bosh CLI
#                                  (built like the cf CLI: about 5 and 2 minutes),
#                                  Elasticsearch's and OpenSearch's integ-test
#                                  distributions (scripts/install-es.sh,
#                                  install-opensearch.sh), and Citus for PostgreSQL 15
#                                  (scripts/install-citus.sh: the pinned tarball of the
#                                  shared tools folder, and postgresql-15 15.20 or newer)
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-test}
case $mode in
demo | test) ;;
*)
	echo "usage: scripts/install-deps.sh [demo|test]: unknown set $mode" >&2
	exit 2
	;;
esac

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

# Each install that is not apt runs as a job beside the others: the builds from Go
# modules (minutes of CPU) beside apt's and Maven's downloads (network and disk), as a
# fresh machine spends most of its first `make test` installing. Each job's progress
# goes to stderr, tagged; a job that fails is named at the end.
jobs=()
start() { # start NAME COMMAND...: runs COMMAND in the background as job NAME
	local name=$1
	shift
	"$@" >/dev/null &
	jobs+=("$name:$!")
}
finish() { # waits for every job; fails naming the jobs that failed
	local j failed=()
	for j in "${jobs[@]}"; do
		wait "${j#*:}" || failed+=("${j%%:*}")
	done
	if [ ${#failed[@]} -gt 0 ]; then
		echo "install-deps: failed: ${failed[*]} (the lines above say why)" >&2
		exit 1
	fi
}

start scripts/install-cf-cli.sh scripts/install-cf-cli.sh
if [ "$mode" = test ]; then
	# OpenTofu, for the terraform/ tests (e2e/terraform_test.go).
	start scripts/install-tofu.sh scripts/install-tofu.sh
	# The bosh CLI, for the bosh-lite rendering tests (e2e/boshlite_test.go).
	start scripts/install-bosh-cli.sh scripts/install-bosh-cli.sh
	start "go mod download" go mod download
fi

missing=()
have_pg_server || missing+=(postgresql)
if [ "$mode" = test ]; then
	# The local foundation stages Java and Node.js apps with the machine's toolchains.
	command -v javac >/dev/null 2>&1 && command -v jar >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
	command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
	# A Procfile's web command runs with the machine's toolchain: the cf CLI specs' app
	# is Ruby's one-line web server (ruby -run -e httpd), which needs WEBrick.
	command -v ruby >/dev/null 2>&1 && ruby -e 'require "webrick"' 2>/dev/null || missing+=(ruby ruby-webrick)
	# The local foundation serves Staticfile apps with nginx, as CF's staticfile buildpack does.
	command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
	# Maven builds the Java sample app and fetches the search engines' test distributions.
	command -v mvn >/dev/null 2>&1 || missing+=(maven)
	# Elasticsearch's and OpenSearch's distributions are zips (scripts/lib/integ-zip.sh).
	command -v unzip >/dev/null 2>&1 || missing+=(unzip)
	# The report's browser test renders the HTML report in headless Chromium.
	command -v chromium >/dev/null 2>&1 || missing+=(chromium)
	# The metrics test scrapes a run with a real Prometheus server (e2e/metrics_test.go).
	command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
fi

if [ ${#missing[@]} -gt 0 ]; then
	echo "install-deps: installing Debian packages: ${missing[*]}" >&2
	as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
if [ "$mode" = test ]; then
	# Elasticsearch's and OpenSearch's integ-test distributions, for the router-log and
	# OpenSearch tests, with mvn (installed above); one after the other, as both write
	# to the one local Maven repository.
	start "the search engines (scripts/install-es.sh, install-opensearch.sh)" \
		sh -c 'scripts/install-es.sh && scripts/install-opensearch.sh'
	# Citus, for the distributed-Postgres tests (pgserver.Cluster, testpg.CitusDSN); it
	# may run apt itself, so it runs here, where no other job does.
	scripts/install-citus.sh
fi
finish
