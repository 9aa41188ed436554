# Shared by install-es.sh and install-opensearch.sh (sourced, not run): fetch a search
# engine's integ-test distribution zip with `mvn dependency:copy`, unpack it once per
# version into a cache, and, run as root, make it readable by an unprivileged user
# (both engines refuse to run as root). Prints the home directory on stdout.
#
# The caller sets, then calls install_integ_zip:
#   NAME      elasticsearch | opensearch (the zip's top directory and bin/ launcher)
#   VERSION   the version
#   GROUP     the Maven group of the integ-test zip
#   CACHE     the directory to unpack into (per version)
#   RUN_USER  the unprivileged user to create and check (when root)
#   SHARED    where to copy it when RUN_USER cannot read CACHE (e.g. /var/tmp/cf-benchmark-es)
#   TAG       the prefix of log lines

log() { printf '%s: %s\n' "$TAG" "$*" >&2; }

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"
	elif command -v sudo >/dev/null 2>&1; then sudo "$@"
	else log "need root to run: $*"; exit 1
	fi
}

install_integ_zip() {
	local artifact=$GROUP:$NAME:$VERSION:zip home=$CACHE/$NAME-$VERSION missing=() zip tmp shared
	command -v mvn >/dev/null 2>&1 || missing+=(maven)
	command -v unzip >/dev/null 2>&1 || missing+=(unzip)
	command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
	if [ ${#missing[@]} -gt 0 ]; then
		log "installing Debian packages: ${missing[*]}"
		as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
		as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
	fi

	mkdir -p "$CACHE"
	# One installer at a time per version (test binaries of several packages start at once).
	exec 9>"$CACHE/.lock"
	flock 9

	if [ ! -x "$home/bin/$NAME" ]; then
		zip=$CACHE/$NAME-$VERSION.zip
		if [ ! -s "$zip" ]; then
			log "fetching $artifact with mvn"
			mvn -B -q -Dstyle.color=never dependency:copy -Dartifact="$artifact" -DoutputDirectory="$CACHE" >&2
		fi
		tmp=$(mktemp -d "$CACHE/unpack.XXXXXX")
		unzip -q "$zip" -d "$tmp"
		mv "$tmp/$NAME-$VERSION" "$home"
		rmdir "$tmp"
		log "unpacked $NAME $VERSION into $home"
	fi

	if [ "$(id -u)" -eq 0 ]; then
		if ! id -u "$RUN_USER" >/dev/null 2>&1; then
			if command -v useradd >/dev/null 2>&1; then
				useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$RUN_USER" 2>/dev/null ||
					id -u "$RUN_USER" >/dev/null 2>&1 # another installer may have won the race
				log "created system user $RUN_USER"
			else
				RUN_USER=nobody
			fi
		fi
		if ! runuser -u "$RUN_USER" -- test -r "$home/lib" -a -x "$home/bin/$NAME" 2>/dev/null; then
			mkdir -p "$SHARED"
			exec 8>"$SHARED/.lock"
			flock 8
			if [ ! -x "$SHARED/$VERSION/$NAME-$VERSION/bin/$NAME" ]; then
				mkdir -p "$SHARED/$VERSION"
				chmod 755 "$SHARED" "$SHARED/$VERSION"
				tmp=$(mktemp -d "$SHARED/$VERSION/copy.XXXXXX")
				cp -a "$home" "$tmp/"
				chmod -R a+rX "$tmp/$NAME-$VERSION"
				mv "$tmp/$NAME-$VERSION" "$SHARED/$VERSION/"
				rmdir "$tmp"
				log "$RUN_USER cannot read $home; copied it to $SHARED/$VERSION"
			fi
			home=$SHARED/$VERSION/$NAME-$VERSION
		fi
	fi
	echo "$home"
}
