#!/usr/bin/env bash
# kill -9 the recorder mid-session: the files it flushed (every drain tick) hold every event
# drained so far (all but the last at most 15 of the thread's batch); `atftrace recover` then `verify` pass and keep every one of them. The target
# runs on and exits, and nothing of the session is left running or stopped (its watchdog, which
# resumes whatever the recorder held, ends too).
source "$(dirname "$0")/lib.sh"
need_bpf
kill_on_exit
K=1000

mkfifo "$T/cmd" "$T/out" "$T/ready"
exec 4<>"$T/out"        # read-write: opening does not wait for the writer
"$ATF" record -v -o "$T/s" -f loop_work --ready-file "$T/ready" -- "$TARGETS/attach_loop" "$T/cmd" >"$T/out" 2>"$T/err" &
rec=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/err" >&2; fail "the recorder never became ready"; }
read -r -u 4 word target || fail "no pid from attach_loop"
EXIT_PIDS+=("$target")
exec 3>"$T/cmd"
echo $K >&3
read -r -u 4 line; assert_eq "done $K" "$line" "ack"

# wait (bounded) until the drain tick has written every event outside the thread's last batch of
# events (bpf/batch.bpf.h: at most 15 wait there) to the index file
idx="$T/s/pid_$target/thread_0/index.atf"
least=$((64 + (2 * K - 15) * 32))
for _ in $(seq 1000); do
	[ "$(stat -c %s "$idx" 2>/dev/null || echo 0)" -ge $least ] && break
	sleep 0.01
done
[ "$(stat -c %s "$idx")" -ge $least ] || fail "index.atf has $(stat -c %s "$idx") bytes, want $least or more before the kill"
kill -9 $rec
wait $rec && fail "the recorder survived kill -9"
want=$(stat -c %s "$idx")
have=$(((want - 64) / 32))     # the events on disk, all of them whole
[ $((64 + have * 32)) -eq "$want" ] || fail "index.atf has $want bytes: not whole events"
echo q >&3
exec 3>&-
# gone_within PID WHAT: the process ends within 30 s (it is no child of ours: poll /proc)
gone_within() {
	for _ in $(seq 600); do
		[ -e "/proc/$1" ] || return 0
		sleep 0.05
	done
	fail "$2: process $1 is still there, state $(awk '{ print $3 }' "/proc/$1/stat")"
}
gone_within "$target" "the target after the recorder's kill -9"
watchdog=$(sed -n 's/^atftrace record: watchdog \([0-9]*\) .*/\1/p' "$T/err")
[ -n "$watchdog" ] || fail "no watchdog line"
gone_within "$watchdog" "the watchdog after the recorder's kill -9"

# the recorder never finished: its loss count is not known (what was in the ring is gone)
"$ATF" info "$T/s" >"$T/info" || fail "info after kill -9"
assert_contains "$T/info" "^lost: +unknown" "info's loss line after kill -9"

# a copy with a torn last event, whose manifest was saved after that event (as the recorder does
# when any thread starts or ends): recover ends the session at the last whole event
cp -r "$T/s" "$T/torn"
m="$T/torn/pid_$target/manifest.json"
end=$(od -An -t u8 -j $((want - 32)) -N 8 "$idx" | tr -d ' ')      # the last event's timestamp
jq ".time_end_ns = $end" "$m" >"$m.new" && mv "$m.new" "$m"
truncate -s -16 "$T/torn/pid_$target/thread_0/index.atf"
"$ATF" recover "$T/torn" >/dev/null || fail "recover of the torn copy"
last=$("$ATF" info "$T/torn" | sed -n 's/.* time=[0-9]*[.][.]\([0-9]*\) .*/\1/p')
[ "$last" -lt "$end" ] || fail "the torn copy's last whole event is not earlier ($last, $end)"
assert_eq "$last" "$(jq .time_end_ns "$m")" "time_end_ns after recover = last whole event"
assert_eq $((have - 1)) "$("$ATF" info "$T/torn" | sed -n 's/^events: *\([0-9]*\) index.*/\1/p')" \
	"whole events of the torn copy"

# placeholder header and no footer: verify refuses it until it is recovered
if "$ATF" verify "$T/s" >/dev/null 2>&1; then fail "verify passed on a session killed mid-way"; fi
"$ATF" recover "$T/s" >"$T/recover" 2>&1 || { cat "$T/recover" >&2; fail "recover failed"; }
"$ATF" verify "$T/s" >/dev/null || fail "verify after recover"
"$TOOLS/record_stats" "$T/s" >"$T/stats"
# every event on disk is kept: CALL and RETURN of loop_work in turn, a CALL first
assert_eq $(((have + 1) / 2)) "$(awk '$1 == "call" && $3 == "loop_work" { print $4 }' "$T/stats")" "calls kept"
assert_eq $have "$(awk '$1 == "process" { print $6 }' "$T/stats")" "events kept"
echo "ok"
