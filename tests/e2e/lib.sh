# Shared helpers for end-to-end tests; source it first. Every assertion failure exits 1 with
# one line saying what differed. Tests create their files under a private temporary directory.
set -euo pipefail
ROOT=${ATFTRACE_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
OUTPUT=${OUTPUT:-.output}
OUT=$ROOT/$OUTPUT
ATF=${ATFTRACE_BIN:-$OUT/atftrace}
ATF_ASAN=${ATFTRACE_BIN_ASAN:-$OUT/asan/atftrace}
TARGETS=$OUT/targets
TOOLS=$OUT/tools
T=$(mktemp -d /tmp/atftrace-test.XXXXXX)
trap 'rm -rf "$T"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "$*"; exit 77; }

# need_bpf: skip (exit 77) unless we are root on a kernel with BTF.
need_bpf() {
	[ "$(id -u)" = 0 ] || skip "needs root"
	[ -r /sys/kernel/btf/vmlinux ] || skip "needs kernel BTF (/sys/kernel/btf/vmlinux)"
}

# need_tracefs: mount tracefs (bpftrace needs it) when it is not mounted.
need_tracefs() {
	[ -d /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null \
		|| fail "cannot mount tracefs"
}

assert_eq() {   # expected actual what
	[ "$1" = "$2" ] || fail "$3: expected '$1', got '$2'"
}

assert_contains() {   # file pattern what
	grep -qE -- "$2" "$1" || { sed 's/^/  | /' "$1" | head -n 30 >&2; fail "$3: no line matching '$2' in $1"; }
}

# normalise_dump: make dump output comparable across runs (uftrace-style): thread ids become
# T0, T1, … in order of first appearance, the TIME column goes, and a DURATION becomes <dur>:
#   "   58.778 us    21.312 us [ 12093] |   leaf();"  ->  "<dur> [T0] |   leaf();"
#   "   58.778 us              | main() {"            ->  "      | main() {"
normalise_dump() {
	awk '{
		line = $0
		while (match(line, /tid=[0-9]+/)) {
			id = substr(line, RSTART + 4, RLENGTH - 4)
			if (!(id in map)) map[id] = "T" n++
			line = substr(line, 1, RSTART - 1) "tid=" map[id] substr(line, RSTART + RLENGTH)
		}
		bar = index(line, "| ")
		if (line !~ /^#/ && line !~ /^    (args|ret):/ && bar) {
			head = substr(line, 1, bar - 1); body = substr(line, bar)
			tid = ""
			if (match(head, /\[ *[0-9]+\]/)) {
				id = substr(head, RSTART + 1, RLENGTH - 2); gsub(/ /, "", id)
				if (!(id in map)) map[id] = "T" n++
				tid = "[" map[id] "] "
			}
			ntimes = gsub(/[0-9]+(\.[0-9]+)? (ns|us|ms|s)/, "", head)
			line = (ntimes > 1 ? "<dur> " : "      ") tid body
		}
		print line
	}'
}

# The detail_args target in script mode: it runs one command per line from a fifo and
# acknowledges each with "ok" on another, so a test decides when each phase runs.
# script_start NAME RECORD_OPTIONS...: record it into $T/NAME (the recorder's stderr in
# $T/NAME.err); sets NAME and REC, and opens fds 3 (commands) and 4 (acknowledgements).
script_start() {
	NAME=$1; shift
	[ -p "$T/cmd" ] || mkfifo "$T/cmd" "$T/ack"
	"$ATF" record -o "$T/$NAME" "$@" -- "$TARGETS/detail_args" script "$T/cmd" "$T/ack" \
		2>"$T/$NAME.err" &
	REC=$!
	# read-write opens never block, so a recorder that fails to start cannot hang the test
	exec 3<>"$T/cmd" 4<>"$T/ack"
}
# script_run COMMAND: one phase of the target, finished when it acknowledges
script_run() {
	local reply
	echo "$*" >&3
	read -t 120 -r reply <&4 || { cat "$T/$NAME.err" >&2; fail "$NAME: no acknowledgement for '$*'"; }
	assert_eq ok "$reply" "$NAME: reply to '$*'"
}

# text_diff PID FILE [int3]: how many bytes of PID's executable mappings of FILE differ from the
# file (read through /proc/PID/mem); with int3, breakpoints (uprobes, ours and other tools') are
# left out
text_diff() {
	python3 - "$1" "$2" "${3:-}" <<'PY'
import os, sys
pid, path = sys.argv[1], os.path.realpath(sys.argv[2])
skip = 0xcc if sys.argv[3] == "int3" else None
st = os.stat(path)
diff = 0
with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb") as mem, open(path, "rb") as f:
    for line in maps:
        a = line.split()
        if len(a) < 6 or int(a[4]) != st.st_ino or "x" not in a[1]:
            continue
        lo, hi = (int(x, 16) for x in a[0].split("-"))
        mem.seek(lo); f.seek(int(a[2], 16))
        m, d = mem.read(hi - lo), f.read(hi - lo)
        diff += sum(1 for i in range(len(d)) if m[i] != d[i] and m[i] != skip)
print(diff)
PY
}

# mark_window_counts SESSION: per thread of a tramp_sites "threads" recording, one line
# "TID MARKS SUB MOV": its tr_mark calls, and its tr_sub and tr_mov calls between tr_mark and
# tr_done
mark_window_counts() {
	"$ATF" dump "$1" | awk '
		/^# thread_/ { t = $2; inwin[t] = 0 }
		/ tr_mark\(\)[ ;]/ { inwin[t] = 1; marks[t]++ }
		/ tr_done\(\)[ ;]/ { inwin[t] = 0 }
		inwin[t] && / tr_sub\(\)[ ;]/ { sub_[t]++ }
		inwin[t] && / tr_mov\(\)[ ;]/ { mov[t]++ }
		END { for (t in marks) print t, marks[t], sub_[t] + 0, mov[t] + 0 }' | sort
}

# stop_bpftrace PID: SIGINT (it prints its maps and detaches), again every second while it runs
# (a SIGINT that comes while it is still setting up can go unanswered); SIGKILL after 10 s
stop_bpftrace() {
	local i state
	for i in $(seq 100); do
		state=$(awk '{ print $3 }' /proc/"$1"/stat 2>/dev/null || true)
		[ -n "$state" ] && [ "$state" != Z ] || break
		[ $((i % 10)) != 1 ] || kill -INT "$1" 2>/dev/null || true
		sleep 0.1
	done
	[ "${state:-Z}" = Z ] || kill -KILL "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

# wait_for FILE PATTERN WHAT: poll (bounded) until FILE has a line matching PATTERN
wait_for() {
	timeout 60 bash -c 'until grep -qE -- "$2" "$1" 2>/dev/null; do sleep 0.05; done' _ "$1" "$2" \
		|| { sed 's/^/  | /' "$1" >&2; fail "$3: no line matching '$2' in $1"; }
}

# kill_on_exit: at exit, on failure too, SIGKILL every background job, its descendants (a
# target the recorder launched, and the children that target forked) and every pid added to
# EXIT_PIDS, reap the jobs and remove $T. All are listed before any is killed (an orphan
# leaves the tree), and SIGKILL ends a stopped process too, so nothing is left stopped.
EXIT_PIDS=()
descendants() {
	local c
	for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		echo "$c"
		descendants "$c"
	done
}
kill_on_exit() {
	trap 'for _p in $(jobs -p); do
		EXIT_PIDS+=($(descendants "$_p") "$_p")
	done
	for _p in "${EXIT_PIDS[@]}"; do kill -KILL "$_p" 2>/dev/null || true; done
	wait 2>/dev/null || true; rm -rf "$T"' EXIT
}

# check_throw_session NAME N: session $T/NAME traced three functions of a C++ throw, each called
# and unwound exactly N times: verify passes, 3N calls, no return, 3N exceptions, nothing lost or
# left open (record_stats' output stays in $T/NAME.stats)
check_throw_session() {
	local s=$1 n=$2 fn
	"$ATF" verify "$T/$s" >/dev/null || fail "$s: verify"
	"$TOOLS/record_stats" "$T/$s" >"$T/$s.stats"
	assert_eq "$((3 * n)) 0 $((3 * n)) 0 0" "$(awk '$1 == "process" { c += $8; r += $10; e += $12; l += $16 }
		$1 == "unbalanced" { u += $3 } END { print c + 0, r + 0, e + 0, l + 0, u + 0 }' "$T/$s.stats")" \
		"$s: calls returns exceptions lost unbalanced"
	assert_eq 3 "$(awk '$1 == "call" { print $3 }' "$T/$s.stats" | sort -u | wc -l)" "$s: functions called"
	for fn in $(awk '$1 == "call" { print $3 }' "$T/$s.stats" | sort -u); do
		for kind in call exception; do
			assert_eq "$n" "$(awk -v k=$kind -v f="$fn" '$1 == k && $3 == f { n += $4 }
				END { print n + 0 }' "$T/$s.stats")" "$s: ${kind}s of $fn"
		done
	done
}

# call_summary SESSION: per function id its calls ("calls FID N"), each call's parent ("edge
# PARENT FID N", - at depth 0), and the frames closed as unwound ("unwound N"), over every thread
call_summary() {
	local d
	for d in "$1"/pid_*/thread_*; do "$TOOLS/atf_raw" "$d"; done | awk '
		$1 == "ev" && $3 == "C" { calls[$4]++; p = $5 > 0 ? open[$5 - 1] : "-"; edges[p " " $4]++; open[$5] = $4 }
		$1 == "ev" && $3 == "X" { x++ }
		END { for (f in calls) print "calls", f, calls[f]; for (e in edges) print "edge", e, edges[e]
		      print "unwound", x + 0 }' | sort
}
