# Shared by install-cf-cli.sh, install-tofu.sh and install-bosh-cli.sh (sourced, not
# run): build a command from a released Go module into a cache dir, once per machine.
#
# The caller sets TAG (the prefix of log lines), then calls
#   gomod_fetch MODULE VERSION
# which fetches the release and prepares a build module for it: GOMOD_SRC is then the
# module's source dir, GOMOD_HASH and GOMOD_TIME the proxy's record of the release
# commit and date (either may be empty), for version stamps; then
#   gomod_build PACKAGE OUT [go build flags...]
# builds the release's PACKAGE (".", or "./cmd/x") into the file OUT, written beside
# its final place and renamed so a reader never sees a half-written binary.

log() { printf '%s: %s\n' "$TAG" "$*" >&2; }

# The temporary dirs gomod_build made, removed when the calling script exits.
gomod_tmp=()
trap 'rm -rf "${gomod_tmp[@]}"' EXIT

gomod_fetch() {
	local module=$1 version=$2 work info go_line
	command -v go >/dev/null 2>&1 || { log "go is not on PATH; install Go first"; return 1; }
	work=$(mktemp -d)
	gomod_tmp+=("$work")
	GOMOD_WORK=$work GOMOD_MODULE=$module

	log "fetching $module@$version"
	info=$(cd "$work" && GOWORK=off go mod download -json "$module@$version") || { log "download failed: $info"; return 1; }
	# field NAME prints the first "NAME": "value" of the download record.
	field() { sed -n 's/^[[:space:]]*"'"$1"'": "\(.*\)",\{0,1\}$/\1/p' <<<"$info" | head -n 1; }
	GOMOD_SRC=$(field Dir)
	GOMOD_HASH=$(field Hash)
	[ -n "$GOMOD_SRC" ] && [ -f "$GOMOD_SRC/go.sum" ] || { log "no source for $module@$version in the module cache"; return 1; }

	# A throwaway module outside any workspace, so the project's go.mod is never touched.
	# It requires exactly the release, at the release's own go version, with the
	# release's own replace and godebug directives (they only apply in a main module,
	# so without them the build would differ from the release's: OpenTofu replaces
	# hashicorp/hcl/v2 with its fork). It starts from the release's go.sum: that file
	# came inside the module zip the checksum database just verified, so it vouches
	# for every dependency; `go get` would instead look up the go.mod of every module
	# in the graph, test-only ones included, and fails where one is not served.
	go_line=$(sed -n 's/^go \([0-9][0-9.]*\)$/\1/p' "$GOMOD_SRC/go.mod" | head -n 1)
	{
		printf 'module gomod-build\n\n'
		[ -n "$go_line" ] && printf 'go %s\n\n' "$go_line"
		printf 'require %s %s\n\n' "$module" "$version"
		directives "$GOMOD_SRC/go.mod"
	} >"$work/go.mod"
	{
		cat "$GOMOD_SRC/go.sum"
		printf '%s %s %s\n' "$module" "$version" "$(field Sum)"
		printf '%s %s/go.mod %s\n' "$module" "$version" "$(field GoModSum)"
	} >"$work/go.sum"
	GOMOD_TIME=$(cd "$work" && GOWORK=off go list -mod=mod -m -f '{{with .Time}}{{.UTC.Format "2006-01-02"}}{{end}}' "$module")
}

gomod_build() {
	local pkg=$1 out=$2 tmp_dir
	shift 2
	mkdir -p "$(dirname "$out")"
	tmp_dir=$(mktemp -d "$(dirname "$out")/.build.XXXXXX")
	gomod_tmp+=("$tmp_dir")
	log "building $GOMOD_MODULE $pkg (minutes on a cold build cache)"
	(cd "$GOMOD_WORK" && GOWORK=off CGO_ENABLED=0 go build -mod=mod "$@" -o "$tmp_dir/out" "$GOMOD_MODULE${pkg#.}") || return 1
	mv -f "$tmp_dir/out" "$out"
}

# directives FILE prints the replace and godebug directives of a go.mod, single-line
# and block forms alike. Local-path replacements (=> ./x) cannot be carried: the build
# fails on them, which is better than building something else.
directives() {
	awk '
		/^(replace|godebug)[[:space:]]*\(/ { block = 1; print; next }
		block { print; if ($0 ~ /^\)/) block = 0; next }
		/^(replace|godebug)[[:space:]]/ { print }
	' "$1"
}
