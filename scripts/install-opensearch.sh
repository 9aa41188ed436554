#!/usr/bin/env bash
# Installs OpenSearch's integ-test distribution for tests (internal/testos) and prints
# its home directory on stdout; progress goes to stderr. The distribution is the zip
# OpenSearch publishes to Maven Central for integration tests: no bundled JDK (it runs
# on the machine's Java 11, 17 or 21), no plugins (so no security plugin), only the
# transport module. It is fetched with `mvn dependency:copy` and unpacked once per
# version into ${CFBENCH_CACHE:-$HOME/.cache/cf-benchmark}/opensearch/<version>. Safe to
# run concurrently. It mirrors scripts/install-es.sh.
#
# OpenSearch refuses to run as root. Run as root, this script also creates the system
# user cfbench-es (once; the user Elasticsearch's tests run as) for tests to run the
# node as, and when that user cannot read the cache (a cache under /root, say) it copies
# the distribution, once, to /var/tmp/cf-benchmark-opensearch/<version> and prints that
# instead.
#
# Example:
#   OPENSEARCH_HOME=$(scripts/install-opensearch.sh)
#
# Environment, with defaults:
#   CFBENCH_OS_VERSION=2.19.6
#   CFBENCH_CACHE=~/.cache/cf-benchmark
#   CFBENCH_OS_USER=cfbench-es   the unprivileged user (when run as root)
set -euo pipefail

NAME=opensearch
VERSION=${CFBENCH_OS_VERSION:-2.19.6}
GROUP=org.opensearch.distribution.integ-test-zip
CACHE=${CFBENCH_CACHE:-$HOME/.cache/cf-benchmark}/opensearch/$VERSION
RUN_USER=${CFBENCH_OS_USER:-cfbench-es}
SHARED=/var/tmp/cf-benchmark-opensearch
TAG=install-opensearch
# shellcheck source=scripts/lib/integ-zip.sh
. "$(dirname "$0")/lib/integ-zip.sh"
install_integ_zip
