#!/usr/bin/env bash
# Load-generator benchmark: our tool and its peers (wrk, oha, hey, vegeta, k6) measured
# side by side in one run against the same target. Called by `make bench`, which builds
# bin/cf-benchmark first.
#
# Set-up: Debian's nginx (1 worker, access log off, a fixed 100-byte body, 127.0.0.1 on
# a free port) pinned to core 0; every generator pinned to core 1; 64 connections; each
# closed-loop figure the median of BENCH_REPEAT runs of BENCH_SECONDS. cf-benchmark's
# Postgres runs on core 0 too, beside nginx, so core 1 carries only generator work.
# Open loop (oha, vegeta, ours): the highest constant rate held with < 1% drift
# (achieved/target) and p99 < 10 ms, found by doubling from BENCH_OPEN_START, then
# bisecting.
#
# Writes a Markdown report to stdout and to BENCH_OUT; progress goes to stderr. Tools
# are installed once into $CFBENCH_CACHE/bench; a peer that cannot be installed is
# reported as skipped.
#
# Example (a quick trial, about 2 minutes once the tools are installed):
#   BENCH_SECONDS=3 BENCH_REPEAT=1 BENCH_OPEN_SECONDS=2 scripts/bench.sh
#
# Environment, with defaults:
#   BENCH_SECONDS=10        length of one closed-loop measurement
#   BENCH_REPEAT=3          closed-loop runs per generator (interleaved); medians reported
#   BENCH_CONNECTIONS=64    connections / users / VUs / workers
#   BENCH_OPEN_START=5000   first open-loop rate probed, requests/s
#   BENCH_OPEN_PROBES=8     open-loop probes per generator
#   BENCH_OPEN_SECONDS=5    length of one open-loop probe
#   BENCH_OPEN_P99_MS=10    a rate holds when p99 < this and drift < 1%
#   BENCH_ONLY=             space-separated subset of: wrk oha hey vegeta k6 cf-benchmark
#   BENCH_OUT=bench/results-latest.md
#   BENCH_KEEP=0            1 keeps the run's temp dir (configs, raw outputs) for a look
#   CFBENCH_CACHE=~/.cache/cf-benchmark
set -euo pipefail
cd "$(dirname "$0")/.."
T0=$(date +%s)

SECS=${BENCH_SECONDS:-10}
REPEAT=${BENCH_REPEAT:-3}
CONNS=${BENCH_CONNECTIONS:-64}
OPEN_START=${BENCH_OPEN_START:-5000}
OPEN_PROBES=${BENCH_OPEN_PROBES:-8}
OPEN_SECS=${BENCH_OPEN_SECONDS:-5}
OPEN_P99_MS=${BENCH_OPEN_P99_MS:-10}
ONLY=${BENCH_ONLY:-wrk oha hey vegeta k6 cf-benchmark}
OUT=${BENCH_OUT:-bench/results-latest.md}
CACHE=${CFBENCH_CACHE:-$HOME/.cache/cf-benchmark}/bench
GO=${GO:-go}

for v in SECS REPEAT CONNS OPEN_START OPEN_PROBES OPEN_SECS OPEN_P99_MS; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "bench: $v must be a positive integer, got '${!v}'" >&2; exit 2; }
done

HEY_MOD=github.com/rakyll/hey HEY_VER=v0.1.4
VEGETA_MOD=github.com/tsenart/vegeta/v12 VEGETA_VER=v12.12.0
K6_MOD=go.k6.io/k6 K6_VER=v0.54.0
OHA_VER=1.16.0
OURS="cf-benchmark (records every request into Postgres)"

log() { printf 'bench: %s\n' "$*" >&2; }
want() { [[ " $ONLY " == *" $1 "* ]]; }

# ---------------------------------------------------------------------------------------
# Clean-up: everything started here is tracked by PID and stopped on any exit.

TMP=$(mktemp -d "${TMPDIR:-/tmp}/cf-benchmark-bench.XXXXXX")
# Enterable by the unprivileged user Postgres runs as when we are root, so its data
# stays inside this dir.
chmod 711 "$TMP"
NGINX_PID=
CUR_PID=
PG_DIR=
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [ -n "$CUR_PID" ] && kill -0 "$CUR_PID" 2>/dev/null; then
		kill -TERM "$CUR_PID" 2>/dev/null || true
		wait "$CUR_PID" 2>/dev/null || true
	fi
	if [ -n "$NGINX_PID" ] && kill -0 "$NGINX_PID" 2>/dev/null; then
		kill -TERM "$NGINX_PID" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$NGINX_PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$NGINX_PID" 2>/dev/null || true
		wait "$NGINX_PID" 2>/dev/null || true
	fi
	if [ -n "$PG_DIR" ]; then
		timeout 60 scripts/pg-local.sh stop --state-dir "$PG_DIR" >/dev/null 2>&1 || log "could not stop the private Postgres in $PG_DIR"
	fi
	if [ "${BENCH_KEEP:-0}" = 1 ]; then
		log "kept $TMP"
	else
		rm -rf "$TMP"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------------------------------
# Installing what it needs, once.

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"
	elif command -v sudo >/dev/null 2>&1; then sudo "$@"
	else return 1
	fi
}

declare -A SKIP=() # generator -> why it is not measured
declare -A VERSION=()
mkdir -p "$CACHE/bin" "$CACHE/logs" "$CACHE/stamps"
export PATH="$CACHE/bin:$PATH"

