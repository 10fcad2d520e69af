#!/usr/bin/env bash
# Holds stop a process with SIGSTOP from BPF; only those are ever continued by us, and a dead
# recorder leaves none of them stopped. The registration guard holds a target on trampolines
# whenever any process makes a syscall that may register a uprobe (here a perf_event_open of a
# tracepoint, which fails: the guard acts at its entry).
#   1. the recorder is stopped (kill -STOP), so it cannot resume anything; the guard stops the
#      target; the recorder is killed with -9: its watchdog resumes the target, which runs on
#      (its commands are answered) and exits; the watchdog is gone.
#   2. the user stopped the target (kill -STOP) before the guard's hold: the recorder handles
#      the hold and ends, and the target is still stopped; kill -CONT resumes it, and the calls
#      it makes then are recorded exactly.
source "$(dirname "$0")/lib.sh"
need_bpf
kill_on_exit
K=300

# register_attempt: a syscall the guard takes for a uprobe registration (it fails: no such tracepoint)
register_attempt() {
	python3 -c '
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
attr = (ctypes.c_uint8 * 128)()
ctypes.c_uint32.from_buffer(attr, 0).value = 2      # PERF_TYPE_TRACEPOINT
ctypes.c_uint32.from_buffer(attr, 4).value = 128    # size
ctypes.c_uint64.from_buffer(attr, 8).value = 1 << 40    # config: no such tracepoint
libc.syscall(298, attr, -1, 0, -1, 0)'
}
state() { awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null || echo gone; }
# wait_state PID PATTERN WHAT: poll (bounded) until PID's state matches PATTERN
wait_state() {
	local i
	for i in $(seq 600); do
		[[ "$(state "$1")" =~ ^($2)$ ]] && return 0
		sleep 0.05
	done
	fail "$3: process $1 is in state $(state "$1")"
}
# start NAME: record attach_loop (launched, -f loop_work: on a trampoline, so guarded) into
# $T/NAME; sets rec and target, fds 3 (commands) and 4 (its output)
start() {
	mkfifo "$T/$1.cmd" "$T/$1.out" "$T/$1.ready"
	exec 4<>"$T/$1.out"
	"$ATF" record --trampolines -v -o "$T/$1" -f loop_work --ready-file "$T/$1.ready" -- \
		"$TARGETS/attach_loop" "$T/$1.cmd" >"$T/$1.out" 2>"$T/$1.err" &
	rec=$!
	timeout 60 cat "$T/$1.ready" >/dev/null || { cat "$T/$1.err" >&2; fail "$1: never ready"; }
	read -r -t 60 -u 4 _ target || fail "$1: no pid from attach_loop"
	EXIT_PIDS+=("$target")
	assert_contains "$T/$1.err" "^atftrace record: 1 function entered through trampolines" \
		"$1: loop_work is entered through a trampoline"
	exec 3>"$T/$1.cmd"
}
expect() {
	local line
	read -r -t 60 -u 4 line || fail "$2: the target said nothing"
	assert_eq "$1" "$line" "$2"
}

# ---- 1. kill -9 of the recorder while the guard holds the target ----------------------------
start dead
kill -STOP $rec
register_attempt
wait_state $target T "dead: the guard's hold"
kill -9 $rec
wait $rec 2>/dev/null && fail "dead: the recorder survived kill -9"
wait_state $target "S|R" "dead: the watchdog resumes the target"
echo $K >&3
expect "done $K" "dead: the target runs on"
echo q >&3
exec 3>&- 4<&-
wait_state $target gone "dead: the target exits"
watchdog=$(sed -n 's/^atftrace record: watchdog \([0-9]*\) .*/\1/p' "$T/dead.err")
[ -n "$watchdog" ] || fail "dead: no watchdog line"
wait_state $watchdog gone "dead: the watchdog ends"

# ---- 2. the user's own stop is left alone ----------------------------------------------------
start user
echo $K >&3
expect "done $K" "user: before the stop"
kill -STOP $target
wait_state $target T "user: kill -STOP"
guard_lines() { grep -c "process $target stopped to check its trampolines" "$T/user.err" || true; }
before=$(guard_lines)
register_attempt
for _ in $(seq 1200); do [ "$(guard_lines)" -gt "$before" ] && break; sleep 0.05; done
[ "$(guard_lines)" -gt "$before" ] || fail "user: no guard record after the registration attempt"
kill -INT $rec          # its last drain handles every hold; it resumes what it held
wait $rec || { cat "$T/user.err" >&2; fail "user: record failed"; }
assert_eq T "$(state $target)" "user: the target after the recording ended"
kill -CONT $target
echo $K >&3
expect "done $K" "user: after kill -CONT"
echo q >&3
exec 3>&- 4<&-
wait_state $target gone "user: the target exits"
"$ATF" verify "$T/user" >/dev/null || fail "user: verify"
"$TOOLS/record_stats" "$T/user" >"$T/user.stats"
assert_eq $K "$(awk '$1 == "call" && $3 == "loop_work" { print $4 }' "$T/user.stats")" \
	"user: calls recorded (those before the end)"
echo "ok: held processes are resumed by the watchdog; the user's stop is left alone"
