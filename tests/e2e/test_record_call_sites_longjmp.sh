#!/usr/bin/env bash
# record --call-sites and longjmp: tests/targets/cs_longjmp longjmps out of K + 4 frames that
# were all entered through per-site stubs (lj_a -> lj_b -> lj_c -> lj_rec K+1 deep), in two
# rounds of three; the third returns through every stub. Probe B of a frame longjmp'd past never
# runs: the frame is closed as unwound at the next traced call, innermost first, as plain
# probes close it (test_record_longjmp.sh). Asserted:
#   - the program's output (its own results, checked, and its own count of calls) is the
#     untraced run's;
#   - exact calls, returns and unwound frames per function; calls, parents and unwound frames
#     the same as plain probes' (--no-trampolines), and the same dump;
#   - K = 70 (a stack 75 deep), longjmp'ing 20 frames to lj_rec(20): every other frame returns
#     through its stub, where plain probes lose the returns past 64 (LJ_DEEP_MODE=--no-trampolines
#     runs these assertions on plain probes: they fail);
#   - a longjmp out of all 74 frames at once: every one closed as unwound by the next call's
#     hit (one hit closes every dead frame);
#   - record -p: the text is the file's after the session, and the target goes on longjmp'ing
#     with right results.
source "$(dirname "$0")/lib.sh"
need_bpf
kill_on_exit
LJ=$TARGETS/cs_longjmp
[ -x "$LJ" ] || fail "build first: make OUTPUT=$OUTPUT targets"
N=300
K=5

# check_session NAME N K [J]: exact counts of a session of "all N K [J]" (rounds i % 3 != 0
# longjmp: to the round, or to lj_rec(J))
check_session() {
	local s=$1 n=$2 k=$3 jl=${4:--1} j r calls exc want
	j=$((n - (n + 2) / 3))
	r=$((n - j))
	"$ATF" verify "$T/$s" >/dev/null || fail "$s: verify"
	"$TOOLS/record_stats" "$T/$s" >"$T/$s.stats"
	# calls: N of lj_a, lj_b, lj_c, lj_after; N(K+1) of lj_rec; R of lj_leaf. Unwound: to the
	# round, J of lj_a, lj_b, lj_c and J(K+1) of lj_rec; to lj_rec(J), J of lj_rec each time.
	# Every other call returns.
	calls=$((n * (k + 5) + r))
	if [ "$jl" -lt 0 ]; then
		exc=$((j * (k + 4)))
		want="lj_a $n $j lj_b $n $j lj_c $n $j lj_rec $((n * (k + 1))) $((j * (k + 1))) lj_leaf $r 0 lj_after $n 0"
	else
		exc=$((j * jl))
		want="lj_a $n 0 lj_b $n 0 lj_c $n 0 lj_rec $((n * (k + 1))) $exc lj_leaf $r 0 lj_after $n 0"
	fi
	assert_eq "$calls $((calls - exc)) $exc 0 0" "$(awk '$1 == "process" { c += $8; ret += $10; e += $12; l += $16 }
		$1 == "unbalanced" { u += $3 } END { print c + 0, ret + 0, e + 0, l + 0, u + 0 }' "$T/$s.stats")" \
		"$s: calls returns exceptions lost unbalanced"
	assert_eq "$want" "$(awk '$1 == "call" { c[$3] += $4 } $1 == "exception" { e[$3] += $4 }
		END { n = split("lj_a lj_b lj_c lj_rec lj_leaf lj_after", f, " ")
		      for (i = 1; i <= n; i++) printf "%s%s %d %d", (i > 1 ? " " : ""), f[i], c[f[i]], e[f[i]] }' "$T/$s.stats")" \
		"$s: calls and unwound frames per function"
}

"$LJ" all $N $K >"$T/plain.out" || fail "the untraced run failed"

# ---- call sites against plain probes -------------------------------------------------------------
"$ATF" record --call-sites -v -o "$T/cs" -f 'lj_*' -- "$LJ" all $N $K >"$T/cs.out" 2>"$T/cs.err" \
	|| { cat "$T/cs.err" >&2; fail "record --call-sites failed"; }
assert_contains "$T/cs.err" "cs_longjmp: 8 call sites of 6 functions redirected \(8 direct" \
	"the calls of lj_a, lj_b, lj_c, lj_rec (3), lj_leaf and lj_after"
cmp -s "$T/plain.out" "$T/cs.out" || fail "the output differs from the untraced run's: $(diff "$T/plain.out" "$T/cs.out" | head -5)"
check_session cs $N $K
"$ATF" record --no-trampolines -o "$T/p" -f 'lj_*' -- "$LJ" all $N $K >"$T/p.out" 2>"$T/p.err" \
	|| { cat "$T/p.err" >&2; fail "record --no-trampolines failed"; }