apt_missing=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || apt_missing+=(nginx)
want wrk && ! command -v wrk >/dev/null 2>&1 && apt_missing+=(wrk)
[ -x /usr/bin/time ] || apt_missing+=(time)
command -v jq >/dev/null 2>&1 || apt_missing+=(jq)
command -v taskset >/dev/null 2>&1 || apt_missing+=(util-linux)
if [ ${#apt_missing[@]} -gt 0 ]; then
	log "installing Debian packages: ${apt_missing[*]}"
	{ as_root env DEBIAN_FRONTEND=noninteractive timeout 600 apt-get update -q &&
		as_root env DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -q --no-install-recommends "${apt_missing[@]}"; } \
		>"$CACHE/logs/apt.log" 2>&1 || log "apt-get failed (see $CACHE/logs/apt.log)"
fi
NGINX=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)
for need in /usr/bin/time jq taskset "$NGINX"; do
	command -v "$need" >/dev/null 2>&1 || { log "$need is missing and could not be installed; see $CACHE/logs/apt.log"; exit 1; }
done
if want wrk; then
	if command -v wrk >/dev/null 2>&1; then
		VERSION[wrk]=$(dpkg-query -W -f '${Version}' wrk 2>/dev/null || echo unknown)
	else
		SKIP[wrk]="the Debian package wrk could not be installed"
	fi
fi

# go_tool NAME MODULE VERSION: go install MODULE@VERSION into the cache, unless the
# binary there was built from that module version (its build info says).
go_tool() {
	local name=$1 mod=$2 ver=$3
	want "$name" || return 0
	if [ -x "$CACHE/bin/$name" ] && command -v "$GO" >/dev/null 2>&1 &&
		"$GO" version -m "$CACHE/bin/$name" 2>/dev/null | grep -qE "^[[:space:]]+mod[[:space:]]+${mod}[[:space:]]+${ver}([[:space:]]|$)"; then
		VERSION[$name]=$ver
		return 0
	fi
	if ! command -v "$GO" >/dev/null 2>&1; then
		SKIP[$name]="no Go toolchain to build $mod@$ver"
		return 0
	fi
	log "installing $name: go install $mod@$ver"
	# Outside the repo, so its go.mod plays no part.
	if ! (cd "$CACHE" && GOFLAGS='' timeout 300 "$GO" list -m "$mod@$ver") >"$CACHE/logs/$name.log" 2>&1; then
		SKIP[$name]="$mod@$ver is not served by the Go module proxy ($(tail -n1 "$CACHE/logs/$name.log"))"
		log "skipping $name: ${SKIP[$name]}"
		return 0
	fi
	if (cd "$CACHE" && GOFLAGS='' GOBIN="$CACHE/bin" timeout 1800 "$GO" install "$mod@$ver") >>"$CACHE/logs/$name.log" 2>&1; then
		VERSION[$name]=$ver
	else
		SKIP[$name]="go install $mod@$ver failed (log: $CACHE/logs/$name.log)"
		log "skipping $name: ${SKIP[$name]}"
	fi
}
go_tool hey "$HEY_MOD" "$HEY_VER"
go_tool vegeta "$VEGETA_MOD" "$VEGETA_VER"
go_tool k6 "$K6_MOD" "$K6_VER"

OHA_HOW=
if want oha; then
	stamp="$CACHE/stamps/oha"
	cargo=$(command -v cargo 2>/dev/null || { [ -x "$HOME/.cargo/bin/cargo" ] && echo "$HOME/.cargo/bin/cargo"; } || true)
	if [ -x "$CACHE/bin/oha" ] && [ "$("$CACHE/bin/oha" --version 2>/dev/null)" = "oha $OHA_VER" ]; then
		VERSION[oha]=$OHA_VER
		# How it was built, if this script built it.
		OHA_HOW=$(sed -n "s/^oha $OHA_VER *//p" "$stamp" 2>/dev/null || true)
	elif [ -z "$cargo" ]; then
		SKIP[oha]="cargo is not installed, so oha $OHA_VER cannot be built"
		log "skipping oha: ${SKIP[oha]}"
	else
		log "installing oha: cargo install oha --version $OHA_VER --features native-tls (compiles for several minutes)"
		args=(install oha --version "$OHA_VER" --features native-tls --root "$CACHE")
		if (cd "$CACHE" && timeout 3600 "$cargo" "${args[@]}") >"$CACHE/logs/oha.log" 2>&1; then
			OHA_HOW=""
		# The newest versions of oha's dependencies may need a newer Rust than this one
		# (cargo then fails at once); oha's own lock file pins the versions it shipped with.
		elif log "cargo install failed ($(grep -m1 -E 'requires rustc|^error' "$CACHE/logs/oha.log" || echo 'see log')); retrying with --locked" &&
			(cd "$CACHE" && timeout 3600 "$cargo" "${args[@]}" --locked) >>"$CACHE/logs/oha.log" 2>&1; then
			OHA_HOW="built with --locked"
		else
			SKIP[oha]="cargo install oha --version $OHA_VER failed (log: $CACHE/logs/oha.log)"
			log "skipping oha: ${SKIP[oha]}"
		fi
		if [ -z "${SKIP[oha]:-}" ]; then
			echo "oha $OHA_VER $OHA_HOW" >"$stamp"
			VERSION[oha]=$OHA_VER
		fi
	fi
fi

if want cf-benchmark; then
	if [ ! -x bin/cf-benchmark ]; then
		SKIP[cf-benchmark]="bin/cf-benchmark is missing: run make bench, which builds it"
	elif ! command -v psql >/dev/null 2>&1; then
		SKIP[cf-benchmark]="psql is missing (scripts/install-deps.sh installs PostgreSQL)"
	fi
	[ -n "${SKIP[cf-benchmark]:-}" ] && log "skipping cf-benchmark: ${SKIP[cf-benchmark]}"
	VERSION[cf-benchmark]=$(git describe --always --dirty 2>/dev/null || echo unknown)
fi

# ---------------------------------------------------------------------------------------
# Cores.

NCPU=$(nproc)
TARGET_CORE=0 GEN_CORE=1
CORE_NOTE=
if [ "$NCPU" -lt 2 ]; then
	GEN_CORE=0
	CORE_NOTE="Only one core: target and generators share it, so these figures say little."
	log "$CORE_NOTE"
fi

# ---------------------------------------------------------------------------------------
# The target.

URL_PORT=
start_nginx() {
	local dir="$TMP/nginx" body port
	mkdir -p "$dir/tmp"
	body=$(printf '%100s' '' | tr ' ' x) # 100 bytes
	for _ in 1 2 3 4 5; do
		port=$((20000 + RANDOM % 40000))
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue # taken
		sed -e "s|@DIR@|$dir|g" -e "s|@PORT@|$port|g" -e "s|@BODY@|$body|g" bench/nginx.conf.tmpl >"$dir/nginx.conf"
		: >"$dir/error.log"
		taskset -c "$TARGET_CORE" "$NGINX" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" </dev/null >"$dir/nginx.out" 2>&1 &
		NGINX_PID=$!
		for _ in $(seq 50); do
			kill -0 "$NGINX_PID" 2>/dev/null || break
			if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
				URL_PORT=$port
				return 0
			fi
			sleep 0.1
		done
		kill -TERM "$NGINX_PID" 2>/dev/null || true
		wait "$NGINX_PID" 2>/dev/null || true
		NGINX_PID=
		log "nginx did not come up on port $port: $(tail -n2 "$dir/error.log" | tr '\n' ' ')"
	done
	return 1
}
start_nginx || { log "could not start nginx"; exit 1; }
URL="http://127.0.0.1:$URL_PORT/"
# Check the body once, with nothing but bash.
exec 3<>"/dev/tcp/127.0.0.1/$URL_PORT"
printf 'GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
resp=$(timeout 5 cat <&3 | tr -d '\r') || true
exec 3>&-
[[ $resp == "HTTP/1.1 200"*$'\n'"Content-Length: 100"* ]] || { log "unexpected answer from nginx: $resp"; exit 1; }
NGINX_VERSION=$("$NGINX" -v 2>&1 | sed 's|.*nginx/||')
log "nginx $NGINX_VERSION (pid $NGINX_PID) on $URL, core $TARGET_CORE; generators on core $GEN_CORE"

# ---------------------------------------------------------------------------------------
# Postgres for our tool, started once, on the target's core.

DSN=
pg_pid=
if want cf-benchmark && [ -z "${SKIP[cf-benchmark]:-}" ]; then
	PG_DIR="$TMP/pg"
	if DSN=$(taskset -c "$TARGET_CORE" timeout 180 scripts/pg-local.sh start --state-dir "$PG_DIR" 2>"$TMP/pg-start.err" | tail -n1) && [ -n "$DSN" ]; then
		pg_pid=$(scripts/pg-local.sh status --state-dir "$PG_DIR" 2>/dev/null | sed -n 's/^running: pid \([0-9]*\).*/\1/p')
		# Children fork from the postmaster and inherit its affinity; pin what is there
		# already in case the server was started some other way.
		for p in $pg_pid $(pgrep -P "${pg_pid:-0}" 2>/dev/null || true); do
			taskset -pc "$TARGET_CORE" "$p" >/dev/null 2>&1 || true
		done
		log "postgres (pid ${pg_pid:-?}) on core $TARGET_CORE"
	else
		SKIP[cf-benchmark]="the private Postgres did not start: $(tail -n1 "$TMP/pg-start.err")"
		log "skipping cf-benchmark: ${SKIP[cf-benchmark]}"
		DSN=
	fi
fi

# ---------------------------------------------------------------------------------------
# Measuring one generator run: pinned to the generator core, bounded in time, CPU and peak
# RSS of its whole process tree from GNU time (children's rusage, so nothing escapes).
# Sets EL (elapsed s), CPU (user+sys s), RSS_MB; returns the generator's exit code.

# settle waits (90 s at most) until the sockets an earlier measurement left in TIME_WAIT
# on the target's port are few, so no run starts short of local ports.
settle() {
	local n i
	command -v ss >/dev/null 2>&1 || return 0
	for ((i = 0; i < 90; i++)); do
		n=$(ss -Htan state time-wait "( sport = :$URL_PORT or dport = :$URL_PORT )" 2>/dev/null | wc -l)
		[ "$n" -gt 2000 ] || return 0
		[ "$i" -gt 0 ] || log "  waiting for $n sockets in TIME_WAIT to clear"
		sleep 1
	done
}

# The machine may be shared (other people's builds and tests on the same cores). Every
# process's CPU ticks (own + reaped children) are read from /proc before and after a
# measurement; what processes outside this run (not this script's tree, not its
# Postgres, not kernel threads) used in between is reported as "foreign" CPU.
cpu_snapshot() {
	cat /proc/[0-9]*/stat 2>/dev/null | awk '{
		line = $0; pid = $1; o = index(line, "("); match(line, /.*\)/); e = RLENGTH
		comm = substr(line, o + 1, e - o - 1); gsub(/[^A-Za-z0-9._:\/-]/, "_", comm)
		n = split(substr(line, e + 2), f, " ")
		if (n >= 15) print pid, f[2], f[12] + f[13] + f[14] + f[15], comm
	}' >"$1" || true
}

