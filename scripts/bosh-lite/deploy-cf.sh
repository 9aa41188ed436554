#!/usr/bin/env bash
# Deploys cf-deployment with operations/bosh-lite.yml, Postgres, two isolation-segment
# cell groups (placement tags apps and loadgen) and operations/benchmark.yml to the
# director create-director.sh made (render.sh cf shows the manifest first). Uploads the
# stemcell cf-deployment names. About 60 minutes the first time (compiling releases).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ -f "$work/env.sh" ] || die "no director: run scripts/bosh-lite/create-director.sh first"
. "$work/env.sh"
bosh=$(bosh_cli)
cf_args "$CFBENCH_BOSH_CPI"

os=$("$bosh" int "$CF_DEPLOYMENT/cf-deployment.yml" --path /stemcells/alias=default/os)
version=$("$bosh" int "$CF_DEPLOYMENT/cf-deployment.yml" --path /stemcells/alias=default/version)
log "uploading the $os/$version warden stemcell"
"$bosh" upload-stemcell "https://bosh.io/d/stemcells/bosh-warden-boshlite-$os?v=$version"

# The two secrets landscape.sh needs (cf's admin password, the results database's)
# are ours, generated once, rather than CredHub's: no CredHub CLI needed to read them.
vars=$work/cf-vars.yml
if [ ! -f "$vars" ]; then
	umask 077
	printf 'cf_admin_password: %s\ncfbench_db_password: %s\n' "$(openssl rand -hex 16)" "$(openssl rand -hex 16)" >"$vars"
fi

log "deploying cf (apps cell ${APPS_CELL_MEMORY_MB} MB, loadgen cell ${LOADGEN_CELL_MEMORY_MB} MB, shared cell ${SHARED_CELL_MEMORY_MB} MB)"
"$bosh" -n -d cf deploy "${CF_ARGS[@]}" -l "$vars"
log "cf deployed: scripts/bosh-lite/landscape.sh logs in and applies terraform/"
