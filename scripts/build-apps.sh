#!/usr/bin/env bash
# Builds the sample apps (apps/README.md): the Java bulletin board's runnable jar with
# Maven (its dependencies come from Maven Central through mvn) and the Node.js bulletin
# board's modules with npm ci (pinned by its package-lock.json).
set -euo pipefail
cd "$(dirname "$0")/.."
mvn -B -q -f apps/bulletin-java/pom.xml package -DskipTests
(cd apps/bulletin-node && npm ci --no-audit --no-fund --loglevel=error)
