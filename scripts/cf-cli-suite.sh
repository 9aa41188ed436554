#!/usr/bin/env bash
# Runs the real cf CLI's own integration specs (the selection of foundation/clisuite:
# integration/v7/push, isolated and env of global, minus foundation/clisuite/exclude.txt)
# against a fresh local foundation, which it starts and stops, and prints specs passed /
# run per file, per suite and in total. Flags go to tools/clisuite, e.g.
#   scripts/cf-cli-suite.sh -json result.json     # also a machine-readable result
#   scripts/cf-cli-suite.sh -quick                # the subset `make test` runs
# Exit status 0: every spec run passed; 1: some failed; 2: the run could not happen.
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./tools/clisuite "$@"
