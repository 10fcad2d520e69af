#!/usr/bin/env bash
# record --call-sites redirects tail calls too (user/patch/callsite_tail.c): a `jmp f` or `jne f`
# inside a traced function g gets its rel32 aimed at a tail stub (probe T, then f's relocated
# first instructions), and f returns through g's return capture. On tests/targets/cs_tail
# (tail-called functions that start with mov, which a plain probe single-steps):
#   - the -v lines count the sites: 5 direct calls and 5 tail calls (jmp, jne, a chain
#     g -> f -> h, a tail call into a recursion); the one in tl_u, not traced, goes to tl_f's
#     plain entry (user/patch/callsite_plain.c);
#   - exact calls per function and exactly the tree of plain probes (--no-trampolines): a
#     tail-called function nested in its tail-caller, the chain nested twice, tl_f called from
#     the untraced tl_u at the top;
#   - a tail-caller's return value (-R) is its callee's, closed by the same return run;
#   - a recursion 201 frames deep through tail calls: the same calls as plain probes, no frame
#     ends as unwound (plain probes: the kernel's 64 pending uretprobes end the deeper ones so);
#   - -p: the text is the file's after the session; bpftrace on tl_f hands it back, and its two
#     tail sites (jmp, jne; and tl_u's, to its plain entry) get the file's bytes back at once; after a kill -9 of the recorder the tail
#     stubs stay (the target runs on, right), and `atftrace restore -p` puts the file's bytes
#     back.
source "$(dirname "$0")/lib.sh"
need_bpf
kill_on_exit
CT=$TARGETS/cs_tail
[ -x "$CT" ] || fail "build first: make OUTPUT=$OUTPUT targets"
[ -x "$TOOLS/atf_raw" ] || fail "build first: make OUTPUT=$OUTPUT tools"
objdump -d "$CT" >"$T/dis" || fail "objdump cs_tail"
grep -qE "e9 .*jmp +[0-9a-f]+ <tl_f>" "$T/dis" || fail "cs_tail has no jmp tl_f (rel32)"
grep -qE "0f 85 .*jne +[0-9a-f]+ <tl_f>" "$T/dis" || fail "cs_tail has no jne tl_f (rel32)"
N=200 D=100
SEL=(-f 'tl_[a-t]*')       # every tl_ function but tl_u

# ---- tail calls: exact counts and tree, the same as plain probes --------------------------------
"$CT" all $N >"$T/plain.out" || fail "the untraced run failed"
"$ATF" record --call-sites -v -o "$T/cs" "${SEL[@]}" -- "$CT" all $N >"$T/cs.out" 2>"$T/cs.err" \
	|| { cat "$T/cs.err" >&2; fail "record --call-sites failed"; }
assert_contains "$T/cs.err" "cs_tail: 11 call sites of 8 functions redirected \(11 direct, 0 through the PLT; 0 left out" \
	"main's calls of tl_g, tl_cond, tl_cg, tl_deep, tl_deep's of tl_dt, the 5 tail calls and tl_u's"
assert_contains "$T/cs.err" "cs_tail: 5 of them tail calls \(jmp or jcc\) in traced functions, to their functions' tail entries$" "the tail calls"
assert_contains "$T/cs.err" "cs_tail: 1 of them tail call \(jmp or jcc\) to plain entries; 0 bodies' first jumps aimed at one$" \
	"tl_u's tail call, to tl_f's plain entry"
cmp -s "$T/plain.out" "$T/cs.out" || fail "the output differs from the untraced run's"
"$ATF" verify "$T/cs" >/dev/null || fail "verify the --call-sites session"
"$ATF" record --no-trampolines -o "$T/plain" "${SEL[@]}" -- "$CT" all $N >/dev/null 2>"$T/p.err" \
	|| { cat "$T/p.err" >&2; fail "record --no-trampolines failed"; }
# tl_f: 2N from tl_g (direct and through a pointer), N - 1 from tl_cond (jne taken unless 0), N from tl_u
assert_eq "$((4 * N - 1)) $((2 * N)) $N $N $N $N" "$("$ATF" report "$T/cs" | awk '
	{ c[$13] = $5 } END { print c["tl_f"], c["tl_g"], c["tl_cond"], c["tl_cg"], c["tl_cf"], c["tl_ch"] }')" \
	"calls of tl_f, tl_g, tl_cond, tl_cg, tl_cf, tl_ch"
