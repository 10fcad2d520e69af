#!/usr/bin/env bash
# fork_exec K M: the child calls child_work K times then execs /bin/true; the parent waits and
# calls parent_work M times. With --follow-fork the child has its own pid_<PID>/, which goes on
# through its exec until /bin/true exits; without it, only the parent is recorded.
source "$(dirname "$0")/lib.sh"
need_bpf
K=5 M=3

"$ATF" record --follow-fork -o "$T/ff" -f child_work -f parent_work -- "$TARGETS/fork_exec" $K $M 2>"$T/err" || { cat "$T/err" >&2; fail "record --follow-fork failed"; }
"$TOOLS/record_stats" "$T/ff" >"$T/stats"
assert_eq "processes 2" "$(head -n 1 "$T/stats")" "process directories"
parent=$(awk '$1 == "call" && $3 == "parent_work" { print $2 }' "$T/stats")
child=$(awk '$1 == "call" && $3 == "child_work" { print $2 }' "$T/stats")
[ -n "$parent" ] && [ -n "$child" ] && [ "$parent" != "$child" ] || fail "parent ($parent) and child ($child) not told apart"
assert_eq $M "$(awk -v p=$parent '$1 == "call" && $2 == p && $3 == "parent_work" { print $4 }' "$T/stats")" "parent's calls"
assert_eq "" "$(awk -v p=$parent '$1 == "call" && $2 == p && $3 == "child_work"' "$T/stats")" "child's calls in the parent's directory"
assert_eq $K "$(awk -v p=$child '$1 == "call" && $2 == p && $3 == "child_work" { print $4 }' "$T/stats")" "child's calls"
assert_eq "target exited" "$(awk -v p=$child '$1 == "process" && $2 == p { print $18, $19 }' "$T/stats")" "child's end reason"
assert_eq "target exited" "$(awk -v p=$parent '$1 == "process" && $2 == p { print $18, $19 }' "$T/stats")" "parent's end reason"
for d in "$T"/ff/pid_*; do "$ATF" verify "$d" >/dev/null || fail "verify $d"; done
assert_contains "$T/err" "process $child called exec" "exec reported"

"$ATF" record -o "$T/nf" -f child_work -f parent_work -- "$TARGETS/fork_exec" $K $M 2>"$T/err" || { cat "$T/err" >&2; fail "record without --follow-fork failed"; }
"$TOOLS/record_stats" "$T/nf" >"$T/stats"
assert_eq "processes 1" "$(head -n 1 "$T/stats")" "process directories without --follow-fork"
assert_eq $M "$(awk '$1 == "call" && $3 == "parent_work" { print $4 }' "$T/stats")" "parent's calls"
assert_eq "" "$(awk '$1 == "call" && $3 == "child_work"' "$T/stats")" "child's calls without --follow-fork"
"$ATF" verify "$T/nf" >/dev/null || fail "verify without --follow-fork"
echo "ok"
