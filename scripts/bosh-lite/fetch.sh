#!/usr/bin/env bash
# Fetches bosh-deployment and cf-deployment at the pins in lib.sh into the work dir
# (once; a second run checks the pins and returns). Needs git and the internet.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# checkout DIR URL REF clones URL into DIR when missing and checks out REF.
checkout() {
	local dir=$1 url=$2 ref=$3
	if [ ! -d "$dir/.git" ]; then
		log "cloning $url into $dir"
		git clone -q "$url" "$dir"
	fi
	if [ "$(git -C "$dir" rev-parse HEAD)" != "$(git -C "$dir" rev-parse "$ref^{commit}" 2>/dev/null)" ]; then
		git -C "$dir" fetch -q --tags origin
		git -C "$dir" -c advice.detachedHead=false checkout -q "$ref"
	fi
	log "$(basename "$dir") at $ref"
}

mkdir -p "$work"
checkout "$BOSH_DEPLOYMENT" https://github.com/cloudfoundry/bosh-deployment "$BOSH_DEPLOYMENT_COMMIT"
checkout "$CF_DEPLOYMENT" https://github.com/cloudfoundry/cf-deployment "$CF_DEPLOYMENT_VERSION"
