# Sourced by the scripts in this folder (not run): the pinned sources, where they are,
# and the one list of ops files and variables for the director and for cf, which
# render.sh renders with `bosh int` (e2e/boshlite_test.go) and create-director.sh and
# deploy-cf.sh deploy.
#
#   CFBENCH_BOSH_LITE   work dir: sources, director state and credentials
#                       (default: $HOME/.cache/cf-benchmark/bosh-lite)
#   BOSH_DEPLOYMENT     a bosh-deployment checkout (default: fetched at the pin)
#   CF_DEPLOYMENT       a cf-deployment checkout (default: fetched at the pin)

readonly CF_DEPLOYMENT_VERSION=v58.0.0
readonly BOSH_DEPLOYMENT_COMMIT=c3b2109
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=${CFBENCH_BOSH_LITE:-${HOME:?}/.cache/cf-benchmark/bosh-lite}
BOSH_DEPLOYMENT=${BOSH_DEPLOYMENT:-$work/bosh-deployment}
CF_DEPLOYMENT=${CF_DEPLOYMENT:-$work/cf-deployment}

log() { printf 'bosh-lite: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# The laptop's share for each cell group, in MB (README.md: 16 GB laptop, 12 GB VM).
: "${APPS_CELL_MEMORY_MB:=6144}" "${LOADGEN_CELL_MEMORY_MB:=3072}" "${SHARED_CELL_MEMORY_MB:=1024}"
: "${SYSTEM_DOMAIN:=bosh-lite.com}"

# director_args CPI sets DIRECTOR_ARGS: bosh.yml's ops files and variables for
# `bosh create-env` on VirtualBox (as bosh-deployment's virtualbox/create-env.sh) or
# on Docker (docker/cpi.yml over the local Docker socket).
director_args() {
	local b=$BOSH_DEPLOYMENT
	DIRECTOR_ARGS=("$b/bosh.yml")
	case $1 in
	virtualbox)
		DIRECTOR_ARGS+=(-o "$b/virtualbox/cpi.yml" -o "$b/virtualbox/outbound-network.yml" -o "$b/bosh-lite.yml"
			-o "$b/uaa.yml" -o "$b/credhub.yml" -o "$b/jumpbox-user.yml"
			-v director_name=bosh-lite -v internal_ip=192.168.56.6 -v internal_gw=192.168.56.1
			-v internal_cidr=192.168.56.0/24 -v outbound_network_name=NatNetwork)
		;;
	docker)
		DIRECTOR_ARGS+=(-o "$b/docker/cpi.yml" -o "$b/docker/unix-sock.yml" -o "$b/bosh-lite.yml"
			-o "$b/uaa.yml" -o "$b/credhub.yml" -o "$b/jumpbox-user.yml"
			-v director_name=docker -v internal_ip=10.245.0.10 -v internal_gw=10.245.0.1
			-v internal_cidr=10.245.0.0/16 -v network=cfbench-bosh -v docker_host=unix:///var/run/docker.sock)
		;;
	*) die "director: CPI is virtualbox or docker, got '$1'" ;;
	esac
}

# cloud_config_args CPI sets CLOUD_CONFIG_ARGS: cf-deployment's bosh-lite cloud config,
# on Docker with its network moved to the Docker network.
cloud_config_args() {
	CLOUD_CONFIG_ARGS=("$CF_DEPLOYMENT/iaas-support/bosh-lite/cloud-config.yml")
	[ "$1" = docker ] && CLOUD_CONFIG_ARGS+=(-o "$here/operations/docker-cloud-config.yml" -v network=cfbench-bosh)
	return 0
}

# cf_args CPI sets CF_ARGS: cf-deployment with operations/bosh-lite.yml, Postgres, the
# two isolation-segment cell groups (apps and loadgen) and operations/benchmark.yml.
cf_args() {
	local c=$CF_DEPLOYMENT/operations o=$here/operations
	CF_ARGS=("$CF_DEPLOYMENT/cf-deployment.yml" -o "$c/bosh-lite.yml" -o "$c/use-postgres.yml"
		-o "$c/add-persistent-isolation-segment-diego-cell.yml" -o "$o/cell-apps.yml"
		-o "$c/add-persistent-isolation-segment-diego-cell.yml" -o "$o/cell-loadgen.yml"
		-o "$o/benchmark.yml")
	[ "$1" = docker ] && CF_ARGS+=(-o "$o/docker.yml")
	CF_ARGS+=(-v system_domain="$SYSTEM_DOMAIN" -v apps_cell_memory_mb="$APPS_CELL_MEMORY_MB"
		-v loadgen_cell_memory_mb="$LOADGEN_CELL_MEMORY_MB" -v shared_cell_memory_mb="$SHARED_CELL_MEMORY_MB")
}

# bosh_cli prints the path of the bosh CLI (scripts/install-bosh-cli.sh builds it).
bosh_cli() { "$here/../install-bosh-cli.sh"; }