"$ATF" dump "$T/cs" | normalise_dump >"$T/cs.tree"
"$ATF" dump "$T/plain" | normalise_dump >"$T/plain.tree"
diff "$T/plain.tree" "$T/cs.tree" >&2 || fail "the call tree differs between --call-sites and plain probes"
call_summary "$T/cs" >"$T/cs.sum"
assert_eq 0 "$(awk '$1 == "unwound" { print $2 }' "$T/cs.sum")" "frames closed as unwound with --call-sites"
# the tree of round 1 (round 0's tl_cond does not tail-call): tail-called frames nest in their
# tail-callers, the chain twice; tl_u is not traced, its tl_f is at the top
sed -n '/^# thread_0/,$p' "$T/cs.tree" | sed -n '15,30p' >"$T/round1"
cat >"$T/want" <<'TREE'
      | tl_g() {
<dur> |   tl_f();
<dur> | } /* tl_g */
      | tl_g() {
<dur> |   tl_f();
<dur> | } /* tl_g */
      | tl_cond() {
<dur> |   tl_f();
<dur> | } /* tl_cond */
      | tl_cg() {
      |   tl_cf() {
<dur> |     tl_ch();
<dur> |   } /* tl_cf */
<dur> | } /* tl_cg */
<dur> | tl_f();
      | tl_g() {
TREE
diff -u "$T/want" "$T/round1" >&2 || fail "round 1's tree"

# ---- return values: a tail-caller, closed with its callee, returns what that returns -----------
"$ATF" record --call-sites -o "$T/rv" "${SEL[@]}" -R 'tl_g@retval/i32' -R 'tl_cg@retval/i32' -- "$CT" all 3 \
	>/dev/null 2>"$T/rv.err" || { cat "$T/rv.err" >&2; fail "record --call-sites -R failed"; }
"$ATF" dump "$T/rv" >"$T/rv.dump"
assert_eq "4 4 5 5 6 6" "$(sed -nE 's|.*\} = (-?[0-9]+); /\* tl_g \*/$|\1|p' "$T/rv.dump" | paste -sd' ')" "tl_g's return values"
assert_eq "7 8 9" "$(sed -nE 's|.*\} = (-?[0-9]+); /\* tl_cg \*/$|\1|p' "$T/rv.dump" | paste -sd' ')" "tl_cg's return values (a chain of two tail calls)"

# ---- a recursion through tail calls, 2D + 1 frames deep --------------------------------------------
"$ATF" record --call-sites -o "$T/dcs" "${SEL[@]}" -- "$CT" deep 3 $D >/dev/null 2>"$T/dcs.err" \
	|| { cat "$T/dcs.err" >&2; fail "record --call-sites deep failed"; }
"$ATF" record --no-trampolines -o "$T/dplain" "${SEL[@]}" -- "$CT" deep 3 $D >/dev/null 2>"$T/dp.err" \
	|| { cat "$T/dp.err" >&2; fail "record --no-trampolines deep failed"; }
for s in dcs dplain; do "$ATF" report "$T/$s" | awk 'NR > 2 { print $13, $5 }' | sort >"$T/$s.calls"; done
assert_eq "tl_deep $((3 * (D + 1)))|tl_dt $((3 * D))" "$(paste -sd'|' "$T/dcs.calls")" "calls of the recursion"
diff "$T/dplain.calls" "$T/dcs.calls" >&2 || fail "deep: calls per function differ from plain probes"
call_summary "$T/dcs" >"$T/dcs.sum"
call_summary "$T/dplain" >"$T/dplain.sum"
assert_eq 0 "$(awk '$1 == "unwound" { print $2 }' "$T/dcs.sum")" "deep: frames closed as unwound with --call-sites"
[ "$(awk '$1 == "unwound" { print $2 }' "$T/dplain.sum")" -gt 0 ] || fail "deep: plain probes should end frames past 64 as unwound"
"$TOOLS/record_stats" "$T/dcs" >"$T/dcs.stats"
assert_eq $((2 * D)) "$(awk '$1 == "process" { print $14 }' "$T/dcs.stats")" "deep: the deepest call depth (2D + 1 frames, from 0)"

# ---- -p: the text after the session; kill -9, then restore --------------------------------------
mkfifo "$T/served" "$T/ready" "$T/ready2"
"$CT" serve "$T/served" >"$T/serve.out" &
target=$!
timeout 60 cat "$T/served" >/dev/null || fail "the serving target never became ready"
"$ATF" record --call-sites -v -p $target -o "$T/s" "${SEL[@]}" --ready-file "$T/ready" 2>"$T/s.err" &
rec=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/s.err" >&2; fail "record -p --call-sites never became ready"; }
assert_contains "$T/s.err" "cs_tail: [1-9] of them tail calls? " "-p: tail calls redirected"
[ "$(text_diff $target "$CT" int3)" -gt 0 ] || fail "no redirected site in the text during the session"
kill -INT $rec
wait $rec || { cat "$T/s.err" >&2; fail "record -p --call-sites failed"; }
"$ATF" verify "$T/s" >/dev/null || fail "verify the -p session"
assert_eq 0 "$(text_diff $target "$CT")" "bytes of the text that differ from the file after the session"

# ---- a hand-back of tl_f (bpftrace on its entry) writes its tail sites back -----------------------
# site_bytes PID FILE OFF LEN: LEN bytes of FILE's mapping in PID at file offset OFF, as hex
site_bytes() {
	python3 - "$@" <<'PY'
import os, sys
pid, path, off, n = sys.argv[1], os.path.realpath(sys.argv[2]), int(sys.argv[3], 16), int(sys.argv[4])
ino = os.stat(path).st_ino
for line in open(f"/proc/{pid}/maps"):
    a = line.split()
    lo, hi = (int(x, 16) for x in a[0].split("-"))
    if len(a) >= 6 and int(a[4]) == ino and int(a[2], 16) <= off < int(a[2], 16) + hi - lo:
        with open(f"/proc/{pid}/mem", "rb") as m:
            m.seek(lo + off - int(a[2], 16))
            print(m.read(n).hex())
        break
PY
}
# the file offsets of tl_g's jmp tl_f and tl_cond's jne tl_f (a PIE's text: addresses are offsets)
jmp_off=$(awk '/<tl_g>:/ { f = 1 } f && /jmp .*<tl_f>/ { sub(":", "", $1); print $1; exit }' "$T/dis")
jne_off=$(awk '/<tl_cond>:/ { f = 1 } f && /jne .*<tl_f>/ { sub(":", "", $1); print $1; exit }' "$T/dis")
file_jmp=$(od -An -tx1 -j $((16#$jmp_off)) -N5 "$CT" | tr -d ' \n')
file_jne=$(od -An -tx1 -j $((16#$jne_off)) -N6 "$CT" | tr -d ' \n')
need_tracefs
command -v bpftrace >/dev/null || fail "bpftrace is missing (scripts/deps.sh installs it)"
mkfifo "$T/ready_hb"
"$ATF" record --call-sites -v -p $target -o "$T/hb" "${SEL[@]}" --ready-file "$T/ready_hb" 2>"$T/hb.err" &
rec=$!
timeout 60 cat "$T/ready_hb" >/dev/null || { cat "$T/hb.err" >&2; fail "record -p for the hand-back never became ready"; }
[ "$(site_bytes $target "$CT" $jmp_off 5)" != "$file_jmp" ] || [ "$(site_bytes $target "$CT" $jne_off 6)" != "$file_jne" ] \
	|| fail "neither tail call to tl_f redirected before the hand-back"
bpftrace -e "BEGIN { printf(\"ready\\n\"); } uprobe:$CT:tl_f { @f = count(); }" >"$T/bt.out" 2>&1 &
bt=$!
wait_for "$T/bt.out" "^ready$" "bpftrace attached"
wait_for "$T/hb.err" "^atftrace record: tl_f \(cs_tail\) handed back: another tool registered a uprobe on it; ([1-3]) of its \1 redirected call sites? written back" \
	"tl_f handed back, its tail sites written back"
assert_eq "$file_jmp $file_jne" "$(site_bytes $target "$CT" $jmp_off 5) $(site_bytes $target "$CT" $jne_off 6)" \
	"tl_g's jmp and tl_cond's jne after the hand-back: the file's"
stop_bpftrace $bt
[ "$(awk '/^@f:/ { print $2 }' "$T/bt.out")" -gt 0 ] || fail "bpftrace saw no call of tl_f"
kill -INT $rec
wait $rec || { cat "$T/hb.err" >&2; fail "record -p (hand-back) failed"; }
assert_eq 0 "$(text_diff $target "$CT")" "bytes of the text that differ from the file after the hand-back session"

"$ATF" record --call-sites -v -p $target -o "$T/k" "${SEL[@]}" --ready-file "$T/ready2" 2>"$T/k.err" &
rec=$!
timeout 60 cat "$T/ready2" >/dev/null || { cat "$T/k.err" >&2; fail "the second record -p never became ready"; }
ntail=$(sed -n 's/.*cs_tail: \([0-9]*\) of them tail calls\? (jmp or jcc) in traced .*/\1/p' "$T/k.err")
[ "${ntail:-0}" -gt 0 ] || { cat "$T/k.err" >&2; fail "the second session redirected no tail call"; }
kill -KILL $rec
rc=0; wait $rec || rc=$?
assert_eq 137 $rc "the recorder's status after kill -9"
[ "$(text_diff $target "$CT")" -gt 0 ] || fail "kill -9: the redirected sites should stay"
kill -0 $target || fail "the target died after the recorder's kill -9"
"$ATF" restore -p $target >"$T/r.out" 2>"$T/r.err" || { cat "$T/r.out" "$T/r.err" >&2; fail "restore"; }
assert_contains "$T/r.out" "cs_tail: restored [0-9]+ of [0-9]+ patches$" "restore's line"
assert_eq 0 "$(text_diff $target "$CT")" "bytes of the text that differ from the file after restore"
kill -TERM $target
wait $target || fail "the served target failed: $(cat "$T/serve.out")"
assert_contains "$T/serve.out" "^served [1-9][0-9]*$" "the served target's count"
echo "ok: $N rounds of tail calls as plain probes record them; $((2 * D + 1)) deep without an unwound frame; restored after kill -9"
