#!/usr/bin/env bash
# record --call-sites and the process shapes that once defeated the entry trampolines' guard
# (docs/design-call-sites.md, "Row by row"). bpftrace probes tr_sub's entry and rows_body
# (tr_sub+8, past the relocated instructions, which every call runs), and each session waits
# until every process meant to call tr_sub hit rows_body under it:
#   3  the main thread blocked in vfork() (its child waits for SIGUSR2) while two threads call
#      tr_sub hot, then 5 bpftrace sessions: the target survives, the vfork returns, the
#      threads' results are right;
#   5  50 forks (each child calls tr_sub 4000 times and checks every result) while the ring is
#      full: once with the recorder stopped (SIGSTOP), once running with 3 threads calling
#      tr_sub without a pause; every child exits 0, and the recorder counted lost events;
#   6  80 children calling tr_sub, then bpftrace: all 80 hit it, none is killed;
#   7  a clone(CLONE_VM) sibling and its parent calling tr_sub, then bpftrace: both hit it and
#      run right to their end.
# ROWS=..., ROWS_MODE=... (tests/e2e/lib_rows.sh) run a part, or on entry trampolines.
source "$(dirname "$0")/lib.sh"
need_bpf
need_tracefs
kill_on_exit
source "$(dirname "$0")/lib_rows.sh"

# bt_hits NAME N: bpftrace on tr_sub's entry and rows_body, attached, and then rows_body hit by
# N processes under it (bounded); sets BT
bt_hits() {
	bt_start "$1" "uprobe:$CR:tr_sub { @entry = count(); }
		uprobe:$CR:rows_body /@seen[pid] == 0/ { @seen[pid] = 1; printf(\"hit %d\\n\", pid); }"
	timeout 60 bash -c 'until [ "$(grep -c "^hit " "$1")" -ge $2 ]; do kill -0 $3 2>/dev/null || exit 1; sleep 0.05; done' \
		_ "$T/$1.out" "$2" $BT || { sed 's/^/  | /' "$T/$1.out" | head -20 >&2
		fail "$1: $(grep -c "^hit " "$T/$1.out") of $2 processes ran tr_sub under bpftrace"; }
}

# ---- row 3: the main thread in vfork --------------------------------------------------------------
if row_on 3; then
	"$CR" vfork 2 "$T/v.run" >"$T/v.out" &
	target=$!
	wait_file "$T/v.run" "row 3: the threads run"
	rows_record v $target
	kill -USR1 $target
	wait_file "$T/v.run.vfork" "row 3: the vfork child runs"
	child=$(cat /proc/$target/task/$target/children | tr -d ' ')
	[ -n "$child" ] || fail "row 3: no vfork child of $target"
	EXIT_PIDS+=($child)             # should its parent die first, it is nobody's descendant
	for i in 1 2 3 4 5; do
		bt_hits bt_v$i 1
		alive $target "row 3, bpftrace $i"
		stop_bpftrace $BT
		[ "$(awk '{ print $3 }' /proc/$target/task/$target/stat)" = D ] \
			|| fail "row 3: the main thread is not in vfork (state $(awk '{ print $3 }' /proc/$target/task/$target/stat))"
	done
	kill -USR2 $child
	wait_for "$T/v.out" "^vfork ok$" "row 3: the vfork returned"
	kill -INT $REC
	wait $REC || { cat "$T/v.err" >&2; fail "row 3: record -p failed"; }
	kill -TERM $target
	wait $target || fail "row 3: the target failed: $(cat "$T/v.out")"
	echo "row 3: 5 bpftrace sessions while the main thread was in vfork, 0 deaths"
fi

# tree_states PID: each thread of PID and of its children, with its state and where it sleeps
tree_states() {
	local p t
	for p in "$1" $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		for t in /proc/"$p"/task/*; do
			echo "  $p/${t##*/}: $(awk '{ print $3 }' "$t/stat" 2>/dev/null) $(cat "$t/wchan" 2>/dev/null)"
		done
	done
}

# ---- row 5: forks while the ring is full ------------------------------------------------------------
if row_on 5; then
	for how in stopped running; do
		ROWS_HOT_US=0 ROWS_FILL=200000 "$CR" forks 50 3 "$T/f$how.run" >"$T/f$how.out" &
		target=$!
		wait_file "$T/f$how.run" "row 5 ($how): the threads run"
		rows_record f$how $target --ring-size 64K
		[ $how = running ] || kill -STOP $REC
		kill -USR1 $target       # 200000 more calls (the ring holds 64 KiB: full by then), then the forks
		timeout 60 bash -c 'until grep -qE "^forks 50 ok [0-9]+$" "$1" 2>/dev/null; do sleep 0.05; done' \
			_ "$T/f$how.out" || { tree_states $target >&2; tail -5 "$T/f$how.err" >&2
			fail "row 5 ($how): the forks did not end in 60 s: $(cat "$T/f$how.out")"; }
		[ $how = running ] || kill -CONT $REC
		kill -INT $REC
		wait $REC || { cat "$T/f$how.err" >&2; fail "row 5 ($how): record -p failed"; }
		kill -TERM $target
		wait $target || fail "row 5 ($how): the target failed: $(cat "$T/f$how.out")"
		assert_eq "forks 50 ok 50" "$(cat "$T/f$how.out")" "row 5 ($how): children that computed right"
		lost=$(sed -n 's/.* events .*, \([0-9]*\) lost,.*/\1/p' "$T/f$how.err")
		[ "${lost:-0}" -gt 0 ] || { tail -3 "$T/f$how.err" >&2; fail "row 5 ($how): the ring never was full (0 lost)"; }
		echo "row 5 ($how): 50 forks with the ring full ($lost events lost), 50 children right"
	done
fi

# ---- row 6: 80 children, then bpftrace -----------------------------------------------------------
if row_on 6; then
	# launched: the children are forked after the redirection and inherit it
	ROWS_HOT_US=20000 rows_launch c children 80 "$T/c.run"
	wait_file "$T/c.run" "row 6: the children run"
	rows_redirected c
	target=$(launched_pid c)
	bt_hits bt_c 80
	for kid in $(cat /proc/$target/task/$target/children); do alive $kid "row 6, child $kid under bpftrace"; done
	stop_bpftrace $BT
	kill -TERM $target              # it ends its children and counts those that exited 0
	wait $REC || { cat "$T/c.err" >&2; fail "row 6: the recording (or the target) failed: $(cat "$T/c.out")"; }
	assert_eq "children 80 ok 80" "$(cat "$T/c.out")" "row 6: children that ran right to their end"
	echo "row 6: 80 children under bpftrace, 0 killed"
fi

# ---- row 7: a clone(CLONE_VM) sibling ---------------------------------------------------------------
if row_on 7; then
	rows_launch m clonevm "$T/m.run"
	wait_file "$T/m.run" "row 7: the parent and its CLONE_VM child run"
	rows_redirected m
	target=$(launched_pid m)
	bt_hits bt_m 2
	stop_bpftrace $BT
	kill -TERM $target              # both end their loops; the parent reaps the child
	wait $REC || { cat "$T/m.err" >&2; fail "row 7: the recording (or the target) failed: $(cat "$T/m.out")"; }
	assert_eq "clonevm ok 2" "$(cat "$T/m.out")" "row 7: processes that ran right to their end"
	echo "row 7: a CLONE_VM sibling under bpftrace, unharmed"
fi
