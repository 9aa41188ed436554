# shellcheck shell=bash
# Sourced by scripts/test.sh: how busy the host is with work that is not ours, judged
# before the measured end-to-end runs. Those runs judge their own CPU (contention,
# generator saturation, plateau), so on a host busy with other work they fail as their
# checks say they should; a reader of the log must see at once that the host was the
# cause, not the code.
#
#   host_check [SECONDS]   samples /proc/stat over SECONDS (default 3) while nothing of
#                          ours runs and prints one line: "host: quiet (...)" or
#                          "host busy: ...". Returns 1 when busy. HOST_CHECK_LINE keeps
#                          the line for the final message.
#
# Busy means more than HOST_BUSY_PCT (default 25) percent of all cores' time spent on
# other work, or more than HOST_STEAL_PCT (default 10) percent stolen by the hypervisor.
# The 1-minute load average is printed too, but not judged: it still counts the stage
# that just ended.

host_cpu_times() { # prints: busy steal total (jiffies, all cores)
	local _cpu user nice system idle iowait irq softirq steal _rest
	read -r _cpu user nice system idle iowait irq softirq steal _rest </proc/stat
	echo "$((user + nice + system + irq + softirq)) $steal $((user + nice + system + idle + iowait + irq + softirq + steal))"
}

host_check() {
	local seconds=${1:-3} b0 s0 t0 b1 s1 t1 busy steal load cores
	HOST_CHECK_LINE=""
	[ -r /proc/stat ] || return 0
	read -r b0 s0 t0 < <(host_cpu_times)
	sleep "$seconds"
	read -r b1 s1 t1 < <(host_cpu_times)
	[ "$t1" -gt "$t0" ] || return 0
	busy=$((100 * (b1 - b0) / (t1 - t0)))
	steal=$((100 * (s1 - s0) / (t1 - t0)))
	read -r load _ </proc/loadavg
	cores=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo "?")
	local figures="${busy}% of ${cores} cores busy with other work over ${seconds} s, ${steal}% stolen, load ${load}"
	if [ "$busy" -gt "${HOST_BUSY_PCT:-25}" ] || [ "$steal" -gt "${HOST_STEAL_PCT:-10}" ]; then
		HOST_CHECK_LINE="host busy: ${figures}; the measured runs judge their own CPU, so a failure below may be the host's, not the code's"
		echo "$HOST_CHECK_LINE"
		return 1
	fi
	HOST_CHECK_LINE="host: quiet (${figures})"
	echo "$HOST_CHECK_LINE"
}
