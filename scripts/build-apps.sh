#!/usr/bin/env bash
# Builds the sample apps (apps/README.md): the Java bulletin board's runnable jar with
# Maven (its dependencies come from Maven Central through mvn) and the Node.js bulletin
# board's modules with npm ci (pinned by its package-lock.json); the two proxies of the
# bake-off: proxy-java's jar (JDK only; it compiles bulletin-java's timings classes in) and
# proxy-node, which gets bulletin-node's lib/timings.js copied in, so that one source serves
# both and a push of apps/proxy-node is self-contained.
set -euo pipefail
cd "$(dirname "$0")/.."
# Maven lives seconds: the client compiler alone and the serial collector build with
# about half the CPU (as scripts/test-apps.sh runs its tests).
export MAVEN_OPTS="${MAVEN_OPTS:-} -XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
mvn -B -q -f apps/bulletin-java/pom.xml package -DskipTests
(cd apps/bulletin-node && npm ci --no-audit --no-fund --loglevel=error)
mvn -B -q -f apps/proxy-java/pom.xml package -DskipTests
cp apps/bulletin-node/lib/timings.js apps/proxy-node/lib/timings.js