check_session p $N $K
call_summary "$T/cs" >"$T/cs.sum"
call_summary "$T/p" >"$T/p.sum"
diff "$T/p.sum" "$T/cs.sum" >&2 || fail "calls, parents or unwound frames differ between --call-sites and plain probes"
# the dump: the first three rounds (one returning, two longjmp'ing) the same as plain probes';
# round 1's frames closed innermost first at lj_after, the next traced call
for s in cs p; do "$ATF" dump "$T/$s" | normalise_dump | sed -n '2,40p' >"$T/$s.dump"; done
diff -u "$T/p.dump" "$T/cs.dump" >&2 || fail "the dump differs from plain probes'"
sed -n '21,39p' "$T/cs.dump" >"$T/jump.dump"
cat >"$T/want" <<'W'
      | lj_a() {
      |   lj_b() {
      |     lj_c() {
      |       lj_rec() {
      |         lj_rec() {
      |           lj_rec() {
      |             lj_rec() {
      |               lj_rec() {
      |                 lj_rec() {
<dur> |                 } /* lj_rec */ (unwound)
<dur> |               } /* lj_rec */ (unwound)
<dur> |             } /* lj_rec */ (unwound)
<dur> |           } /* lj_rec */ (unwound)
<dur> |         } /* lj_rec */ (unwound)
<dur> |       } /* lj_rec */ (unwound)
<dur> |     } /* lj_c */ (unwound)
<dur> |   } /* lj_b */ (unwound)
<dur> | } /* lj_a */ (unwound)
<dur> | lj_after();
W
diff -u "$T/want" "$T/jump.dump" >&2 || fail "the first longjmp's frames, closed innermost first"

# ---- a stack 75 deep: returns past 64 still seen --------------------------------------------------
# lj_rec 71 deep; the longjmp goes to lj_rec(20): 20 frames unwound, 54 return through their stubs
DEEP_MODE=${LJ_DEEP_MODE:---call-sites}
"$LJ" all 30 70 20 >"$T/deep.plain" || fail "the untraced deep run failed"
"$ATF" record "$DEEP_MODE" -o "$T/deep" -f 'lj_*' -- "$LJ" all 30 70 20 >"$T/deep.out" 2>"$T/deep.err" \
	|| { cat "$T/deep.err" >&2; fail "record $DEEP_MODE (K 70) failed"; }
cmp -s "$T/deep.plain" "$T/deep.out" || fail "deep: the output differs from the untraced run's"
check_session deep 30 70 20
# a longjmp out of all 74 frames at once: the next call's hit closes every one of them, before
# that call's frame is pushed (a hit that closed only some would leave the rest under it for good)
"$ATF" record "$DEEP_MODE" -o "$T/wide" -f 'lj_*' -- "$LJ" all 30 70 >"$T/wide.out" 2>"$T/wide.err" \
	|| { cat "$T/wide.err" >&2; fail "record $DEEP_MODE (K 70, to the round) failed"; }
check_session wide 30 70

# ---- record -p: the text is the file's after the session; the target goes on right -------------------
[ "$DEEP_MODE" = --call-sites ] || { echo "the deep assertions passed with $DEEP_MODE"; exit 0; }
"$LJ" serve $K "$T/served" >"$T/serve.out" &
target=$!
timeout 60 bash -c 'until [ -e "$1" ]; do sleep 0.05; done' _ "$T/served" || fail "the serving target never became ready"
mkfifo "$T/ready"
"$ATF" record --call-sites -v -p $target -o "$T/s" -f 'lj_*' --ready-file "$T/ready" 2>"$T/s.err" &
rec=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/s.err" >&2; fail "record -p never became ready"; }
during=$(text_diff $target "$LJ")
[ "$during" -gt 0 ] || fail "no redirected call in the text during the session"
# 1000 more rounds (667 longjmps through the stubs) in the session
kill -USR1 $target
timeout 60 bash -c 'until [ -e "$1" ]; do kill -0 $2 || exit 1; sleep 0.05; done' _ "$T/served.more" $target \
	|| fail "the target made no 1000 more rounds in the session"
kill -INT $rec
wait $rec || { cat "$T/s.err" >&2; fail "record -p failed"; }
assert_eq 0 "$(text_diff $target "$LJ")" "bytes of the text that differ from the file after the session"
"$ATF" verify "$T/s" >/dev/null || fail "verify the -p session"
"$TOOLS/record_stats" "$T/s" >"$T/s.stats"
ex=$(awk '$1 == "exception" && $3 == "lj_a" { print $4 }' "$T/s.stats")
[ "${ex:-0}" -gt 0 ] || fail "the -p session saw no longjmp out of lj_a"
kill -TERM $target
wait $target || fail "the served target failed: $(cat "$T/serve.out")"
assert_contains "$T/serve.out" "^served [1-9][0-9]* bad 0$" "the served target's results after the session"
echo "ok: longjmp through stubs: exact counts, closed as plain probes close them, 75 deep, text restored"
