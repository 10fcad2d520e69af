#!/usr/bin/env bash
# The registration guard and clone(CLONE_VM): a process that a patched one starts with its own
# pid but the same memory runs the same jmps. It is guarded like a thread of its parent: when
# bpftrace puts a uprobe on gl_sub, which both call hot, both are stopped until gl_sub has its
# own bytes back, and both run on with right results (before, the sibling died of the int3
# landing on the jmp).
source "$(dirname "$0")/lib.sh"
need_bpf
need_tracefs
kill_on_exit
source "$(dirname "$0")/lib_guard.sh"

guard_record c "$GL" clonevm "$T/ready"
wait_file "$T/ready" "the target and its CLONE_VM child run"
target=$(launched_pid c)
child=$(cat /proc/$target/task/*/children | tr -d " ")
[ -n "$child" ] || fail "no child of $target"
assert_eq "$(readlink /proc/$target/exe)" "$(readlink /proc/$child/exe)" "the child runs the target's program"
bpftrace -e "BEGIN { printf(\"ready\\n\"); } uprobe:$GL:gl_sub { @calls = count(); }" >"$T/bt.out" 2>&1 &
bt=$!
wait_for "$T/bt.out" "^ready$" "bpftrace attached"
wait_for "$T/c.err" "process $target: gl_sub: another tool probed it" "the guard gives gl_sub back"
assert_contains "$T/c.err" "may be registering a uprobe .*: process $child stopped" "the CLONE_VM child stopped with its parent"
kill -TERM $target              # both end their loops; the parent reaps the child
wait $REC || { cat "$T/c.err" "$T/c.out" >&2; fail "the recording (or the target) failed"; }
stop_bpftrace $bt
assert_eq "clonevm ok 2" "$(cat "$T/c.out")" "processes that ran right to their end"
