#!/usr/bin/env bash
# Tail calls (-O2 `jmp leaf` at the end of mid): leaf is entered with mid's entry stack pointer,
# which must read as a call nested in mid, not as mid unwound. Exact tree, for every link kind.
source "$(dirname "$0")/lib.sh"
need_bpf
objdump -d "$TARGETS/tail_call" --no-show-raw-insn | awk '/<mid>:/ { f = 1 } f && /jmp/ { print "jmp"; exit }' \
	| grep -q jmp || fail "tail_call was not built with a tail call in mid (see tests/targets/targets.mk)"
N=50
for kind in session multi perf; do
	ATFTRACE_LINK=$kind "$ATF" record -o "$T/$kind" -f mid -f leaf -f main -- "$TARGETS/tail_call" $N \
		>/dev/null 2>"$T/err" || { cat "$T/err" >&2; fail "$kind: record failed"; }
	"$ATF" verify "$T/$kind" >/dev/null || fail "$kind: verify"
	"$TOOLS/record_stats" "$T/$kind" >"$T/stats"
	assert_eq 0 "$(awk '$1 == "process" { print $12 }' "$T/stats")" "$kind: exceptions"
	assert_eq 2 "$(awk '$1 == "process" { print $14 }' "$T/stats")" "$kind: deepest call depth"
	assert_eq $N "$(awk '$1 == "call" && $3 == "leaf" { print $4 }' "$T/stats")" "$kind: calls of leaf"
	"$ATF" dump "$T/$kind" | normalise_dump | sed -n '2,6p' >"$T/tree"
	cat >"$T/want" <<'TREE'
      | main() {
      |   mid() {
<dur> |     leaf();
<dur> |   } /* mid */
      |   mid() {
TREE
	diff -u "$T/want" "$T/tree" >&2 || fail "$kind: leaf is not nested in mid"
done
echo "ok"