# foreign_cpu BEFORE AFTER: prints "SECONDS TOP" (TOP: the three busiest foreign commands).
foreign_cpu() {
	awk -v self="$$" -v pg="${pg_pid:-0}" -v hz="$HZ" '
		FNR == NR { t0[$1] = $3; next }
		{ ppid[$1] = $2; t1[$1] = $3; comm[$1] = $4 }
		END {
			for (p in t1) {
				if (!(p in t0) || p == 2 || ppid[p] == 2) continue
				ours = 0
				for (q = p; q != "" && q > 1; q = ppid[q]) if (q == self || q == pg) { ours = 1; break }
				if (ours) continue
				d = t1[p] - t0[p]
				if (d > 0) { sum += d; by[comm[p]] += d }
			}
			top = ""
			for (k = 0; k < 3; k++) {
				best = ""; bv = 0
				for (c in by) if (by[c] > bv) { bv = by[c]; best = c }
				if (best == "") break
				top = top (top == "" ? "" : ",") best ":" sprintf("%.1fs", bv / hz); delete by[best]
			}
			printf "%.2f %s\n", sum / hz, (top == "" ? "-" : top)
		}' "$1" "$2"
}
HZ=$(getconf CLK_TCK 2>/dev/null || echo 100)
QUIET_LEFT=${BENCH_QUIET_WAIT:-900}

