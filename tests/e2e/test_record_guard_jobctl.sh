#!/usr/bin/env bash
# The registration guard and job control: a process the user stops stays stopped. The guard
# stops a patched process (SIGSTOP from BPF) when another tool registers a uprobe on it, and
# continues it once its trampolines are checked; if the user stops it meanwhile (kill -STOP
# while our stop holds it), the hold's end must not continue it: only the user's SIGCONT does.
# To have the user's stop land inside the hold every time, the recorder itself is stopped
# while bpftrace registers (the hold then lasts until the recorder runs again).
source "$(dirname "$0")/lib.sh"
need_bpf
need_tracefs
kill_on_exit
source "$(dirname "$0")/lib_guard.sh"

"$GL" loop "$T/ready" >"$T/loop.out" &
target=$!
wait_file "$T/ready" "the target runs"
guard_record_pid j $target
assert_contains "$T/j.err" "gl: 1 function through trampolines" "gl_sub is patched"

kill -STOP $REC
bpftrace -e "BEGIN { printf(\"ready\\n\"); } uprobe:$GL:gl_sub { @calls = count(); }" >"$T/bt.out" 2>&1 &
bt=$!
wait_for "$T/bt.out" "^ready$" "bpftrace attached"
wait_state $target T "the guard's stop"
kill -STOP $target              # the user's stop, while the guard holds it
kill -CONT $REC
wait_for "$T/j.err" "process $target: gl_sub: another tool probed it" "the guard gives gl_sub back"
kill -INT $REC                  # the end resumes everything the recorder still holds
wait $REC || { cat "$T/j.err" >&2; fail "record -p failed"; }
assert_eq T "$(proc_state $target)" "the user's stopped target after the recording ended"
stop_bpftrace $bt
assert_eq T "$(proc_state $target)" "the user's stopped target after bpftrace ended"
kill -CONT $target              # now it runs again
kill -TERM $target
wait $target || fail "the target failed: $(cat "$T/loop.out")"
assert_contains "$T/loop.out" "^loop [1-9][0-9]*$" "the target ran on after the user's SIGCONT"
