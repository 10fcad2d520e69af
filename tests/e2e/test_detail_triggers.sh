#!/usr/bin/env bash
# Detail triggers start and stop exactly where asked. The target (detail_args script) runs one
# command per line from a fifo and acknowledges it on another, so every phase boundary is set
# by this test: --detail-on (until the trigger returns), --detail-count, --detail-for,
# --detail-after, SIGUSR1 toggling (also from --detail=always). A thread that never recorded
# detail has no detail.atf; a session where detail never fired has none at all. With a tiny ring,
# lost detail records are counted (manifest and exit line) and every event is still accounted for.
# Where a window ends by time (--detail-for, --detail-after), the expected flags come from the
# events' own timestamps, so a slow machine changes the pattern, never the verdict.
source "$(dirname "$0")/lib.sh"
need_bpf

# start NAME OPTIONS...: record detail_args script with work and trigger traced (lib.sh)
start() { script_start "$1" -f work -f trigger "${@:2}"; }
run() { script_run "$@"; }
# wait_line N TEXT: until the recorder has said TEXT N times (it says so after flipping the switch)
wait_line() {
	local i
	for ((i = 0; i < 600; i++)); do
		[ "$(grep -cF -- "$2" "$T/$NAME.err")" -ge "$1" ] && return 0
		sleep 0.05      # polling the recorder's output, not standing in for it
	done
	cat "$T/$NAME.err" >&2
	fail "$NAME: the recorder never said '$2' $1 time(s)"
}
# finish: end the target, check the session (verify: a lossy one too, since its losses are
# counted per thread), leave detail_check's output in $T/$NAME.c.
finish() {
	echo quit >&3
	wait $REC || { cat "$T/$NAME.err" >&2; fail "$NAME: record failed"; }
	exec 3>&- 4<&-
	"$ATF" verify "$T/$NAME" >"$T/$NAME.verify" || { cat "$T/$NAME.verify" >&2; fail "$NAME: verify"; }
	"$TOOLS/detail_check" "$T/$NAME" >"$T/$NAME.c" || { grep '^links' "$T/$NAME.c" >&2; fail "$NAME: links"; }
}
# flags THREAD: one character per index event of thread_THREAD: D with detail, - without
flags() { awk -v t="$1" '$1 == "ev" && $2 == t { printf "%s", $7 }' "$T/$NAME.c"; }
# pat N C [N C ...]: N copies of C, concatenated
pat() { local s=""; while [ $# -gt 0 ]; do s+=$(printf "%$1s" "" | tr ' ' "$2"); shift 2; done; echo "$s"; }
thread_line() { awk -v t="$1" '$1 == "thread" && $3 == t { print $5, $6, $7, $8, $9, $10, $11, $12, $13, $14 }' "$T/$NAME.c"; }

# --detail-on: from the trigger's CALL to its RETURN inclusive, on that thread only; a second
# trigger opens a new window; another thread stays without detail (and without detail.atf)
start on --detail-on 'trig*'
run work 3; run trig 4; run work 2; run trig 1; run work 1; run thread 3
finish
assert_eq "$(pat 6 - 10 D 4 - 4 D 2 -)" "$(flags 0)" "on: detail flags of thread 0"
assert_eq "index 26 detail 14 file yes flag 1 has_detail yes" "$(thread_line 0)" "on: thread 0"
assert_eq "index 6 detail 0 file no flag 0 has_detail no" "$(thread_line 1)" "on: thread 1"
assert_eq "C trigger D" "$(awk '$1 == "ev" && $2 == 0 && $3 == 6 { print $4, $5, $7 }' "$T/on.c")" "on: first detail event"
assert_eq "R trigger D" "$(awk '$1 == "ev" && $2 == 0 && $3 == 15 { print $4, $5, $7 }' "$T/on.c")" "on: last event of the window"

# --detail-count 5: five detail events from the trigger's CALL, past its RETURN if need be
start count --detail-on trigger --detail-count 5
run trig 4; run work 2; run trig 1; run work 2
finish
assert_eq "$(pat 5 D 5 - 4 - 4 D 1 D 3 -)" "$(flags 0)" "count: detail flags"

# --detail-for 1s: every event of the thread less than 1 s after the trigger's CALL; a trigger
# inside an open window does not restart it. Which events those are is read from their
# timestamps (a loaded machine may take longer than 1 s for a phase); the target's `wait 1000`
# blocks until 1 s after the trigger returned, so the window has certainly closed by then.
start for --detail-on trigger --detail-for 1s
run work 2; run trig 3; run work 2; run wait 1000; run work 2; run trig 1; run wait 1000; run work 1
finish
want=$(awk '$1 == "ev" && $2 == 0 {
	if (open && $8 >= deadline) open = 0
	if (!open && $4 == "C" && $5 == "trigger") { open = 1; deadline = $8 + 1000000000 }
	printf "%s", open ? "D" : "-" }' "$T/for.c")
assert_eq "$want" "$(flags 0)" "for: detail flags, as the timestamps place the window"
# certain whatever the timing: nothing before the first trigger, its CALL, nothing after each wait
assert_eq "$(pat 4 - 1 D)" "$(flags 0 | cut -c1-5)" "for: up to the first trigger's CALL"
assert_eq "$(pat 4 - 1 D)" "$(flags 0 | cut -c17-21)" "for: after the first wait, up to the second trigger"
assert_eq "$(pat 2 -)" "$(flags 0 | cut -c25-26)" "for: after the second wait"

# --detail-after 2: the global switch goes on 2 s after the probes are attached, which is after
# $t0 (CLOCK_BOOTTIME, the probes' clock: /proc/uptime, rounded down). An event before t0 + 2 s
# is plain; once on, the switch stays on; the phase after the recorder said so is all detail.
t0=$(awk '{ split($1, s, "."); printf "%d%02d0000000", s[1], s[2] }' /proc/uptime)
start after --detail-after 2
run work 3
wait_line 1 "detail on (--detail-after 2)"
run work 4
finish
assert_eq 14 "$(flags 0 | wc -c)" "after: events"
assert_eq "" "$(awk -v lim=$((t0 + 2000000000)) '$1 == "ev" && $2 == 0 && $8 < lim && $7 == "D"' "$T/after.c")" \
	"after: events with detail less than 2 s after the start"
[[ "$(flags 0)" =~ ^-*D*$ ]] || fail "after: detail went off again: $(flags 0)"
assert_eq "$(pat 8 D)" "$(flags 0 | cut -c7-14)" "after: the phase after 'detail on'"

# SIGUSR1 toggles the global switch: off -> on -> off
start usr1
run work 2
kill -USR1 $REC; wait_line 1 "detail on (SIGUSR1)"
run work 3
kill -USR1 $REC; wait_line 1 "detail off (SIGUSR1)"
run work 4
finish
assert_eq "$(pat 4 - 6 D 8 -)" "$(flags 0)" "usr1: detail flags"
assert_contains "$T/usr1.err" 'ended by target exited' "usr1: SIGUSR1 does not end the recording"

# ... and with --detail=always it starts on
start always --detail=always
run work 1
kill -USR1 $REC; wait_line 1 "detail off (SIGUSR1)"
run work 2
finish
assert_eq "$(pat 2 D 4 -)" "$(flags 0)" "always+usr1: detail flags"

# detail never fired: no detail.atf anywhere, has_detail false, index flag clear
start never --detail-on trigger
run work 3
finish
assert_eq "index 6 detail 0 file no flag 0 has_detail no" "$(thread_line 0)" "never: thread 0"
[ -z "$(find "$T/never" -name detail.atf)" ] || fail "never: a detail.atf exists"

# a 4 KiB ring with 256-byte snapshots: detail records are lost, counted, and their events are
# still recorded plain or counted as lost. A CALL that is lost entirely takes its RETURN with it
# (never emitted) and counts for both, so recorded + lost_events = 2N exactly (a lost thread-exit
# record is counted apart, in lost_records), and verify accepts the session.
N=20000
start loss --detail=always --ring-size 4K
run work $N
finish
read -r _ _ _ lost_ev _ lost_det <<<"$(grep '^process ' "$T/loss.c")"
calls=$(awk '$1 == "ev" && $4 == "C"' "$T/loss.c" | wc -l)
rets=$(awk '$1 == "ev" && $4 == "R"' "$T/loss.c" | wc -l)
det=$(awk '$1 == "ev" && $7 == "D"' "$T/loss.c" | wc -l)
[ "$lost_det" -gt 0 ] || fail "loss: no detail record was lost with a 4 KiB ring"
# every attempt (N CALLs, one RETURN per recorded CALL) either got its detail or counted a loss
assert_eq $((N + calls)) $((det + lost_det)) "loss: detail records + lost_detail"
assert_eq $((2 * N)) $((calls + rets + lost_ev)) "loss: calls $calls + returns $rets + lost_events $lost_ev"
assert_eq $N "$(( calls + $(jq '.threads[0].lost_calls' "$T"/loss/pid_*/manifest.json) ))" "loss: calls + lost_calls"
assert_contains "$T/loss.verify" "events lost and counted" "loss: verify says why it accepts the losses"
assert_contains "$T/loss.err" "^atftrace record: $lost_det detail records could not enter the ring buffer" "loss: exit line"
echo "ok: on, count, for, after, SIGUSR1, never and loss accounting exact"
