#!/usr/bin/env bash
# Renders what the other scripts deploy with `bosh int`, offline, from the same ops
# files and variables (lib.sh), and prints the manifest:
#
#   render.sh director virtualbox|docker   the director (bosh create-env's manifest)
#   render.sh cloud-config virtualbox|docker
#   render.sh cf virtualbox|docker         cf-deployment with our ops files
#
# Credentials stay ((placeholders)): the manifest's variables: section declares them,
# and bosh create-env (director) or the director's CredHub (cf) generates them. With
# RENDER_VAR_ERRS=1, bosh int fails naming every variable without a value (the
# declared credentials among them); with RENDER_WITHOUT_VARS=1 the scripts' own -v
# variables are left out. e2e/boshlite_test.go checks with both that the scripts give
# exactly the variables the manifests need. Run it before a deploy to review the manifest.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ $# -eq 2 ] || die "usage: render.sh director|cloud-config|cf virtualbox|docker"
bosh=$(bosh_cli)
case $1 in
director) director_args "$2"; args=("${DIRECTOR_ARGS[@]}") ;;
cloud-config) cloud_config_args "$2"; args=("${CLOUD_CONFIG_ARGS[@]}") ;;
cf) cf_args "$2"; args=("${CF_ARGS[@]}") ;;
*) die "render: what is director, cloud-config or cf, got '$1'" ;;
esac
if [ "${RENDER_WITHOUT_VARS:-}" = 1 ]; then
	kept=()
	for ((i = 0; i < ${#args[@]}; i++)); do
		if [ "${args[i]}" = -v ]; then i=$((i + 1)); else kept+=("${args[i]}"); fi
	done
	args=("${kept[@]}")
fi
[ "${RENDER_VAR_ERRS:-}" = 1 ] && args+=(--var-errs)
"$bosh" int "${args[@]}"
