#!/usr/bin/env bash
# record --call-sites, PLT sites (user/patch/callsite_plt.c): a library's exported functions
# that call each other through its own PLT (tests/targets/libcsplt.so, linked -z now: every
# slot bound at load) are redirected like direct calls, since each GOT slot already holds the
# function's address; a slot bound to another definition (LD_PRELOAD) keeps its call as it is.
#   - `record -v` says 4 PLT sites of 3 functions, none left out;
#   - exact calls and parents, the same as with plain probes (--no-trampolines);
#   - csplt's own call of pl_outer@plt (another module, bound at load) is redirected too, to a
#     stub near csplt (user/patch/callsite_xmod.c);
#   - the share of calls through the stubs (bench/call_sites_share.py: the session's stub
#     entry program's run count): 1800 of 1800 for 300 rounds;
#   - the target's output is the untraced run's; the library's and the program's text is the
#     file's after a -p session and differs during it;
#   - pl_swap preloaded from libcsplt_pre.so: its PLT site is left out ("bound elsewhere"),
#     the preloaded definition runs (the output says so) and the counts stay exact;
#   - the same library bound lazily (csplt_lazy, libcspltlazy.so): at launch no slot is bound
#     and every PLT site is left out ("not bound yet"), counts exact; attached with -p after a
#     round has bound the slots, all 4 sites are redirected, and the program's, counts exact.
source "$(dirname "$0")/lib.sh"
need_bpf
kill_on_exit
P=$TARGETS/csplt
LIB=$TARGETS/libcsplt.so
PRE=$TARGETS/libcsplt_pre.so
PL=$TARGETS/csplt_lazy
[ -x "$P" ] && [ -f "$PRE" ] && [ -x "$PL" ] || fail "build first: make OUTPUT=$OUTPUT targets"
[ -x "$TOOLS/atf_raw" ] || fail "build first: make OUTPUT=$OUTPUT tools"
command -v bpftool >/dev/null || fail "bpftool missing (a build dependency)"
N=300
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

# calls NAME SESSION: the report's call count of NAME
calls() { "$ATF" report "$2" | awk -v f="$1" '$13 == f { n = $5 } END { print n + 0 }'; }

"$P" $N >"$T/plain.out" || fail "the untraced run failed"

# ---- PLT sites against plain probes ------------------------------------------------------------
"$ATF" record --call-sites -v -o "$T/cs" -f 'libcsplt.so:*' -- "$P" $N >"$T/cs.out" 2>"$T/cs.err" \
	|| { cat "$T/cs.err" >&2; fail "record --call-sites failed"; }
assert_contains "$T/cs.err" "libcsplt\.so: 4 call sites of 3 functions redirected \(0 direct, 4 through the PLT; 0 left out: 0 with a thread inside, 0 not the file's bytes, 0 out of reach, 0 PLT slots not bound yet, 0 PLT slots bound elsewhere\)" \
	"pl_outer's calls of pl_mid (2) and pl_swap, pl_mid's call of pl_leaf, all through the PLT"
assert_contains "$T/cs.err" "csplt \(its calls into the traced modules\): 1 call site of 1 function redirected \(0 direct, 1 through the PLT; 0 left out" \
	"csplt's call of pl_outer@plt, in another module than pl_outer"
if grep -q "through trampolines\|registration guard" "$T/cs.err"; then
	fail "--call-sites wrote an entry trampoline or armed the guard"
fi
cmp -s "$T/plain.out" "$T/cs.out" || fail "the output differs from the untraced run's: $(diff "$T/plain.out" "$T/cs.out" | head -5)"
"$ATF" verify "$T/cs" >/dev/null || fail "verify the --call-sites session"
"$ATF" record --no-trampolines -o "$T/np" -f 'libcsplt.so:*' -- "$P" $N >/dev/null 2>"$T/np.err" \
	|| { cat "$T/np.err" >&2; fail "record --no-trampolines failed"; }
call_summary "$T/cs" >"$T/cs.sum"
call_summary "$T/np" >"$T/np.sum"
diff "$T/np.sum" "$T/cs.sum" >&2 || fail "calls or parents differ between --call-sites and plain probes"
assert_eq "$N $((2 * N)) $((2 * N)) $N" "$(for f in pl_outer pl_mid pl_leaf pl_swap; do calls $f "$T/cs"; done | xargs)" \
	"calls of pl_outer, pl_mid, pl_leaf, pl_swap"

# ---- the share of calls that take the stubs ----------------------------------------------------
printf '%d\nMARK\n' $N >"$T/work"
share=$(python3 "$ROOT/bench/call_sites_share.py" "$ATF" "$T/sh" "$T/work" -f 'libcsplt.so:*' -- "$P" -) \
	|| fail "call_sites_share.py failed: $share"
assert_eq "sites 5 stub_calls $((6 * N)) calls $((6 * N)) lost 0" "$(echo "$share" | awk '{ print $1, $2, $3, $4, $5, $6, $7, $8 }')" \
	"calls through the stubs (pl_outer, pl_mid, pl_leaf, pl_swap) and calls recorded"

