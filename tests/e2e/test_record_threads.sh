#!/usr/bin/env bash
# record -- threads 8 100000: eight threads at full rate; every call of every thread, 0 lost.
source "$(dirname "$0")/lib.sh"
need_bpf
NT=8 NC=100000

"$ATF" record -o "$T/s" -f thread_main -f thread_work -- "$TARGETS/threads" $NT $NC 2>"$T/err" || { cat "$T/err" >&2; fail "record failed"; }
"$ATF" verify "$T/s" >/dev/null || fail "verify"
"$TOOLS/record_stats" "$T/s" >"$T/stats"
read -r _ _ _ threads _ events _ calls _ returns _ exc _ maxdepth _ lost _ <<<"$(grep '^process ' "$T/stats")"
assert_eq 0 "$lost" "lost events"
assert_eq $NT "$threads" "thread directories (the main thread calls nothing traced)"
assert_eq $((NT * (NC + 1) * 2)) "$events" "events"
assert_eq $((NT * NC)) "$(awk '$1 == "call" && $3 == "thread_work" { print $4 }' "$T/stats")" "calls of thread_work"
assert_eq $NT "$(awk '$1 == "call" && $3 == "thread_main" { print $4 }' "$T/stats")" "calls of thread_main"
assert_eq 1 "$maxdepth" "deepest call depth"
# every thread has exactly its own calls, and dense directory ids 0..NT-1
assert_eq "$(seq 0 $((NT - 1)) | tr '\n' ' ')" "$(awk '$1 == "thread" { printf "%s ", $3 }' "$T/stats")" "thread ids"
assert_eq $NT "$(awk -v e=$(((NC + 1) * 2)) '$1 == "thread" && $5 == e' "$T/stats" | wc -l)" "threads with all their events"

# many short threads (more than 64): each gets its own dense directory id, finalized at its exit
"$ATF" record -o "$T/many" -f thread_work -- "$TARGETS/threads" 100 50 2>"$T/err" || { cat "$T/err" >&2; fail "record of 100 threads failed"; }
"$ATF" verify "$T/many" >/dev/null || fail "verify of 100 threads"
"$TOOLS/record_stats" "$T/many" >"$T/stats"
assert_eq "$(seq 0 99 | tr '\n' ' ')" "$(awk '$1 == "thread" { printf "%s ", $3 }' "$T/stats")" "100 thread ids"
assert_eq 5000 "$(awk '$1 == "call" && $3 == "thread_work" { print $4 }' "$T/stats")" "calls of 100 threads"
assert_eq 100 "$(awk '$1 == "thread" && $5 == 100' "$T/stats" | wc -l)" "threads with all their events"
# threads that exit before the recorder reads /proc are still named (the kernel's comm at exit)
assert_eq 100 "$(jq '[.threads[] | select(.name == "threads")] | length' "$T"/many/pid_*/manifest.json)" "named threads"
echo "ok"
