#!/usr/bin/env bash
# The registration guard covers every process with the patched text: a target that forks 80
# children (more than the 64 processes the guard once had room for; each child inherits the
# jmps and is guarded from its fork on, by BPF at the fork tracepoint: no hold, no wait for
# the recorder), all of them calling gl_sub hot while bpftrace puts a
# uprobe on it. Each of the 81 is stopped and checked, gets gl_sub's own bytes back where the
# breakpoint landed, and runs on: none dies, and every child's results are right.
source "$(dirname "$0")/lib.sh"
need_bpf
need_tracefs
kill_on_exit
source "$(dirname "$0")/lib_guard.sh"
N=80

guard_record f "$GL" forks $N "$T/ready"
wait_file "$T/ready" "the $N children run"
target=$(launched_pid f)
if grep -q "is not guarded" "$T/f.err"; then fail "$(grep 'is not guarded' "$T/f.err")"; fi
bpftrace -e "BEGIN { printf(\"ready\\n\"); } uprobe:$GL:gl_sub { @calls = count(); }" >"$T/bt.out" 2>&1 &
bt=$!
wait_for "$T/bt.out" "^ready$" "bpftrace attached"
wait_for "$T/f.err" "process $target: gl_sub: another tool probed it" "the guard gives gl_sub back in the parent"
# the same check gives it back in each child, one line each
timeout 60 bash -c 'until [ "$(grep -cE "\\(forked from $2\\): gl_sub: another tool probed it" "$1")" -ge $3 ]; do sleep 0.05; done' \
	_ "$T/f.err" $target $N || true
assert_eq $N "$(count_lines "$T/f.err" "\\(forked from $target\\): gl_sub: another tool probed it")" \
	"children given gl_sub back"
kill -TERM $target              # it ends its children and counts those that exited 0
wait $REC || { cat "$T/f.err" >&2; fail "the recording (or the target) failed"; }
stop_bpftrace $bt
assert_eq "children $N ok $N" "$(cat "$T/f.out")" "children that ran right to their end"
