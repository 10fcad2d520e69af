#!/usr/bin/env bash
# Two first instructions that must not be probed the plain way or moved blindly
# (tests/targets/tramp_refs checks its own results: a wrong one makes it exit 1):
#   - ref_into jumps 3 bytes into ref_target, as glibc's __mempcpy_avx512_unaligned_erms does
#     into __memcpy_avx512_unaligned_erms: ref_target keeps its plain probe (branch-in), found
#     by decoding every function of the module, and both are traced exactly;
#   - ref_evex starts with an EVEX (AVX-512) instruction, whose single-step by the kernel loses
#     its result: it is traced only through a trampoline, and left out with --no-trampolines.
source "$(dirname "$0")/lib.sh"
need_bpf
TR=$TARGETS/tramp_refs
[ -x "$TR" ] || fail "build first: make OUTPUT=$OUTPUT targets"
N=300
evex=$("$TR" 1 | sed -n 's/.*evex \([a-z]*\).*/\1/p')

"$ATF" list-functions -f 'ref_*' "$TR" >"$T/list"
assert_contains "$T/list" " probe:branch-in +selected +ref_target\$" "ref_target: entered in its first bytes by ref_into"
assert_contains "$T/list" " evex +trampoline +selected +ref_evex\$" "ref_evex: EVEX, through a trampoline"

# --trampolines: exact counts, right results
"$ATF" record --trampolines -v -o "$T/on" -f 'ref_*' -- "$TR" $N >"$T/on.out" 2>"$T/on.err" \
	|| { cat "$T/on.err" >&2; fail "record"; }
if grep -q "the target" "$T/on.err"; then fail "$(grep 'the target' "$T/on.err")"; fi
assert_contains "$T/on.out" "wrong 0\$" "results with trampolines"
"$TOOLS/record_stats" "$T/on" >"$T/on.stats"
calls() { awk -v f="$2" '$1 == "call" && $3 == f { print $4 }' "$1"; }
assert_eq $N "$(calls "$T/on.stats" ref_target)" "ref_target calls"
assert_eq $N "$(calls "$T/on.stats" ref_into)" "ref_into calls"
# ref_evex runs only on a CPU with AVX-512: elsewhere its check is skipped, visibly (exit 77 below)
[ "$evex" != yes ] || assert_eq $N "$(calls "$T/on.stats" ref_evex)" "ref_evex calls through its trampoline"

# --no-trampolines: ref_evex is left out (its plain probe would break it), the rest traced
"$ATF" record --no-trampolines -o "$T/off" -f 'ref_*' -- "$TR" $N >"$T/off.out" 2>"$T/off.err" \
	|| { cat "$T/off.err" >&2; fail "record --no-trampolines"; }
if grep -q "the target" "$T/off.err"; then fail "--no-trampolines: $(grep 'the target' "$T/off.err")"; fi
assert_contains "$T/off.out" "wrong 0\$" "results with plain probes"
assert_contains "$T/off.err" "tramp_refs: 1 function starts with an AVX-512 \(EVEX\) instruction" "ref_evex left out, said"
"$TOOLS/record_stats" "$T/off" >"$T/off.stats"
assert_eq "" "$(calls "$T/off.stats" ref_evex)" "no ref_evex probe"
assert_eq $N "$(calls "$T/off.stats" ref_into)" "ref_into calls, plain"
# everything else passed: a CPU without AVX-512 could not run ref_evex, which CI must see
[ "$evex" = yes ] || skip "this CPU has no AVX-512 (avx512vl, avx512bw): ref_evex was not run through its trampoline"
echo ok
