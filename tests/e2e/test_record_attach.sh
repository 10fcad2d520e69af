#!/usr/bin/env bash
# record -p PID: attach to a process sitting in its command loop; exactly the K calls made after
# the attach are recorded. Handshakes only: the target acknowledges every command on a fifo,
# and the recorder opens --ready-file (a fifo here) once its probes are attached.
source "$(dirname "$0")/lib.sh"
need_bpf
K=777

mkfifo "$T/cmd" "$T/out" "$T/ready"
"$TARGETS/attach_loop" "$T/cmd" >"$T/out" &
target=$!
exec 4<"$T/out"
read -r -t 120 -u 4 word pid || fail "no pid from attach_loop"
assert_eq "pid $target" "$word $pid" "attach_loop's first line"
exec 3<>"$T/cmd"
echo 5 >&3      # calls before the attach: not recorded
read -r -t 120 -u 4 line; assert_eq "done 5" "$line" "ack before attach"

"$ATF" record -p "$target" -o "$T/s" -f loop_work --ready-file "$T/ready" 2>"$T/err" &
rec=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/err" >&2; fail "the recorder never became ready"; }
echo $K >&3
read -r -t 120 -u 4 line; assert_eq "done $K" "$line" "ack after attach"
echo q >&3
exec 3>&-
wait $target || fail "attach_loop failed"
wait $rec || { cat "$T/err" >&2; fail "record -p failed"; }

"$ATF" verify "$T/s" >/dev/null || fail "verify"
"$TOOLS/record_stats" "$T/s" >"$T/stats"
assert_eq "processes 1" "$(head -n 1 "$T/stats")" "processes"
assert_eq $K "$(awk '$1 == "call" && $3 == "loop_work" { print $4 }' "$T/stats")" "calls after the attach"
read -r _ p _ threads _ events _ _ _ _ _ _ _ _ _ lost _ reason1 reason2 <<<"$(grep '^process ' "$T/stats")"
assert_eq "$target" "$p" "recorded pid"
assert_eq $((2 * K)) "$events" "events"
assert_eq 0 "$lost" "lost"
assert_eq "target exited" "$reason1 $reason2" "end reason"
[ -d "$T/s/pid_$target" ] || fail "no pid_$target directory"
echo "ok"
