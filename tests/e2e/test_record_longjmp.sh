#!/usr/bin/env bash
# longjmp out of three traced frames: they are closed as EXCEPTION events (innermost first) at
# the next traced call, and the tree stays balanced.
source "$(dirname "$0")/lib.sh"
need_bpf
N=4

"$ATF" record -o "$T/s" -f main -f 'jump_*' -f after_jump -- "$TARGETS/longjmp" $N 2>"$T/err" || { cat "$T/err" >&2; fail "record failed"; }
"$ATF" verify "$T/s" >/dev/null || fail "verify"
"$TOOLS/record_stats" "$T/s" >"$T/stats"
for f in jump_a jump_b jump_c; do
	assert_eq $N "$(awk -v f=$f '$1 == "call" && $3 == f { print $4 }' "$T/stats")" "calls of $f"
	assert_eq $N "$(awk -v f=$f '$1 == "exception" && $3 == f { print $4 }' "$T/stats")" "exceptions of $f"
done
assert_eq $N "$(awk '$1 == "call" && $3 == "after_jump" { print $4 }' "$T/stats")" "calls of after_jump"
assert_eq 0 "$(awk '$1 == "unbalanced" { print $3 }' "$T/stats")" "frames left open"
"$ATF" dump "$T/s" | normalise_dump | sed -n '2,9p' >"$T/dump"
cat >"$T/want" <<'W'
      | main() {
      |   jump_a() {
      |     jump_b() {
      |       jump_c() {
<dur> |       } /* jump_c */ (unwound)
<dur> |     } /* jump_b */ (unwound)
<dur> |   } /* jump_a */ (unwound)
<dur> |   after_jump();
W
diff -u "$T/want" "$T/dump" >&2 || fail "dump of the first longjmp differs"
echo "ok"
