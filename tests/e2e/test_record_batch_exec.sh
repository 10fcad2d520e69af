#!/usr/bin/env bash
# A thread's batch of events (bpf/batch.bpf.h) that the full ring cannot take when the thread
# calls exec stays with the old image's thread: the recorder ends the old image's threads at the
# exec record, so those events must reach it before that record, not join the new image's first
# events after it. The recorder is stopped while the target fills the ring and execs itself;
# then the old image's thread has every call (recorded or counted lost) and the new image's
# thread exactly its own. Where the exec record itself finds no room (the space the ring has
# left varies), the recorder never learns of the exec and both images' events are the one
# thread's: counted too, and the run is tried again, up to 5 times, to see an exec record.
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

# attempt N: one session in $T/sN; its threads' counts in $T/counts
attempt() {
	# no entry trampolines: their registration guard stops the target whenever another tool
	# on the host registers a probe, and the stopped recorder could not resume it
	"$ATF" record -o "$T/s$1" -f self_work --ring-size 64K --no-trampolines -- \
		"$TARGETS/exec_self" "$T/cmd" "$T/ack" 2>"$T/err" &
	REC=$!
	run work 1000           # 2000 events, 125 whole batches: all in the ring, drained
	TGT=$(pgrep -P "$REC" -x exec_self) || fail "no target process"
	EXIT_PIDS+=("$TGT")
	kill -STOP $REC
	run work 4000           # 8000 events, 200 KB: the ring fills, the thread's batch stays
	echo "exec 7" >&3       # the new image calls self_work 7 times
	# the target has called exec once /proc shows the new image (held at its exec, or done)
	for _ in $(seq 3000); do
		grep -qa again "/proc/$TGT/cmdline" 2>/dev/null && break
		[ "$(awk '{ print $3 }' "/proc/$TGT/stat" 2>/dev/null)" = Z ] && break
		sleep 0.01
	done
	kill -CONT $REC
	wait $REC || { cat "$T/err" >&2; fail "record failed"; }
	REC= TGT=
	"$ATF" verify "$T/s$1" >"$T/verify" || { cat "$T/verify" >&2; fail "verify"; }
	"$TOOLS/record_stats" "$T/s$1" | awk '$1 == "thread" { print $3, $5, $7, $9, $11, $13 }' >"$T/counts"
}

for i in 1 2 3 4 5; do
	attempt $i
	counts=$(cat "$T/counts")
	read -r _ ev0 c0 r0 lc0 lr0 <<<"$(sed -n 1p <<<"$counts")"
	[ "$lc0" -gt 0 ] || fail "the ring never filled: nothing was lost"
	assert_eq "$c0" $((r0 + lr0)) "old image: returns $r0 + lost returns $lr0"
	case $(wc -l <<<"$counts") in
	1) assert_eq 5007 $((c0 + lc0)) "no exec record: calls $c0 + lost calls $lc0"; continue ;;
	2) ;;
	*) fail "want the old and the new image's threads, got: $counts" ;;
	esac
	assert_eq 5000 $((c0 + lc0)) "old image: calls $c0 + lost calls $lc0"
	assert_eq "1 14 7 7 0 0" "$(sed -n 2p <<<"$counts")" "new image: its own 7 calls, no others"
	echo "ok: a batch the ring could not take at exec stays with the old image's thread (try $i)"
	exit 0
done
fail "the exec record never entered the ring in 5 tries"
