#!/usr/bin/env bash
# record -- recursion 100 3: depth 100 recursion, three times: exact counts and depths.
source "$(dirname "$0")/lib.sh"
need_bpf

"$ATF" record -o "$T/s" -f main -f recurse -- "$TARGETS/recursion" 100 3 2>"$T/err" || { cat "$T/err" >&2; fail "record failed"; }
"$ATF" verify "$T/s" >/dev/null || fail "verify"
"$TOOLS/record_stats" "$T/s" >"$T/stats"
read -r _ _ _ threads _ events _ calls _ returns _ exc _ maxdepth _ lost _ <<<"$(grep '^process ' "$T/stats")"
assert_eq 1 "$threads" "threads"
assert_eq 602 "$events" "events (main + 3 x 100 recursions, call and return)"
assert_eq 301 "$calls" "calls"
# The kernel keeps at most 64 pending return probes per thread (MAX_URETPROBE_DEPTH): returns of
# frames nested deeper are never reported, and the BPF shadow stack closes those frames as
# EXCEPTION ("unwound") when the first reported return below them arrives. Here main and the
# outer 63 recursion levels (64 return probes) return normally; the inner 37 of each recursion
# are closed unwound, all 37 by that one return (a return that closed only some of them would
# miss its own frame under the rest, and close it unwound too).
assert_eq $((1 + 3 * 63)) "$returns" "returns"
assert_eq $((3 * 37)) "$exc" "frames closed as unwound"
assert_eq 0 "$(awk '$1 == "unbalanced" { print $3 }' "$T/stats")" "frames left open"
assert_eq 100 "$maxdepth" "deepest call depth (main is 0, recurse 1..100)"
assert_eq 0 "$lost" "lost events"
assert_eq 300 "$(awk '$1 == "call" && $3 == "recurse" { print $4 }' "$T/stats")" "calls of recurse"
# the innermost frame of the first recursion, exactly: 100 levels of indentation after main
"$ATF" dump "$T/s" | normalise_dump >"$T/dump"
assert_eq 3 "$(grep -c "^      | $(printf '%200s' '')recurse() {\$" "$T/dump")" "calls at depth 100"
echo "ok"
