#!/usr/bin/env bash
# record --call-sites (include/callsite.h): direct calls to traced functions go through per-site
# stubs; no function's first bytes are written. On tests/targets/callsites (functions whose
# first instruction the kernel single-steps, called from several sites, a recursion 200 deep,
# a tail call):
#   - exact counts and parents, the same as with plain probes (--no-trampolines);
#   - no frame of the 200-deep recursion ends as unwound (plain probes: the kernel's 64
#     pending uretprobes per thread end the deeper ones as unwound);
#   - the target's output is the untraced run's; its text is the file's after the session;
#   - bash with every function traced (about 2000 sites): the same calls per function as
#     plain probes;
#   - a C++ program is redirected too, and its throws unwind exactly;
#   - refused with --trampolines / --no-trampolines (with -a: test_record_system_wide_call_sites.sh).
source "$(dirname "$0")/lib.sh"
need_bpf
kill_on_exit
CS=$TARGETS/callsites
[ -x "$CS" ] || fail "build first: make OUTPUT=$OUTPUT targets"
[ -x "$TOOLS/atf_raw" ] || fail "build first: make OUTPUT=$OUTPUT tools"
N=300

"$CS" all $N >"$T/plain.out" || fail "the untraced run failed"

# ---- call sites against plain probes ---------------------------------------------------------
"$ATF" record --call-sites -v -o "$T/cs" -f 'tr_*' -f 'cs_*' -- "$CS" all $N >"$T/cs.out" 2>"$T/cs.err" \
	|| { cat "$T/cs.err" >&2; fail "record --call-sites failed"; }
assert_contains "$T/cs.err" "callsites: 20 call sites of 7 functions redirected" \
	"the direct calls of tr_mov, tr_sub, tr_lea, cs_rec, cs_tail, tr_mark and tr_done (a lone ret: one instruction is moved)"
assert_contains "$T/cs.err" "^atftrace record: 20 call sites redirected$" "the session's total"
if grep -q "through trampolines\|registration guard" "$T/cs.err"; then
	fail "--call-sites wrote an entry trampoline or armed the guard: $(grep 'through trampolines\|registration guard' "$T/cs.err")"
fi
cmp -s "$T/plain.out" "$T/cs.out" || fail "the output differs from the untraced run's: $(diff "$T/plain.out" "$T/cs.out" | head -5)"
"$ATF" verify "$T/cs" >/dev/null || fail "verify --call-sites session"
"$ATF" record --no-trampolines -o "$T/plain" -f 'tr_*' -f 'cs_*' -- "$CS" all $N >"$T/p.out" 2>"$T/p.err" \
	|| { cat "$T/p.err" >&2; fail "record --no-trampolines failed"; }
call_summary "$T/cs" >"$T/cs.sum"
call_summary "$T/plain" >"$T/plain.sum"
assert_eq 0 "$(awk '$1 == "unwound" { print $2 }' "$T/cs.sum")" "frames closed as unwound with --call-sites"
# cs_rec 200 deep: the kernel keeps 64 uretprobes per thread, the rest end as unwound
unw=$(awk '$1 == "unwound" { print $2 }' "$T/plain.sum")
[ "$unw" -ge 100 ] || fail "plain probes: expected the frames of cs_rec past 64 to end as unwound, got $unw"
grep -v '^unwound' "$T/cs.sum" >"$T/cs.cmp"
grep -v '^unwound' "$T/plain.sum" >"$T/plain.cmp"
diff "$T/plain.cmp" "$T/cs.cmp" >&2 || fail "calls or parents differ between --call-sites and plain probes"
# the expected numbers themselves: N rounds of 3 tr_mov, 2 tr_sub (+1 through cs_tail), 2 tr_lea
assert_eq "$((3 * N)) $((3 * N)) $((2 * N)) $N" "$("$ATF" report "$T/cs" | awk '
	$13 == "tr_mov" { m = $5 } $13 == "tr_sub" { s = $5 } $13 == "tr_lea" { l = $5 }
	$13 == "cs_tail" { t = $5 } END { print m, s, l, t }')" "calls of tr_mov, tr_sub, tr_lea, cs_tail"
