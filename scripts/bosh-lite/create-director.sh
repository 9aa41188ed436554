#!/usr/bin/env bash
# Stands up a bosh-lite director and configures it for cf-deployment:
#
#   create-director.sh virtualbox   a VirtualBox VM at 192.168.56.6 (as bosh-deployment's
#                                   virtualbox/create-env.sh; adds a route to 10.244.0.0/16
#                                   with sudo)
#   create-director.sh docker       a Docker container on the local Docker daemon, its
#                                   VMs containers on the Docker network cfbench-bosh
#
# then uploads cf-deployment's bosh-lite cloud config and bosh-deployment's DNS runtime
# config. State and credentials (state.json, creds.yml) and env.sh, which sets the
# BOSH_* variables, go to the work dir (lib.sh). About 15 minutes.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cpi=${1:?usage: create-director.sh virtualbox|docker}
bosh=$(bosh_cli)
"$here/fetch.sh"
director_args "$cpi"
cloud_config_args "$cpi"
state=$work/director-$cpi
mkdir -p "$state"

case $cpi in
virtualbox)
	command -v VBoxManage >/dev/null || die "VirtualBox is not installed (VBoxManage not on PATH)"
	ip=192.168.56.6
	;;
docker)
	command -v docker >/dev/null || die "Docker is not installed (docker not on PATH)"
	docker network inspect cfbench-bosh >/dev/null 2>&1 ||
		docker network create --subnet 10.245.0.0/16 --gateway 10.245.0.1 cfbench-bosh >/dev/null
	ip=10.245.0.10
	;;
esac

log "creating the director ($cpi)"
"$bosh" create-env "${DIRECTOR_ARGS[@]}" --state "$state/state.json" --vars-store "$state/creds.yml"

if [ "$cpi" = virtualbox ] && ! ip route get 10.244.0.34 2>/dev/null | grep -q "via $ip"; then
	log "routing 10.244.0.0/16 through the director (sudo)"
	sudo ip route add 10.244.0.0/16 via "$ip"
fi

cat >"$work/env.sh" <<ENV
# Written by create-director.sh $cpi: source it for bosh commands.
export BOSH_ENVIRONMENT=$ip
export BOSH_CA_CERT="\$("$bosh" int "$state/creds.yml" --path /director_ssl/ca)"
export BOSH_CLIENT=admin
export BOSH_CLIENT_SECRET="\$("$bosh" int "$state/creds.yml" --path /admin_password)"
export CFBENCH_BOSH_CPI=$cpi
ENV
. "$work/env.sh"

log "uploading the cloud config and the DNS runtime config"
"$bosh" -n update-cloud-config "${CLOUD_CONFIG_ARGS[@]}" >/dev/null
"$bosh" -n update-runtime-config --name dns "$BOSH_DEPLOYMENT/runtime-configs/dns.yml" >/dev/null
log "director ready: . $work/env.sh, then scripts/bosh-lite/deploy-cf.sh"