# quiet waits while processes outside this run use more than 10% of a core, spending at
# most BENCH_QUIET_WAIT seconds (default 900) over the whole run.
quiet() {
	local f top first=1
	while :; do
		cpu_snapshot "$TMP/q0"
		sleep 1
		cpu_snapshot "$TMP/q1"
		read -r f top < <(foreign_cpu "$TMP/q0" "$TMP/q1")
		awk -v f="$f" 'BEGIN{exit !(f > 0.1)}' || return 0
		if [ "$QUIET_LEFT" -le 0 ]; then
			[ "$first" = 0 ] || log "  the machine is busy (other processes: $top per second); measuring anyway"
			return 0
		fi
		[ "$first" = 0 ] || log "  waiting for the machine to quiet down (other processes: $top per second)"
		first=0
		sleep 4
		QUIET_LEFT=$((QUIET_LEFT - 5))
	done
}

FOREIGN_TOTAL=0 MEASURED_TOTAL=0
measure() { # measure OUTPREFIX LIMIT_S cmd...
	local pre=$1 lim=$2 rc=0
	shift 2
	settle
	quiet
	cpu_snapshot "$pre.cpu0"
	taskset -c "$GEN_CORE" timeout -k 5 "$lim" /usr/bin/time -o "$pre.time" -f '%e %U %S %M' "$@" \
		</dev/null >"$pre.out" 2>"$pre.err" &
	CUR_PID=$!
	wait "$CUR_PID" || rc=$?
	CUR_PID=
	cpu_snapshot "$pre.cpu1"
	read -r FOREIGN FOREIGN_TOP < <(foreign_cpu "$pre.cpu0" "$pre.cpu1")
	local t
	t=$(tail -n1 "$pre.time" 2>/dev/null || true)
	if [[ $t =~ ^([0-9.]+)\ ([0-9.]+)\ ([0-9.]+)\ ([0-9]+)$ ]]; then
		EL=${BASH_REMATCH[1]}
		CPU=$(awk -v u="${BASH_REMATCH[2]}" -v s="${BASH_REMATCH[3]}" 'BEGIN{printf "%.2f", u+s}')
		RSS_MB=$(awk -v k="${BASH_REMATCH[4]}" 'BEGIN{printf "%.1f", k/1024}')
		FOREIGN_TOTAL=$(awk -v a="$FOREIGN_TOTAL" -v b="$FOREIGN" 'BEGIN{print a + b}')
		MEASURED_TOTAL=$(awk -v a="$MEASURED_TOTAL" -v b="$EL" 'BEGIN{print a + b}')
		if awk -v f="$FOREIGN" -v e="$EL" 'BEGIN{exit !(f > 0.05 * e)}'; then
			log "  other processes used ${FOREIGN} CPU-s during this measurement ($FOREIGN_TOP)"
		fi
	else
		EL=0 CPU=0 RSS_MB=0
		[ "$rc" -ne 0 ] || rc=1
	fi
	return "$rc"
}

num() { [[ ${1:-} =~ ^[0-9]+([.][0-9]+)?([eE][+-]?[0-9]+)?$ ]]; }

# Each closed_* function runs one closed-loop measurement, writing raw output under
# $TMP/runs, and sets REQ (successful responses), DUR (seconds they took), BAD (errors and
# non-2xx) and EXTRA (a note); it returns non-zero with WHY set when the run failed.
mkdir -p "$TMP/runs"
LIMIT=$((SECS + 60))

closed_wrk() {
	local pre=$1
	measure "$pre" "$LIMIT" wrk -t1 -c"$CONNS" -d"${SECS}s" --timeout 10s "$URL" || { WHY="wrk exited with an error: $(head -c 200 "$pre.err")"; return 1; }
	local line non2xx sock
	line=$(grep -E '^ *[0-9]+ requests in [0-9.]+s' "$pre.out" || true)
	[ -n "$line" ] || { WHY="no 'requests in' line in wrk's output"; return 1; }
	REQ=$(awk '{print $1}' <<<"$line")
	DUR=$(awk '{sub(/s,?$/, "", $4); print $4}' <<<"$line")
	non2xx=$(sed -n 's/.*Non-2xx or 3xx responses: *\([0-9]*\).*/\1/p' "$pre.out")
	sock=$(sed -n 's/.*Socket errors: connect \([0-9]*\), read \([0-9]*\), write \([0-9]*\), timeout \([0-9]*\).*/\1 \2 \3 \4/p' "$pre.out" | awk '{print $1+$2+$3+$4}')
	BAD=$(( ${non2xx:-0} + ${sock:-0} ))
	REQ=$((REQ - ${non2xx:-0}))
	EXTRA=
}

closed_hey() {
	local pre=$1
	measure "$pre" "$LIMIT" hey -c "$CONNS" -z "${SECS}s" "$URL" || { WHY="hey exited with an error: $(head -c 200 "$pre.err")"; return 1; }
	REQ=$(awk '/^Status code distribution:/{f=1; next} f && /^ *\[2[0-9][0-9]\]/{n+=$2} f && /^$/{f=0} END{print n+0}' "$pre.out")
	BAD=$(awk '/^Status code distribution:/{f=1; next} f && /^ *\[[013-9][0-9][0-9]\]/{n+=$2} /^Error distribution:/{e=1; next} e && /^ *\[[0-9]+\]/{gsub(/[][]/, "", $1); n+=$1} END{print n+0}' "$pre.out")
	DUR=$(awk '/^ *Total:/{print $2; exit}' "$pre.out")
	num "$DUR" && [ "$REQ" -gt 0 ] || { WHY="could not read hey's summary"; return 1; }
	EXTRA=
}

