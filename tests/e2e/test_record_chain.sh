#!/usr/bin/env bash
# record -- call_chain N: exact call counts, nesting and a balanced tree, with the default
# selection (every function of the executable) and with explicit -f globs (exact dump).
source "$(dirname "$0")/lib.sh"
need_bpf
N=1000

"$ATF" record -o "$T/all" -- "$TARGETS/call_chain" $N 2>"$T/err" || { cat "$T/err" >&2; fail "record (default selection) failed"; }
"$ATF" verify "$T/all" >/dev/null || fail "verify of the default-selection session"
"$TOOLS/record_stats" "$T/all" >"$T/stats"
st() { awk -v k="$1" -v n="$2" '$1 == k && $3 == n { print $4 }' "$T/stats"; }
assert_eq 1 "$(awk '$1 == "processes" { print $2 }' "$T/stats")" "processes"
assert_eq 1 "$(st call main)" "calls of main"
assert_eq $N "$(st call chain_a)" "calls of chain_a"
assert_eq $N "$(st call chain_b)" "calls of chain_b"
assert_eq $N "$(st call chain_c)" "calls of chain_c"
assert_eq 0 "$(awk '$1 == "process" { print $16 }' "$T/stats")" "lost events"
assert_eq "target exited" "$(awk '$1 == "process" { print $18, $19 }' "$T/stats")" "end reason"

# Explicit globs, two iterations: the whole tree, exactly.
"$ATF" record -o "$T/two" -f main -f 'chain_*' -- "$TARGETS/call_chain" 2 2>"$T/err" || { cat "$T/err" >&2; fail "record -f failed"; }
"$ATF" verify "$T/two" >/dev/null || fail "verify of the -f session"
"$ATF" dump "$T/two" | normalise_dump >"$T/dump"
cat >"$T/want" <<'W'
# thread_0 tid=T0 name=call_chain events=14
      | main() {
      |   chain_a() {
      |     chain_b() {
<dur> |       chain_c();
<dur> |     } /* chain_b */
<dur> |   } /* chain_a */
      |   chain_a() {
      |     chain_b() {
<dur> |       chain_c();
<dur> |     } /* chain_b */
<dur> |   } /* chain_a */
<dur> | } /* main */
W
diff -u "$T/want" "$T/dump" >&2 || fail "dump of call_chain 2 differs"
echo "ok: $N chains exact, tree of 2 exact"
