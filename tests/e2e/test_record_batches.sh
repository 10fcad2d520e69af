#!/usr/bin/env bash
# Per-thread event batches (bpf/batch.bpf.h): events wait in their thread's batch of 16 until it
# is full, and go to the ring at the thread's exit and at the session's end, so nothing is lost
# by batching:
#   1. -p ended with SIGINT while both threads' last batches are partly full: every call is in the
#      session (the end's flush), in order, for the main thread and for a thread that exited.
#   2. the recorder stopped, its ring full, when a new thread exits: that thread's last batch is
#      parked and still recorded, with exact counts and nothing lost for that thread; the
#      manifest says when the main thread lost events, and report says so.
#   3. kill -9: `recover` gets back every event except those still in the thread's batch, and
#      verify then accepts the session; a call made when the batch is over 1 ms old takes the
#      batch to the ring with it, so only its RETURN can be missing.
#   4. threads at full rate together: each thread's events in order, the threads interleaved in
#      time, every call recorded.
#   5. more threads with a batch at the session's end than the smallest ring takes in all the
#      end's tries: the rest are parked, and every call is still recorded.
source "$(dirname "$0")/lib.sh"
need_bpf
K=1005                  # 2010 events: 125 whole batches and 10 events in a last one

kill_on_exit   # the recorder, the target, stopped or not, on failure too

# thread_counts SESSION: "TID-ORDER EVENTS CALLS RETURNS LOST_CALLS LOST_RETURNS" per thread
thread_counts() {
	"$TOOLS/record_stats" "$1" | awk '$1 == "thread" { print $3, $5, $7, $9, $11, $13 }'
}

# ---- 1. -p, ended while batches are partly full --------------------------------------------
mkfifo "$T/lcmd" "$T/ready" "$T/out1" "$T/out3"
exec 4<>"$T/out1"
"$TARGETS/attach_loop" "$T/lcmd" >"$T/out1" &
TGT=$!
exec 3<>"$T/lcmd"
read -t 30 -r -u 4 _ pid || fail "no pid from attach_loop"
"$ATF" record -p "$TGT" -o "$T/p" -f loop_work --ready-file "$T/ready" 2>"$T/p.err" &
REC=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/p.err" >&2; fail "the recorder never became ready"; }
echo "$K" >&3
read -t 60 -r -u 4 line || fail "no reply to $K"; assert_eq "done $K" "$line" "main thread's calls"
echo "t$K" >&3
read -t 60 -r -u 4 line || fail "no reply to t$K"
[[ $line == "thread "*" done $K" ]] || fail "thread reply: '$line'"
kill -INT $REC
wait $REC || { cat "$T/p.err" >&2; fail "record -p failed"; }
REC=
"$ATF" verify "$T/p" >"$T/p.verify" || { cat "$T/p.verify" >&2; fail "verify of the -p session"; }
assert_eq "0 $((2 * K)) $K $K 0 0
1 $((2 * K)) $K $K 0 0" "$(thread_counts "$T/p")" "-p: every call of both threads, nothing lost"
echo q >&3
wait $TGT || fail "attach_loop exited with $?"
TGT=
exec 3>&- 4>&-

# ---- 2. a thread exits while the ring is full: its last batch is parked --------------------
start() { script_start "$1" -f work "${@:2}"; }
# No entry trampolines here nor in 3: their registration guard stops the target whenever another
# tool on the host registers a probe, and a recorder that is stopped (or killed) cannot resume it.
start parked --ring-size 64K --no-trampolines
script_run work 1000    # 2000 events, 50 KB: all in the ring even if the recorder does not run
kill -STOP $REC
script_run work 4000    # 8000 events, 200 KB: the ring fills, and the rest is lost
script_run thread 5     # 10 events, all in the new thread's batch when it exits
kill -CONT $REC
echo quit >&3
wait $REC || { cat "$T/parked.err" >&2; fail "parked: record failed"; }
REC=
exec 3>&- 4<&-
"$ATF" verify "$T/parked" >"$T/parked.verify" || { cat "$T/parked.verify" >&2; fail "parked: verify"; }
read -r _ ev0 c0 r0 lc0 lr0 <<<"$(thread_counts "$T/parked" | sed -n 1p)"
[ "$lc0" -gt 0 ] || fail "parked: the main thread lost nothing with the recorder stopped"
assert_eq 5000 $((c0 + lc0)) "parked: main thread's calls $c0 + lost calls $lc0"
assert_eq "$c0" $((r0 + lr0)) "parked: main thread's returns $r0 + lost returns $lr0"
assert_eq "1 10 5 5 0 0" "$(thread_counts "$T/parked" | sed -n 2p)" "parked: the exited thread's batch"
# the manifest keeps when the main thread lost events: after the first phase, within its events
man=$(echo "$T"/parked/pid_*/manifest.json)
read -r first last <<<"$(jq -r '.threads[0] | "\(.lost_first_ns) \(.lost_last_ns)"' "$man")"
phase1_end=$("$TOOLS/atf_raw" "$(dirname "$man")/thread_0" | awk '$1 == "ev" && $2 == 1999 { print $7 }')
[ -n "$phase1_end" ] && [ "$first" -gt "$phase1_end" ] && [ "$last" -ge "$first" ] &&
	[ "$last" -le "$(jq .time_end_ns "$man")" ] ||
	fail "parked: loss window $first..$last, want after $phase1_end and within the session"