closed_oha() {
	local pre=$1
	measure "$pre" "$LIMIT" oha -c "$CONNS" -z "${SECS}s" --no-tui --output-format json "$URL" || { WHY="oha exited with an error: $(head -c 200 "$pre.err")"; return 1; }
	oha_parse "$pre" || return 1
	EXTRA=
}

oha_parse() { # sets REQ DUR BAD P99MS from oha's JSON
	local pre=$1
	jq -e .summary "$pre.out" >/dev/null 2>&1 || { WHY="oha printed no JSON summary"; return 1; }
	REQ=$(jq '[.statusCodeDistribution // {} | to_entries[] | select(.key | startswith("2")) | .value] | add // 0' "$pre.out")
	BAD=$(jq '([.statusCodeDistribution // {} | to_entries[] | select(.key | startswith("2") | not) | .value] | add // 0)
		+ ([.errorDistribution // {} | to_entries[] | select(.key | test("deadline") | not) | .value] | add // 0)' "$pre.out")
	DUR=$(jq '.summary.total' "$pre.out")
	P99MS=$(jq '(.latencyPercentiles.p99 // 0) * 1000' "$pre.out")
}

closed_vegeta() {
	local pre=$1
	printf 'GET %s\n' "$URL" >"$TMP/vegeta.targets"
	measure "$pre" "$LIMIT" vegeta attack -rate=0 -max-workers="$CONNS" -workers="$CONNS" -duration="${SECS}s" \
		-targets="$TMP/vegeta.targets" -output="$pre.bin" || { WHY="vegeta exited with an error: $(head -c 200 "$pre.err")"; return 1; }
	vegeta_parse "$pre" || return 1
	EXTRA=
}

vegeta_parse() { # sets REQ DUR BAD P99MS from vegeta's results (the report is not timed)
	local pre=$1
	timeout 120 vegeta report -type=json "$pre.bin" >"$pre.json" 2>>"$pre.err" || { WHY="vegeta report failed"; return 1; }
	REQ=$(jq '[.status_codes // {} | to_entries[] | select(.key | startswith("2")) | .value] | add // 0' "$pre.json")
	BAD=$(jq '.requests - ([.status_codes // {} | to_entries[] | select(.key | startswith("2")) | .value] | add // 0)' "$pre.json")
	DUR=$(jq '(.duration + .wait) / 1e9' "$pre.json")
	P99MS=$(jq '.latencies."99th" / 1e6' "$pre.json")
	rm -f "$pre.bin"
}

closed_k6() {
	local pre=$1
	measure "$pre" "$LIMIT" env K6_NO_USAGE_REPORT=true K6_WEB_DASHBOARD=false \
		TARGET="$URL" VUS="$CONNS" DURATION="${SECS}s" \
		k6 run --quiet --no-color --no-usage-report --address= --summary-export="$pre.json" bench/k6-closed.js ||
		{ WHY="k6 exited with an error: $(tail -c 300 "$pre.err")"; return 1; }
	local count rate failed
	count=$(jq '.metrics.http_reqs.count' "$pre.json")
	rate=$(jq '.metrics.http_reqs.rate' "$pre.json")
	# http_req_failed is a rate metric: "passes" counts the failed requests.
	failed=$(jq '.metrics.http_req_failed.passes // 0' "$pre.json")
	num "$count" && num "$rate" || { WHY="could not read k6's summary export"; return 1; }
	REQ=$((count - failed))
	BAD=$failed
	DUR=$(awk -v c="$count" -v r="$rate" 'BEGIN{printf "%.3f", c/r}')
	EXTRA=
}

psql_q() { PGCONNECT_TIMEOUT=10 timeout 120 psql "$DSN" -X -q -A -t -v ON_ERROR_STOP=1 -c "$1"; }

# ours_spec TEMPLATE FILE HOLD_S WARMUP [RATE]
ours_spec() {
	sed -e "s|@PORT@|$URL_PORT|g" -e "s|@USERS@|$CONNS|g" -e "s|@HOLD@|${3}s|g" -e "s|@WARMUP@|$4|g" \
		-e "s|@EXPORT@|$TMP/export|g" -e "s|@RATE@|${5:-0}|g" "$1" >"$2"
}

# ours_run PRE SPEC: one run of our tool; sets RUN_ID and ours_rc; 0 when it completed.
ours_run() {
	local pre=$1 spec=$2
	ours_rc=0
	measure "$pre" "$LIMIT" bin/cf-benchmark run -f "$spec" --db "$DSN" || ours_rc=$?
	RUN_ID=$(sed -n 's/^run \([0-9]\{8\}-[0-9]\{6\}-[0-9a-z]*\) completed.*/\1/p' "$pre.out" | tail -n1)
	[ "$ours_rc" -eq 0 ] && [ -n "$RUN_ID" ]
}

closed_cf-benchmark() {
	local pre=$1
	local warm=1s
	[ "$SECS" -ge 3 ] || warm=200ms
	ours_spec bench/cfbench-closed.yml.tmpl "$pre.yml" "$SECS" "$warm"
	ours_run "$pre" "$pre.yml" || { WHY="cf-benchmark run exited $ours_rc: $(tail -c 300 "$pre.err")"; return 1; }
	# Every stored sample, warm-up included: the summary's count leaves warm-up out.
	REQ=$(psql_q "SELECT count(*) FROM samples s JOIN workers w ON w.id = s.worker_id WHERE w.run_id = '$RUN_ID' AND s.status BETWEEN 200 AND 299")
	BAD=$(psql_q "SELECT count(*) FROM samples s JOIN workers w ON w.id = s.worker_id WHERE w.run_id = '$RUN_ID' AND NOT s.status BETWEEN 200 AND 299")
	DUR=$(psql_q "SELECT extract(epoch FROM max(ended_at) - min(started_at)) FROM steps WHERE run_id = '$RUN_ID'")
	local dropped
	dropped=$(psql_q "SELECT coalesce(sum(dropped), 0) FROM workers WHERE run_id = '$RUN_ID'")
	num "$REQ" && num "$DUR" || { WHY="could not read run $RUN_ID from Postgres"; return 1; }
	EXTRA=
	[ "${dropped:-0}" = 0 ] || EXTRA="$dropped samples dropped"
}

# ---------------------------------------------------------------------------------------
# Open-loop probes: open_* RATE PRE sets ACH (2xx responses per second over the probe),
# P99MS, CPU, RSS_MB, BAD; returns 3 when the generator cannot do open loop, non-zero
# with WHY on other failures.

OPEN_LIMIT=$((OPEN_SECS + 60))

open_oha() {
	local rate=$1 pre=$2
	# --latency-correction: latency from the intended send time, as ours measures it.
	measure "$pre" "$OPEN_LIMIT" oha -c "$CONNS" -q "$rate" --latency-correction -z "${OPEN_SECS}s" \
		--no-tui --output-format json "$URL" || { WHY="oha exited with an error: $(head -c 200 "$pre.err")"; return 1; }
	oha_parse "$pre" || return 1
	ACH=$(awk -v n="$REQ" -v s="$OPEN_SECS" 'BEGIN{printf "%.1f", n/s}')
}

open_vegeta() {
	local rate=$1 pre=$2
	printf 'GET %s\n' "$URL" >"$TMP/vegeta.targets"
	# At most CONNS workers, as oha's -c: left unbounded, vegeta answers a rate it cannot
	# hold with thousands of new connections, and the TIME_WAIT sockets they leave starve
	# the next measurements of ports.
	measure "$pre" "$OPEN_LIMIT" vegeta attack -rate="$rate/1s" -workers="$CONNS" -max-workers="$CONNS" -duration="${OPEN_SECS}s" \
		-targets="$TMP/vegeta.targets" -output="$pre.bin" || { WHY="vegeta exited with an error: $(head -c 200 "$pre.err")"; return 1; }
	vegeta_parse "$pre" || return 1
	ACH=$(awk -v n="$REQ" -v s="$OPEN_SECS" 'BEGIN{printf "%.1f", n/s}')
}

open_cf-benchmark() {
	local rate=$1 pre=$2
	# No warm-up, as the peers' probes have none.
	ours_spec bench/cfbench-open.yml.tmpl "$pre.yml" "$OPEN_SECS" 0s "$rate"
	if ! ours_run "$pre" "$pre.yml"; then
		if [ "$ours_rc" -eq 2 ] && grep -q 'not supported yet' "$pre.err"; then
			WHY="not yet supported: $(grep -m1 'not supported yet' "$pre.err" | sed 's/^error: //')"
			return 3
		fi
		WHY="cf-benchmark run exited $ours_rc: $(tail -c 300 "$pre.err")"
		return 1
	fi
	# Over the nominal probe length, as for the peers: sends the generator could not make
	# (missed) lower it, late ones show in p99, which counts from the intended send time.
	local q="FROM samples s JOIN workers w ON w.id = s.worker_id WHERE w.run_id = '$RUN_ID'"
	REQ=$(psql_q "SELECT count(*) $q AND s.status BETWEEN 200 AND 299")
	BAD=$(psql_q "SELECT count(*) $q AND NOT s.status BETWEEN 200 AND 299")
	P99MS=$(psql_q "SELECT coalesce(percentile_disc(0.99) WITHIN GROUP (ORDER BY s.latency_us), 0) / 1000.0 $q")
	num "$REQ" && num "$P99MS" || { WHY="could not read run $RUN_ID from Postgres"; return 1; }
	ACH=$(awk -v n="$REQ" -v s="$OPEN_SECS" 'BEGIN{printf "%.1f", n/s}')
}

# ---------------------------------------------------------------------------------------
# The measurements.

GENS=(wrk oha hey vegeta k6 cf-benchmark)
declare -A LABEL=(
	[wrk]="wrk ${VERSION[wrk]:-} (Debian)" [oha]="oha $OHA_VER" [hey]="hey $HEY_VER"
	[vegeta]="vegeta $VEGETA_VER" [k6]="k6 $K6_VER" [cf-benchmark]="$OURS"
)
declare -A NOTE=() FAILS=()
active=()
for g in "${GENS[@]}"; do
	want "$g" || continue
	if [ -n "${SKIP[$g]:-}" ]; then continue; fi
	active+=("$g")
done

median() { sort -g | awk '{a[NR]=$1} END{if (NR == 0) print ""; else if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# Closed loop, interleaved: run r of every generator before run r+1 of any, so a slow
# drift of the machine spreads over all of them.
for ((r = 1; r <= REPEAT; r++)); do
	for g in "${active[@]}"; do
		pre="$TMP/runs/$g.closed.$r"
		log "closed loop: $g, run $r/$REPEAT (${SECS}s)"
		REQ=0 DUR=0 BAD=0 EXTRA='' WHY=''
		if "closed_$g" "$pre"; then
			awk -v n="$REQ" -v d="$DUR" -v c="$CPU" -v m="$RSS_MB" -v b="$BAD" -v f="$FOREIGN" \
				'BEGIN{printf "%.1f %.0f %.1f %d %.2f %.2f\n", n/d, (c > 0 ? n/c : 0), m, b, c, f}' >>"$TMP/runs/$g.closed"
			[ -z "$EXTRA" ] || NOTE[$g]="${NOTE[$g]:+${NOTE[$g]}; }$EXTRA"
			log "  $REQ responses in ${DUR}s, CPU ${CPU}s, peak RSS ${RSS_MB} MB, $BAD errors"
		else
			FAILS[$g]="${FAILS[$g]:+${FAILS[$g]}; }run $r: $WHY"
			log "  failed: $WHY"
		fi
	done
done

# Open loop: doubling from OPEN_START until a rate fails, then bisecting, OPEN_PROBES
# probes at most.
declare -A OPEN_ROW=() OPEN_NOTE=()
for g in oha vegeta cf-benchmark; do
	[[ " ${active[*]} " == *" $g "* ]] || continue
	lo=0 hi=0 rate=$OPEN_START best='' why_hi=''
	for ((i = 1; i <= OPEN_PROBES; i++)); do
		pre="$TMP/runs/$g.open.$rate"
		log "open loop: $g at $rate req/s (${OPEN_SECS}s, probe $i/$OPEN_PROBES)"
		ACH=0 P99MS=0 BAD=0 WHY=
		rc=0
		"open_$g" "$rate" "$pre" || rc=$?
		if [ "$rc" -eq 3 ]; then
			OPEN_ROW[$g]="unsupported"
			OPEN_NOTE[$g]=$WHY
			log "  $WHY"
			break
		elif [ "$rc" -ne 0 ]; then
			ok=0 verdict="failed: $WHY"
		else
			read -r ok verdict < <(awk -v a="$ACH" -v t="$rate" -v p="$P99MS" -v lim="$OPEN_P99_MS" -v b="$BAD" 'BEGIN{
				d = (a / t - 1) * 100; ok = (d > -1 && d < 1 && p < lim && b == 0)
				printf "%d achieved %.0f/s (drift %+.2f%%), p99 %.2f ms, %d errors\n", ok, a, d, p, b}')
		fi
		log "  $verdict"
		if [ "$ok" = 1 ]; then
			lo=$rate
			best=$(awk -v a="$ACH" -v c="$CPU" -v m="$RSS_MB" -v p="$P99MS" 'BEGIN{printf "%.1f %.0f %.1f %.2f %.2f", a, (c > 0 ? a * '"$OPEN_SECS"' / c : 0), m, p, c}')
		else
			hi=$rate why_hi="$rate/s: ${verdict#failed: }"
		fi
		if [ "$hi" -eq 0 ]; then
			rate=$((rate * 2))
		else
			# Stop when the bracket is within 2.5% (or 250 req/s).
			step=$(((hi - lo) / 2))
			[ "$step" -gt 125 ] && [ $((hi - lo)) -gt $((lo / 40)) ] || break
			rate=$(((lo + hi) / 2 / 250 * 250))
			[ "$rate" -gt "$lo" ] || rate=$((lo + 250))
			[ "$rate" -lt "$hi" ] || break
		fi
	done
	[ "${OPEN_ROW[$g]:-}" = unsupported ] && continue
	if [ -n "$best" ]; then
		OPEN_ROW[$g]=$best
		OPEN_NOTE[$g]="held $lo req/s (p99 $(awk '{print $4}' <<<"$best") ms)"
		if [ "$hi" -gt 0 ]; then OPEN_NOTE[$g]+="; $why_hi"; else OPEN_NOTE[$g]+="; every probe held (raise BENCH_OPEN_PROBES)"; fi
	else
		OPEN_ROW[$g]=none
		OPEN_NOTE[$g]="no rate held; lowest probe $why_hi"
	fi
done

# ---------------------------------------------------------------------------------------
# The report.

fmt_int() { awk -v x="$1" 'BEGIN{ s = sprintf("%.0f", x); n = length(s); o = ""; for (i = 1; i <= n; i++) { o = o substr(s, i, 1); if ((n - i) % 3 == 0 && i < n) o = o "," } print o }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a == "" || b == "" || b == 0) print "–"; else printf "%.2f×", a / b }'; }

declare -A C_RPS=() C_EFF=() C_RSS=()
for g in "${active[@]}"; do
	[ -s "$TMP/runs/$g.closed" ] || continue
	C_RPS[$g]=$(awk '{print $1}' "$TMP/runs/$g.closed" | median)
	C_EFF[$g]=$(awk '{print $2}' "$TMP/runs/$g.closed" | median)
	C_RSS[$g]=$(awk '{print $3}' "$TMP/runs/$g.closed" | median)
	errs=$(awk '{n += $4} END{print n+0}' "$TMP/runs/$g.closed")
	[ "$errs" = 0 ] || NOTE[$g]="${NOTE[$g]:+${NOTE[$g]}; }$errs errors or non-2xx over all runs"
	if [ "$g" = cf-benchmark ]; then
		NOTE[$g]="${NOTE[$g]:+${NOTE[$g]}; }median CPU $(awk '{print $5}' "$TMP/runs/$g.closed" | median) s per run"
	fi
	foreign=$(awk '{f += $6} END{printf "%.1f", f}' "$TMP/runs/$g.closed")
	if awk -v f="$foreign" -v s="$SECS" -v n="$(wc -l <"$TMP/runs/$g.closed")" 'BEGIN{exit !(f > 0.05 * s * n)}'; then
		NOTE[$g]="${NOTE[$g]:+${NOTE[$g]}; }**other processes used $foreign CPU-s during its runs**"
	fi
	nruns=$(wc -l <"$TMP/runs/$g.closed")
	[ "$nruns" -eq "$REPEAT" ] || NOTE[$g]="${NOTE[$g]:+${NOTE[$g]}; }median of $nruns run(s), not $REPEAT"
done
O_EFF_OHA=
[[ ${OPEN_ROW[oha]:-} =~ ^[0-9] ]] && O_EFF_OHA=$(awk '{print $2}' <<<"${OPEN_ROW[oha]}")

closed_note() {
	case $1 in
	wrk) echo "\`-t1 -c$CONNS -d${SECS}s\`; C + LuaJIT, event loop" ;;
	oha) echo "\`-c $CONNS -z ${SECS}s --no-tui\`${OHA_HOW:+; $OHA_HOW}" ;;
	hey) echo "\`-c $CONNS -z ${SECS}s\`" ;;
	vegeta) echo "\`attack -rate=0 -max-workers=$CONNS -workers=$CONNS -duration=${SECS}s\` (results to a file; \`report\` not timed)" ;;
	k6) echo "constant-vus, $CONNS VUs, ${SECS}s, \`discardResponseBodies\`" ;;
	cf-benchmark) echo "closed, $CONNS users, 1 instance, hold ${SECS}s (1 s warm-up counted); requests = every sample stored in Postgres; CPU-s = the whole process (start-up, migrations, run, summary, export of the steps table)" ;;
	esac
}