# ---- the library's text: ours during a -p session, the file's after it -----------------------
mkfifo "$T/in" "$T/ready"
"$P" - <"$T/in" >"$T/serve.out" &
target=$!
exec 3>"$T/in"
echo $N >&3
"$ATF" record --call-sites -p $target -o "$T/s" -f 'libcsplt.so:*' --ready-file "$T/ready" 2>"$T/s.err" &
rec=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/s.err" >&2; fail "record -p --call-sites never became ready"; }
during=$(text_diff $target "$LIB")
[ "$during" -gt 0 ] || fail "no redirected call in the library's text during the session"
[ "$(text_diff $target "$P")" -gt 0 ] || fail "no redirected call in the program's text during the session"
echo $N >&3
kill -INT $rec
wait $rec || { cat "$T/s.err" >&2; fail "record -p --call-sites failed"; }
assert_eq 0 "$(text_diff $target "$LIB")" "bytes of the library's text that differ from the file after the session"
assert_eq 0 "$(text_diff $target "$P")" "bytes of the program's text that differ from the file after the session"
echo $N >&3
exec 3>&-
wait $target || fail "the target failed: $(cat "$T/serve.out")"
assert_eq "$(cat "$T/plain.out")$(cat "$T/plain.out")$(cat "$T/plain.out")" "$(tr -d '\n' <"$T/serve.out")" "the -p target's sums"

# ---- a slot bound elsewhere: pl_swap preloaded ---------------------------------------------------
LD_PRELOAD=$PRE "$P" $N >"$T/pre.out" || fail "the untraced preloaded run failed"
cmp -s "$T/plain.out" "$T/pre.out" && fail "the preloaded pl_swap did not change the output: the case tests nothing"
LD_PRELOAD=$PRE "$ATF" record --call-sites -v -o "$T/pcs" -f 'libcsplt.so:*' -- "$P" $N >"$T/pcs.out" 2>"$T/pcs.err" \
	|| { cat "$T/pcs.err" >&2; fail "record --call-sites, preloaded, failed"; }
assert_contains "$T/pcs.err" "libcsplt\.so: 3 call sites of 2 functions redirected \(0 direct, 3 through the PLT; 1 left out: .* 0 PLT slots not bound yet, 1 PLT slots bound elsewhere\)" \
	"the call of pl_swap@plt, bound to libcsplt_pre.so, left out"
cmp -s "$T/pre.out" "$T/pcs.out" || fail "preloaded: the output differs from the untraced run's"
LD_PRELOAD=$PRE "$ATF" record --no-trampolines -o "$T/pnp" -f 'libcsplt.so:*' -- "$P" $N >/dev/null 2>"$T/pnp.err" \
	|| { cat "$T/pnp.err" >&2; fail "record --no-trampolines, preloaded, failed"; }
call_summary "$T/pcs" >"$T/pcs.sum"
call_summary "$T/pnp" >"$T/pnp.sum"
diff "$T/pnp.sum" "$T/pcs.sum" >&2 || fail "preloaded: calls or parents differ between --call-sites and plain probes"
assert_eq "$N $((2 * N)) $((2 * N)) 0" "$(for f in pl_outer pl_mid pl_leaf pl_swap; do calls $f "$T/pcs"; done | xargs)" \
	"preloaded: calls of pl_outer, pl_mid, pl_leaf, and of libcsplt's pl_swap (never reached)"

# ---- lazily bound slots: not bound at launch; bound once called -----------------------------
"$ATF" record --call-sites -v -o "$T/lz" -f 'libcspltlazy.so:*' -- "$PL" $N >"$T/lz.out" 2>"$T/lz.err" \
	|| { cat "$T/lz.err" >&2; fail "record --call-sites of the lazy program failed"; }
assert_contains "$T/lz.err" "libcspltlazy\.so: 0 call sites of 0 functions redirected \(0 direct, 0 through the PLT; 4 left out: .* 4 PLT slots not bound yet, 0 PLT slots bound elsewhere\)" \
	"lazy slots at launch: not bound yet"
cmp -s "$T/plain.out" "$T/lz.out" || fail "lazy: the output differs from the untraced run's"
assert_eq "$N $((2 * N)) $((2 * N)) $N" "$(for f in pl_outer pl_mid pl_leaf pl_swap; do calls $f "$T/lz"; done | xargs)" \
	"lazy, at launch: calls of pl_outer, pl_mid, pl_leaf, pl_swap"
mkfifo "$T/lin" "$T/lout" "$T/lready"
"$PL" - <"$T/lin" >"$T/lout" &
lazy=$!
exec 5>"$T/lin" 6<"$T/lout"
echo $N >&5
read -r -t 60 -u 6 first || fail "the lazy target never finished its first round"
"$ATF" record --call-sites -v -p $lazy -o "$T/lp" -f 'libcspltlazy.so:*' --ready-file "$T/lready" 2>"$T/lp.err" &
rec=$!
timeout 60 cat "$T/lready" >/dev/null || { cat "$T/lp.err" >&2; fail "record -p of the lazy target never became ready"; }
echo $N >&5
read -r -t 60 -u 6 second || fail "the lazy target never finished its second round"
kill -INT $rec
wait $rec || { cat "$T/lp.err" >&2; fail "record -p of the lazy target failed"; }
exec 5>&-
wait $lazy || fail "the lazy target failed"
exec 6<&-
assert_eq "$(cat "$T/plain.out") $(cat "$T/plain.out")" "$first $second" "the lazy -p target's sums"
assert_contains "$T/lp.err" "libcspltlazy\.so: 4 call sites of 3 functions redirected \(0 direct, 4 through the PLT; 0 left out: .* 0 PLT slots not bound yet, 0 PLT slots bound elsewhere\)" \
	"lazy slots bound by the first round: redirected"
assert_contains "$T/lp.err" "csplt_lazy \(its calls into the traced modules\): 1 call site of 1 function redirected \(0 direct, 1 through the PLT; 0 left out" \
	"the lazy program's slot bound by the first round: redirected"
assert_eq "$N $((2 * N)) $((2 * N)) $N" "$(for f in pl_outer pl_mid pl_leaf pl_swap; do calls $f "$T/lp"; done | xargs)" \
	"lazy, -p after binding: calls of pl_outer, pl_mid, pl_leaf, pl_swap"
echo "ok: --call-sites through the PLT: $share; exact counts; the preloaded slot left alone"