"$ATF" report "$T/parked" >/dev/null 2>"$T/parked.report"
assert_contains "$T/parked.report" "^atftrace report: pid [0-9]+ thread_0 lost $((2 * lc0 + lr0)) events between [0-9.]+ [mun]?s and [0-9.]+ [mun]?s" \
	"parked: report names the window with losses"
[ "$(wc -l <"$T/parked.report")" = 1 ] || fail "parked: report noted more than the one thread"

# ---- 3. kill -9: all but the last batch is recovered ----------------------------------------
exec 4<>"$T/out3"
"$ATF" record -o "$T/k" --no-trampolines -f loop_work --ready-file "$T/ready" -- "$TARGETS/attach_loop" "$T/lcmd" \
	>"$T/out3" 2>"$T/k.err" &
REC=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/k.err" >&2; fail "kill -9: never ready"; }
read -t 30 -r -u 4 _ TGT || fail "kill -9: no pid from attach_loop"
EXIT_PIDS+=("$TGT")
exec 3<>"$T/lcmd"
echo "$K" >&3
read -t 60 -r -u 4 line || fail "kill -9: no reply"; assert_eq "done $K" "$line" "kill -9: calls"
# one more call once the batch's first event is over 1 ms old (the age is what is tested here,
# not a wait for something): that CALL goes to the ring with the batch, only its RETURN stays.
# If the thread was preempted for over 1 ms just before its last event, that event flushed the
# batch by its age and the new CALL opens an empty one: then one more round, up to five.
idx="$T/k/pid_$TGT/thread_0/index.atf"
made=$((2 * K))
for round in 1 2 3 4 5; do
	sleep 0.002
	echo 1 >&3
	read -t 60 -r -u 4 line || fail "kill -9: no reply"; assert_eq "done 1" "$line" "kill -9: a last call"
	made=$((made + 2))
	least=$((made - 1))
	# everything but that RETURN is in the ring now: wait (bounded) until the drain wrote it
	for _ in $(seq 200); do
		[ "$(stat -c %s "$idx" 2>/dev/null || echo 0)" -ge $((64 + least * 32)) ] && break 2
		sleep 0.01
	done
done
kill -9 $REC
wait $REC && fail "the recorder survived kill -9"
REC=
echo q >&3
# the target is the dead recorder's child, not ours: it must end on its own (bounded wait)
for _ in $(seq 3000); do kill -0 "$TGT" 2>/dev/null || break; sleep 0.01; done
kill -0 "$TGT" 2>/dev/null && fail "kill -9: the target did not end after q ($(ps -o stat= -p "$TGT"))"
TGT=
exec 3>&- 4>&-
"$ATF" recover "$T/k" >"$T/k.recover" 2>&1 || { cat "$T/k.recover" >&2; fail "kill -9: recover"; }
"$ATF" verify "$T/k" >"$T/k.verify" || { cat "$T/k.verify" >&2; fail "kill -9: verify after recover"; }
read -r _ ev c r _ <<<"$(thread_counts "$T/k")"
[ "$ev" -ge $least ] && [ "$ev" -le $made ] ||
	fail "kill -9: $ev events recovered, want all but the last batch ($least..$made)"
echo "figures: kill -9 with $made events made: $ev recovered, $((made - ev)) in the batch"

# ---- 4. threads together: in order per thread, interleaved in time -----------------------
NT=4 NC=20000
"$ATF" record -o "$T/t" -f thread_work -- "$TARGETS/threads" $NT $NC 2>"$T/t.err" ||
	{ cat "$T/t.err" >&2; fail "threads: record failed"; }
"$ATF" verify "$T/t" >/dev/null || fail "threads: verify (each thread's events in time order)"
assert_eq "$(for i in $(seq 0 $((NT - 1))); do echo "$i $((2 * NC)) $NC $NC 0 0"; done)" \
	"$(thread_counts "$T/t")" "threads: every call of every thread"
# merged by time, the threads take turns: count the changes of thread along the merged stream
switches=$("$ATF" dump "$T/t" --merged | awk '/thread_work/ {
	if (match($0, /\[ *[0-9]+\]/)) { t = substr($0, RSTART, RLENGTH); if (t != last) n++; last = t } }
	END { print n + 0 }')
[ "$switches" -gt $NT ] || fail "threads: the merged stream changes thread only $switches times"
# ---- 5. the end's last try parks what the ring does not take ---------------------------------
NB=300                  # 300 batches of 10 events (264 bytes): a 4K ring takes 15 a try, 240 in 16
mkfifo "$T/out5"
exec 4<>"$T/out5"
"$ATF" record -o "$T/e" -f block_work --ring-size 4K -- "$TARGETS/threads_block" $NB 5 \
	>"$T/out5" 2>"$T/e.err" &
REC=$!
read -t 60 -r -u 4 _ TGT || { cat "$T/e.err" >&2; fail "end: the target never got ready"; }
kill -INT $REC
wait $REC || { cat "$T/e.err" >&2; fail "end: record failed"; }
REC=
kill -9 "$TGT"
TGT=
exec 4<&-
"$ATF" verify "$T/e" >"$T/e.verify" || { cat "$T/e.verify" >&2; fail "end: verify"; }
assert_eq "$NB 10 5 5 0 0" "$(thread_counts "$T/e" | awk '{ print $2, $3, $4, $5, $6 }' | sort | uniq -c |
	awk '{ print $1, $2, $3, $4, $5, $6 }')" "end: each of $NB threads with all its calls"
echo "ok: batches reach the session at -p's end, at a thread's exit with the ring full, and after kill -9 all but the last"