# cs_tail's tail call to tr_sub nests under it, in both
assert_eq $N "$(awk '$1 == "edge" { print }' "$T/cs.sum" | awk -v fid="$(awk '$1 == "calls" && $3 == '$N' { print $2 }' "$T/cs.sum" | head -1)" '$2 == fid { n += $4 } END { print n + 0 }')" \
	"calls made under cs_tail (its tail call)"

# ---- a real program: bash, every function of the shell; the same counts as plain probes --------
BASH_BIN=$(readlink -f /bin/bash)
script='for i in $(seq 200); do x=$((i * 2)); f() { echo "$1"; }; f $x >/dev/null; done'
"$ATF" record --call-sites -v -o "$T/b1" -f "$BASH_BIN:*" -- "$BASH_BIN" -c "$script" 2>"$T/b1.err" \
	|| { cat "$T/b1.err" >&2; fail "record --call-sites of bash failed"; }
"$ATF" record --no-trampolines -o "$T/b2" -f "$BASH_BIN:*" -- "$BASH_BIN" -c "$script" 2>"$T/b2.err" \
	|| { cat "$T/b2.err" >&2; fail "record --no-trampolines of bash failed"; }
assert_contains "$T/b1.err" "bash: [1-9][0-9][0-9]+ call sites of [1-9][0-9]* functions redirected" "bash's call sites"
"$ATF" verify "$T/b1" >/dev/null || fail "verify the bash --call-sites session"
for s in b1 b2; do "$ATF" report "$T/$s" | awk 'NR > 2 { print $13, $5, $14, $15 }' | sort >"$T/$s.calls"; done
[ "$(wc -l <"$T/b1.calls")" -gt 100 ] || fail "bash: fewer than 100 functions called"
diff "$T/b2.calls" "$T/b1.calls" >&2 || fail "bash: calls per function differ between --call-sites and plain probes"

# ---- the text after a -p session is the file's; the stubs' calls are there during it ----------
mkfifo "$T/served" "$T/ready"
"$CS" serve "$T/served" >"$T/serve.out" &
target=$!
timeout 60 cat "$T/served" >/dev/null || fail "the serving target never became ready"
"$ATF" record --call-sites -p $target -o "$T/s" -f 'tr_*' -f 'cs_*' --ready-file "$T/ready" 2>"$T/s.err" &
rec=$!
timeout 60 cat "$T/ready" >/dev/null || { cat "$T/s.err" >&2; fail "record -p --call-sites never became ready"; }
during=$(text_diff $target "$CS")
[ "$during" -gt 0 ] || fail "no redirected call in the text during the session"
kill -INT $rec
wait $rec || { cat "$T/s.err" >&2; fail "record -p --call-sites failed"; }
assert_eq 0 "$(text_diff $target "$CS")" "bytes of the text that differ from the file after the session"
kill -TERM $target
wait $target || fail "the served target failed: $(cat "$T/serve.out")"
assert_contains "$T/serve.out" "^served [1-9][0-9]*$" "the served target's count"

# ---- a C++ program: redirected too, its throws unwind through the stubs (test_record_call_sites_cxx.sh)
"$ATF" record --call-sites -v -o "$T/cxx" -f 'thrower_*' -- "$TARGETS/cxx_throw" 20 >/dev/null 2>"$T/cxx.err" \
	|| { cat "$T/cxx.err" >&2; fail "record --call-sites of a C++ program failed"; }
assert_contains "$T/cxx.err" "cxx_throw: [1-9][0-9]* call sites? of [1-9][0-9]* functions? redirected" \
	"the C++ program's redirected calls"
check_throw_session cxx 20

# ---- refused combinations: one line, non-zero ---------------------------------------------------
for args in "--trampolines -- $CS all 1" "--no-trampolines -- $CS all 1"; do
	# shellcheck disable=SC2086
	if "$ATF" record --call-sites -o "$T/r" $args >"$T/r.out" 2>"$T/r.err"; then
		fail "record --call-sites $args was accepted"
	fi
	assert_contains "$T/r.err" "^atftrace record: give one of --call-sites, --trampolines and --no-trampolines" \
		"the refusal of --call-sites $args"
done
echo "ok: --call-sites: exact counts and parents, no unwound frame at depth 200 ($unw with plain probes), text restored"
