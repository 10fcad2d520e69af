#!/usr/bin/env bash
# A batch parked (bpf/batch.bpf.h) by a process the recorder never heard of is still recorded:
# with --follow-fork, children forked one after another while the ring is full each make 5 calls
# and exit, their batches parked at their exits; the small records (fork, exit) of the first
# ones take the ring's last bytes, so no record at all of the later ones reaches the recorder,
# which must still give each its pid_<PID>/ with its 10 events at the session's end.
source "$(dirname "$0")/lib.sh"
need_bpf

kill_on_exit   # the recorder, the target, stopped or not, on failure too

mkfifo "$T/cmd" "$T/ack"
exec 3<>"$T/cmd" 4<>"$T/ack"
run() {
	local reply
	echo "$*" >&3
	read -t 60 -r reply <&4 || { cat "$T/err" >&2; fail "no answer to '$*'"; }
	assert_eq ok "$reply" "answer to '$*'"
}
# no entry trampolines: their registration guard stops the target whenever another tool on the
# host registers a probe, and the stopped recorder could not resume it
"$ATF" record -o "$T/s" -f self_work --ring-size 64K --no-trampolines --follow-fork -- \
	"$TARGETS/exec_self" "$T/cmd" "$T/ack" 2>"$T/err" &
REC=$!
run work 1000           # 2000 events, 125 whole batches: all in the ring, drained
TGT=$(pgrep -P "$REC" -x exec_self) || fail "no target process"
EXIT_PIDS+=("$TGT")
kill -STOP $REC
run work 4000           # 8000 events, 200 KB: the ring fills
for _ in $(seq 10); do
	run fork 5      # the child's events find the ring full
done
kill -CONT $REC
echo "quit 0" >&3
wait $REC || { cat "$T/err" >&2; fail "record failed"; }
REC=
"$ATF" verify "$T/s" >"$T/verify" || { cat "$T/verify" >&2; fail "verify"; }
stats=$("$TOOLS/record_stats" "$T/s")
read -r _ c0 r0 lc0 lr0 <<<"$(awk -v p="$TGT" '$1 == "thread" && $2 == p { print $5, $7, $9, $11, $13 }' <<<"$stats")"
[ "${lc0:-0}" -gt 0 ] || { echo "$stats" >&2; fail "the ring never filled: nothing was lost"; }
assert_eq 5000 $((c0 + lc0)) "parent: calls $c0 + lost calls $lc0"
assert_eq "$c0" $((r0 + lr0)) "parent: returns $r0 + lost returns $lr0"
assert_eq "10 10 5 5 0 0" "$(awk -v p="$TGT" '$1 == "thread" && $2 != p { print $5, $7, $9, $11, $13 }' <<<"$stats" |
	sort | uniq -c | awk '{ print $1, $2, $3, $4, $5, $6 }')" "10 children, each with its parked batch"
echo "ok: a parked batch of a process never announced is recorded"
