#!/usr/bin/env bash
# Logs the cf CLI in to the bosh-lite Cloud Foundry that deploy-cf.sh made, applies
# terraform/ for it (org cfbench, spaces apps and loadgen on the isolation segments
# apps and loadgen, the results database as a user-provided instance of the
# deployment's Postgres, the egress to it), writes the outputs to
# $CFBENCH_BOSH_LITE/landscape.json and runs a spec on it:
#
#   landscape.sh [SPEC]     default examples/stub-on-cf.yml
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ -f "$work/env.sh" ] && [ -f "$work/cf-vars.yml" ] || die "no cf deployment: run create-director.sh and deploy-cf.sh first"
. "$work/env.sh"
root=$(cd "$here/../.." && pwd)
spec=${1:-$root/examples/stub-on-cf.yml}
bosh=$(bosh_cli)
tofu=$("$root/scripts/install-tofu.sh")
cf=${CF:-cf}
admin_password=$("$bosh" int "$work/cf-vars.yml" --path /cf_admin_password)
db_password=$("$bosh" int "$work/cf-vars.yml" --path /cfbench_db_password)
net=10.244.0.0/20
[ "$CFBENCH_BOSH_CPI" = docker ] && net=10.245.0.0/16

"$cf" api "https://api.$SYSTEM_DOMAIN" --skip-ssl-validation
"$cf" auth admin "$admin_password"

# Written each time (0600): the database password is in it.
umask 077
cat >"$work/landscape.tfvars.json" <<JSON
{
  "skip_ssl_validation": true,
  "results_db": {"name": "cfbench-results", "credentials": {"uri": "postgres://cfbench:$db_password@sql-db.service.cf.internal:5524/cfbench"}},
  "egress": [{"destination": "$net", "ports": "5524", "description": "the deployment's Postgres (results database)"}]
}
JSON
export CF_API_URL=https://api.$SYSTEM_DOMAIN CF_USER=admin CF_PASSWORD=$admin_password
"$tofu" -chdir="$root/terraform" init -input=false
"$tofu" -chdir="$root/terraform" apply -input=false -auto-approve -var-file="$work/landscape.tfvars.json"
"$tofu" -chdir="$root/terraform" output -json >"$work/landscape.json"
# The generator and tunnel binaries the run pushes: make build puts them in bin/.
export CFBENCH_BIN_DIR=${CFBENCH_BIN_DIR:-$root/bin}
"$cf" run-benchmark -f "$spec" --landscape "$work/landscape.json"
