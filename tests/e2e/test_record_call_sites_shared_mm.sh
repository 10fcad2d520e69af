#!/usr/bin/env bash
# record --call-sites -p on a process that shares its memory with another one (a clone(CLONE_VM)
# child, which calls the traced tr_sub hot) redirects nothing: the child, which the session does
# not stop, would run on while the text is written. The session says why (-v), the parent's text
# stays the file's, but for breakpoints, during the session (read through /proc/PID/mem), its
# plain probes count a window of the parent's calls exactly, and both processes run right to
# their end. And a process whose main thread is blocked in vfork() (its child alive): neither
# call sites (the default) nor entry trampolines (--trampolines) wait for it to stop (it would not until the
# child execs or exits); both sessions are ready, say why, and leave its text the file's.
source "$(dirname "$0")/lib.sh"
need_bpf
kill_on_exit
source "$(dirname "$0")/lib_rows.sh"

"$CR" clonevm "$T/run" >"$T/t.out" 2>"$T/t.err" &
target=$!
wait_file "$T/run" "the target and its CLONE_VM child run"
child=$(cat /proc/$target/task/*/children | tr -d " ")
[ -n "$child" ] || fail "no child of $target"
EXIT_PIDS+=("$child")

mkfifo "$T/s.ready"
"$ATF" record --call-sites -v -p $target -o "$T/s" -f 'tr_*' --ready-file "$T/s.ready" 2>"$T/s.err" &
REC=$!
timeout 60 cat "$T/s.ready" >/dev/null || { cat "$T/s.err" >&2; fail "record -p never became ready"; }
assert_contains "$T/s.err" "process $target: no call sites redirected: another process shares its memory \(a vfork or CLONE_VM child\); plain probes" \
	"the session refuses to redirect a process whose memory is shared"
! grep -q "call sites\? of [0-9]* functions\? redirected" "$T/s.err" || { cat "$T/s.err" >&2; fail "call sites redirected"; }
assert_eq 0 "$(text_diff $target "$CR" int3)" "bytes of the text (but for breakpoints) that differ from the file during the session"

kill -USR1 $target              # one window: tr_mark, 1000 x (tr_sub direct, tr_sub through a pointer), tr_done
wait_file "$T/run.win" "the target's window"
assert_eq 0 "$(text_diff $target "$CR" int3)" "bytes of the text (but for breakpoints) that differ from the file after the window"
kill -TERM $target              # both end their loops; the parent reaps the child; the session ends
wait $target || fail "the target failed: $(cat "$T/t.out" "$T/t.err")"
assert_eq "clonevm ok 2" "$(cat "$T/t.out")" "processes that ran right to their end"
wait $REC || { cat "$T/s.err" >&2; fail "record -p failed"; }
"$ATF" verify "$T/s" >/dev/null || fail "verify the session"
assert_eq "thread_0 1 2000 0" "$(mark_window_counts "$T/s")" "the window's calls: thread, tr_mark, tr_sub (direct and through a pointer), tr_mov"

# ---- the main thread in vfork(): the attach does not wait for it --------------------------------
"$CR" vfork 2 "$T/v.run" >"$T/v.out" &
target=$!
wait_file "$T/v.run" "the vfork target's threads run"
kill -USR1 $target
wait_file "$T/v.run.vfork" "the vfork child runs"
child=$(cat /proc/$target/task/$target/children | tr -d ' ')
[ -n "$child" ] || fail "no vfork child of $target"
EXIT_PIDS+=("$child")
for mode in default --trampolines; do
	args=(); [ $mode = default ] || args=($mode)
	rm -f "$T/v.ready"; mkfifo "$T/v.ready"
	"$ATF" record "${args[@]}" -v -p $target -o "$T/v$mode" -f 'tr_*' --ready-file "$T/v.ready" 2>"$T/v.err" &
	REC=$!
	timeout 60 cat "$T/v.ready" >/dev/null || { cat "$T/v.err" >&2; fail "$mode: record -p on a parent in vfork never became ready"; }
	if [ $mode = --trampolines ]; then
		assert_contains "$T/v.err" "process $target: cannot stop it to place trampolines .*another process shares its memory" \
			"$mode: the session says why it places no trampolines"
	else
		assert_contains "$T/v.err" "process $target: no call sites redirected: another process shares its memory" \
			"$mode: the session says why it redirects nothing"
	fi
	assert_eq 0 "$(text_diff $target "$CR" int3)" "$mode: bytes of the vfork parent's text (but for breakpoints) that differ from the file"
	kill -INT $REC
	wait $REC || { cat "$T/v.err" >&2; fail "$mode: record -p on the vfork parent failed"; }
done
[ "$(awk '{ print $3 }' /proc/$target/task/$target/stat)" = D ] || fail "the main thread left vfork before its child was released"
kill -USR2 $child
wait_for "$T/v.out" "^vfork ok$" "the vfork returned"
kill -TERM $target
wait $target || fail "the vfork target failed: $(cat "$T/v.out")"
echo "a process sharing its memory: not redirected, its text the file's, its window counted exactly; a vfork parent: no wait"
