#!/usr/bin/env bash
# Installs Elasticsearch's integ-test distribution for tests (internal/testes) and prints
# its home directory on stdout; progress goes to stderr. The distribution is the zip
# Elasticsearch publishes to Maven Central for integration tests: no bundled JDK (it
# runs on the machine's Java 17+), only the core modules. It is fetched with
# `mvn dependency:copy` and unpacked once per version into
# ${CFBENCH_CACHE:-$HOME/.cache/cf-benchmark}/es/<version>. Safe to run concurrently.
#
# Elasticsearch refuses to run as root. Run as root, this script also creates the system
# user cfbench-es (once) for tests to run the node as, and when that user cannot read
# the cache (a cache under /root, say) it copies the distribution, once, to
# /var/tmp/cf-benchmark-es/<version> and prints that instead.
#
# Example:
#   ES_HOME=$(scripts/install-es.sh)
#
# Environment, with defaults:
#   CFBENCH_ES_VERSION=8.19.5
#   CFBENCH_CACHE=~/.cache/cf-benchmark
#   CFBENCH_ES_USER=cfbench-es   the unprivileged user (when run as root)
set -euo pipefail

VERSION=${CFBENCH_ES_VERSION:-8.19.5}
CACHE=${CFBENCH_CACHE:-$HOME/.cache/cf-benchmark}/es/$VERSION
ES_USER=${CFBENCH_ES_USER:-cfbench-es}
ARTIFACT=org.elasticsearch.distribution.integ-test-zip:elasticsearch:$VERSION:zip
ES_HOME=$CACHE/elasticsearch-$VERSION

log() { printf 'install-es: %s\n' "$*" >&2; }

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"
	elif command -v sudo >/dev/null 2>&1; then sudo "$@"
	else log "need root to run: $*"; exit 1
	fi
}

missing=()
command -v mvn >/dev/null 2>&1 || missing+=(maven)
command -v unzip >/dev/null 2>&1 || missing+=(unzip)
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
if [ ${#missing[@]} -gt 0 ]; then
	log "installing Debian packages: ${missing[*]}"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
fi

mkdir -p "$CACHE"
# One installer at a time per version (test binaries of several packages start at once).
exec 9>"$CACHE/.lock"
flock 9

if [ ! -x "$ES_HOME/bin/elasticsearch" ]; then
	zip=$CACHE/elasticsearch-$VERSION.zip
	if [ ! -s "$zip" ]; then
		log "fetching $ARTIFACT with mvn"
		mvn -B -q -Dstyle.color=never dependency:copy -Dartifact="$ARTIFACT" -DoutputDirectory="$CACHE" >&2
	fi
	tmp=$(mktemp -d "$CACHE/unpack.XXXXXX")
	unzip -q "$zip" -d "$tmp"
	mv "$tmp/elasticsearch-$VERSION" "$ES_HOME"
	rmdir "$tmp"
	log "unpacked Elasticsearch $VERSION into $ES_HOME"
fi

if [ "$(id -u)" -eq 0 ]; then
	if ! id -u "$ES_USER" >/dev/null 2>&1; then
		if command -v useradd >/dev/null 2>&1; then
			useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$ES_USER" 2>/dev/null ||
				id -u "$ES_USER" >/dev/null 2>&1 # another installer may have won the race
			log "created system user $ES_USER"
		else
			ES_USER=nobody
		fi
	fi
	if ! runuser -u "$ES_USER" -- test -r "$ES_HOME/lib" -a -x "$ES_HOME/bin/elasticsearch" 2>/dev/null; then
		shared=/var/tmp/cf-benchmark-es/$VERSION
		mkdir -p /var/tmp/cf-benchmark-es
		exec 8>/var/tmp/cf-benchmark-es/.lock
		flock 8
		if [ ! -x "$shared/elasticsearch-$VERSION/bin/elasticsearch" ]; then
			mkdir -p "$shared"
			chmod 755 /var/tmp/cf-benchmark-es "$shared"
			tmp=$(mktemp -d "$shared/copy.XXXXXX")
			cp -a "$ES_HOME" "$tmp/"
			chmod -R a+rX "$tmp/elasticsearch-$VERSION"
			mv "$tmp/elasticsearch-$VERSION" "$shared/"
			rmdir "$tmp"
			log "$ES_USER cannot read $ES_HOME; copied it to $shared"
		fi
		ES_HOME=$shared/elasticsearch-$VERSION
	fi
fi

echo "$ES_HOME"
