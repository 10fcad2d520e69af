#!/usr/bin/env bash
# thread_exec N: a thread other than the main one calls exec. The kernel gives it the process's
# pid, so the new image's N calls are the main thread's tid's: CALL/RETURN records must carry the
# pids of after the exec, not those the thread had when its first call was traced.
# --follow-fork: a link with a pid filter follows the mm of the task it was made for, the main
# thread, which a non-main thread's exec ends; --no-trampolines: the new image gets plain probes.
source "$(dirname "$0")/lib.sh"
need_bpf
N=4

"$ATF" record --follow-fork --no-trampolines -o "$T/s" -f exec_work -- "$TARGETS/thread_exec" $N 2>"$T/err" || { cat "$T/err" >&2; fail "record failed"; }
"$TOOLS/record_stats" "$T/s" >"$T/stats"
pid=$(awk '$1 == "process" { print $2 }' "$T/stats")
[ -n "$pid" ] || fail "no process recorded"
# thread PID ID TID EVENTS calls C ...: the main thread's tid (= pid) made 1 call before the exec
# and N after it; the other thread made 1
assert_eq $((N + 1)) "$(awk -v p="$pid" '$1 == "thread" && $4 == p { c += $7 } END { print c + 0 }' "$T/stats")" \
	"calls under the pid's tid"
assert_eq 1 "$(awk -v p="$pid" '$1 == "thread" && $4 != p { c += $7 } END { print c + 0 }' "$T/stats")" \
	"calls under the other thread's tid"
assert_eq $((N + 2)) "$(awk '$1 == "call" && $3 == "exec_work" { print $4 }' "$T/stats")" "calls"
"$ATF" verify "$T/s" >/dev/null || fail "verify"
echo "ok"
