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

NAME=elasticsearch
VERSION=${CFBENCH_ES_VERSION:-8.19.5}
GROUP=org.elasticsearch.distribution.integ-test-zip
CACHE=${CFBENCH_CACHE:-$HOME/.cache/cf-benchmark}/es/$VERSION
RUN_USER=${CFBENCH_ES_USER:-cfbench-es}
SHARED=/var/tmp/cf-benchmark-es
TAG=install-es
# shellcheck source=scripts/lib/integ-zip.sh
. "$(dirname "$0")/lib/integ-zip.sh"
install_integ_zip