report() {
	local g rps eff rss note
	echo "# Load-generator benchmark"
	echo
	echo "Generated by \`scripts/bench.sh\` (\`make bench\`) on $(date -u '+%Y-%m-%d %H:%M UTC'); took $(( ($(date +%s) - T0) / 60 )) min $(( ($(date +%s) - T0) % 60 )) s."
	echo
	echo "- Machine: $NCPU cores ($(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n1)), $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo), kernel $(uname -r), $(sed -n 's/^PRETTY_NAME="\(.*\)"/\1/p' /etc/os-release 2>/dev/null)"
	echo "- Target: nginx $NGINX_VERSION, 1 worker, access log off, fixed 100-byte body, 127.0.0.1, pinned to core $TARGET_CORE. Generators pinned to core $GEN_CORE (Go tools therefore run with GOMAXPROCS=1)."
	echo "- Closed loop: $CONNS connections, ${SECS} s per run, median of $REPEAT run(s) per column, runs interleaved across generators."
	echo "- Open loop: highest constant rate with < 1% drift (2xx responses per second / target) and p99 < $OPEN_P99_MS ms and no errors; doubling from $OPEN_START req/s then bisecting, at most $OPEN_PROBES probes of $OPEN_SECS s. One search, not a median."
	echo "- req per CPU-s: successful responses / (user + system CPU seconds of the generator's whole process tree, from GNU time). Peak RSS: max RSS from GNU time."
	echo "- cf-benchmark's Postgres (private, \`scripts/pg-local.sh\`, synchronous_commit off) runs on core $TARGET_CORE beside nginx, so core $GEN_CORE measures only generator work; it also means nginx shares its core with the ingestion while our tool runs, which lowers our req/s (not our req per CPU-s)."
	echo "- Other processes on the machine (outside this run) used $(printf '%.1f' "$FOREIGN_TOTAL") CPU-s during $(printf '%.0f' "$MEASURED_TOTAL") s of measurements$(awk -v f="$FOREIGN_TOTAL" -v m="$MEASURED_TOTAL" 'BEGIN{if (m > 0 && f > 0.05 * m) printf " (%.0f%% of a core): **the machine was not quiet; treat these figures with care**", 100 * f / m}')."
	[ -z "$CORE_NOTE" ] || echo "- **$CORE_NOTE**"
	echo
	echo "| generator | mode | req/s | req per CPU-s | ratio to oha (req per CPU-s) | ratio to wrk | peak RSS MB | notes |"
	echo "|---|---|---:|---:|---:|---:|---:|---|"
	for g in "${GENS[@]}"; do
		want "$g" || continue
		if [ -n "${SKIP[$g]:-}" ]; then
			echo "| ${LABEL[$g]} | closed | – | – | – | – | – | skipped: ${SKIP[$g]} |"
			continue
		fi
		if [ -n "${C_RPS[$g]:-}" ]; then
			note=$(closed_note "$g")
			[ -z "${NOTE[$g]:-}" ] || note+="; ${NOTE[$g]}"
			[ -z "${FAILS[$g]:-}" ] || note+="; failed: ${FAILS[$g]}"
			echo "| ${LABEL[$g]} | closed | $(fmt_int "${C_RPS[$g]}") | $(fmt_int "${C_EFF[$g]}") | $(ratio "${C_EFF[$g]}" "${C_EFF[oha]:-}") | $(ratio "${C_EFF[$g]}" "${C_EFF[wrk]:-}") | ${C_RSS[$g]} | $note |"
		else
			echo "| ${LABEL[$g]} | closed | – | – | – | – | – | failed: ${FAILS[$g]:-no run} |"
		fi
	done
	for g in oha vegeta cf-benchmark; do
		want "$g" && [ -z "${SKIP[$g]:-}" ] || continue
		case ${OPEN_ROW[$g]:-} in
		unsupported) echo "| ${LABEL[$g]} | open | not yet supported | – | – | – | – | ${OPEN_NOTE[$g]} |" ;;
		none) echo "| ${LABEL[$g]} | open | none held | – | – | – | – | ${OPEN_NOTE[$g]} |" ;;
		'') ;;
		*)
			read -r rps eff rss _ _ <<<"${OPEN_ROW[$g]}"
			local how=
			case $g in
			oha) how="\`-c $CONNS -q RATE --latency-correction -z ${OPEN_SECS}s\`" ;;
			vegeta) how="\`attack -rate=RATE -workers=$CONNS -max-workers=$CONNS -duration=${OPEN_SECS}s\`" ;;
			cf-benchmark) how="model open, rate_per instance, max_in_flight $CONNS, no warm-up" ;;
			esac
			if [ "$g" != oha ] && [[ ${OPEN_ROW[oha]:-} =~ ^[0-9] ]]; then
				how+="; held rate $(ratio "$rps" "$(awk '{print $1}' <<<"${OPEN_ROW[oha]}")") oha's"
			fi
			echo "| ${LABEL[$g]} | open | $(fmt_int "$rps") | $(fmt_int "$eff") | $(ratio "$eff" "$O_EFF_OHA") | – | $rss | ${OPEN_NOTE[$g]}; $how |"
			;;
		esac
	done
	echo
	echo "Ratios compare req per CPU-s within a mode (open-loop rows against oha's open-loop row, each at its own held rate); wrk has no open-loop mode. Versions: nginx $NGINX_VERSION$(for g in "${active[@]}"; do printf ', %s %s' "$g" "${VERSION[$g]:-?}"; done)."
}

mkdir -p "$(dirname "$OUT")"
report | tee "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
log "done in $(( $(date +%s) - T0 )) s; report in $OUT"
