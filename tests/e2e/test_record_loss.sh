#!/usr/bin/env bash
# Every event the target makes is either recorded or counted as lost, exactly, per thread and in
# total; verify accepts the session and says how its losses are accounted for.
#   1. a 4 KiB ring (no detail): two threads call work() N times each, far faster than the
#      recorder drains; per thread, calls + lost_calls = N and returns + lost_returns = calls.
#   2. the recorder stopped (kill -STOP) while the target makes exactly M calls, synchronised on
#      the target's acknowledgements, not on time: recorded + lost = expected. Plain probes
#      (--no-trampolines): on trampolines, another tool's uprobe registration anywhere on the
#      host (the host is shared) holds the target until the recorder checks it, which a
#      stopped recorder never does.
# The detail_args script target runs one command per line from a fifo and acknowledges each.
# Whatever fails, the recorder and its target are killed at exit (kill_on_exit).
source "$(dirname "$0")/lib.sh"
need_bpf
kill_on_exit

# start NAME OPTIONS...: record detail_args script with work traced (lib.sh)
start() { script_start "$1" -f work "${@:2}"; }
run() { script_run "$@"; }
# finish: end the target, verify, and leave record_stats' output in $T/$NAME.s
finish() {
	echo quit >&3
	wait $REC || { cat "$T/$NAME.err" >&2; fail "$NAME: record failed"; }
	exec 3>&- 4<&-
	"$ATF" verify "$T/$NAME" >"$T/$NAME.verify" || { cat "$T/$NAME.verify" >&2; fail "$NAME: verify"; }
	"$TOOLS/record_stats" "$T/$NAME" >"$T/$NAME.s"
}
# check_threads WANT_CALLS...: per thread, the target's calls are recorded or counted; returns too
check_threads() {
	local i=0 want line
	for want in "$@"; do
		line=$(awk -v i=$i '$1 == "thread" && $3 == i' "$T/$NAME.s")
		read -r _ _ _ _ ev _ c _ r _ lc _ lr <<<"$line"
		[ -n "$line" ] || fail "$NAME: no thread_$i"
		assert_eq "$want" $((c + lc)) "$NAME: thread $i: calls $c + lost calls $lc"
		assert_eq "$c" $((r + lr)) "$NAME: thread $i: returns $r + lost returns $lr"
		i=$((i + 1))
	done
}
# totals: events recorded, lost_events, and lost_events summed over the threads' counts
totals() {
	awk '$1 == "process" { ev = $6 } $1 == "losses" { lost = $4 }
	     $1 == "thread" { sum += 2 * $11 + $13 } END { print ev, lost, sum }' "$T/$NAME.s"
}

# 1. a ring far too small: both threads lose events, and each loss is in its thread's count
N=20000
start small --ring-size 4K
run work $N
run thread $N
finish
check_threads $N $N
read -r recorded lost per_thread <<<"$(totals)"
[ "$lost" -gt 0 ] || fail "small: nothing was lost with a 4 KiB ring"
assert_eq "$lost" "$per_thread" "small: lost_events = the threads' counts"
assert_eq $((4 * N)) $((recorded + lost)) "small: recorded $recorded + lost $lost"
assert_contains "$T/small.verify" "; $lost events lost and counted \(" "small: verify's line"
assert_contains "$T/small.err" "^atftrace record: $lost events could not enter the ring buffer" "small: exit line"

# 2. the recorder stopped for exactly M of the target's calls, between two recorded phases
# A 1 MiB ring: the phase's 400000 events take about 10 MB in batches of 16, which the default
# ring (16 MiB per CPU) would hold. No entry trampolines: their registration guard stops the
# target whenever another tool on the host registers a probe, and the stopped recorder could
# not resume it.
M=200000
start stopped --ring-size 1M --no-trampolines
run work 1000
kill -STOP $REC
run work $M
kill -CONT $REC
run work 1000
finish
check_threads $((M + 2000))
read -r recorded lost per_thread <<<"$(totals)"
expected=$((2 * (M + 2000)))
[ "$lost" -gt 0 ] || fail "stopped: nothing was lost while the recorder was stopped"
assert_eq "$lost" "$per_thread" "stopped: lost_events = the thread's counts"
assert_eq $expected $((recorded + lost)) "stopped: recorded $recorded + lost $lost"
# the recorded count again, from the raw bytes (tests/tools/atf_raw shares no code with libatf)
raw=$("$TOOLS/atf_raw" "$(echo "$T"/stopped/pid_*)/thread_0" | awk '$1 == "ev"' | wc -l)
assert_eq "$recorded" "$raw" "stopped: events in the raw file"
echo "figures: stopped recorder: recorded $recorded, lost $lost, expected $expected"
echo "ok: small ring and stopped recorder: every event recorded or counted, per thread"
