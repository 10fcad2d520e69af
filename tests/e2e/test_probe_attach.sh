#!/usr/bin/env bash
# The BPF side without the recorder: list-functions on the probe-site target, then for each
# link kind (session, multi, perf) the probes attach, every call and return arrives exactly
# once with the right depths (endbr64 hop included), and longjmp closes skipped frames with
# EXCEPTION events. Uses tests/tools/probe_smoke (probes.c + a ring reader).
source "$(dirname "$0")/lib.sh"
need_bpf
SITES=$TARGETS/probe_sites
[ -x "$SITES" ] && [ -x "$TARGETS/probe_sites_cet" ] && [ -x "$TOOLS/probe_smoke" ] \
	|| fail "build first: make OUTPUT=$OUTPUT targets tools"

# ---- list-functions ------------------------------------------------------------------------
"$ATF" list-functions -f 'site_*' -x site_lea "$SITES" >"$T/list"
assert_contains "$T/list" '^module .*/probe_sites build-id [0-9a-f]{40} pie ' "module line"
assert_contains "$T/list" ' 9 +nop5 +probe:nop5 +selected +site_nop5$' "nop5 site"
assert_contains "$T/list" ' 9 +emulated +probe:emulated +selected +site_push$' "push site: no trampoline"
assert_contains "$T/list" ' 13 +endbr64\+emulated +probe:emulated +selected +site_endbr$' "endbr64 hop"
assert_contains "$T/list" ' single-step +- +excluded +site_lea$' "excluded"
# the endbr64 probe offset is its address + 4 (addresses equal file offsets in .text here)
read -r addr off <<<"$(awk '$NF == "site_endbr" { print $1, $2 }' "$T/list")"
assert_eq $((addr + 4)) $((off)) "site_endbr probe offset"
assert_eq "summary: 7 selected, 1 unmatched, 6 zero-size, 0 plt, 0 not-exec, 0 alias, 0 bad-insn, 1 excluded, 0 ifunc, 1 entry-point" \
	"$(tail -n 1 "$T/list")" "summary"
"$ATF" list-functions -s -f 'libc.so.6:malloc' /bin/true >"$T/libc"
assert_contains "$T/libc" '^module .*/libc\.so\.6 ' "libc resolved by name"
assert_eq 1 "$(grep -c ' selected ' "$T/libc")" "one libc function selected"
if "$ATF" list-functions /etc/passwd 2>"$T/err"; then fail "list-functions accepted a non-ELF file"; fi
assert_eq 1 "$(wc -l <"$T/err")" "one error line for a non-ELF file"
assert_contains "$T/err" '^atftrace: /etc/passwd: not a usable ELF file' "non-ELF message"

# ---- attach and count, per link kind ---------------------------------------------------------
expect_outer() {   # N: outer -> push, endbr; every event exactly N times at the right depth
	printf '%s\n' "CALL site_endbr 1 $1" "RETURN site_endbr 1 $1" "CALL site_outer 0 $1" \
		"RETURN site_outer 0 $1" "CALL site_push 1 $1" "RETURN site_push 1 $1" \
		"total calls=$((3 * $1)) returns=$((3 * $1)) exceptions=0 lost=0 exits=1 bad=0"
}
expect_longjmp() {   # one round: mid and leaf are left by longjmp, closed at the next call
	printf '%s\n' "CALL site_jmp_outer 0" "CALL site_jmp_mid 1" "CALL site_jmp_leaf 2" \
		"EXCEPTION site_jmp_leaf 2" "EXCEPTION site_jmp_mid 1" "CALL site_push 1" \
		"RETURN site_push 1" "RETURN site_jmp_outer 0"
}
for kind in session multi perf; do
	for target in probe_sites probe_sites_cet; do
		ATFTRACE_LINK=$kind "$TOOLS/probe_smoke" -f 'site_*' "$TARGETS/$target" outer 2000 \
			>"$T/out" 2>"$T/err" || { cat "$T/err" >&2; fail "$kind/$target: probe_smoke failed"; }
		assert_eq "link=$kind attached=8" "$(head -n 1 "$T/out")" "$kind/$target: link kind, functions"
		assert_eq "$(expect_outer 2000)" "$(tail -n +3 "$T/out")" "$kind/$target: events"
	done
	ATFTRACE_LINK=$kind "$TOOLS/probe_smoke" -s -f 'site_*' "$SITES" longjmp 3 >"$T/out" 2>"$T/err" \
		|| { cat "$T/err" >&2; fail "$kind: longjmp run failed"; }
	assert_eq "$(expect_longjmp; expect_longjmp; expect_longjmp)" \
		"$(tail -n +3 "$T/out" | head -n -1)" "$kind: longjmp events"
	assert_eq "total calls=12 returns=6 exceptions=6 lost=0 exits=1 bad=0" "$(tail -n 1 "$T/out")" \
		"$kind: longjmp totals"
done
# an unknown link kind is refused with one clear line
if ATFTRACE_LINK=bogus "$TOOLS/probe_smoke" -f site_push "$SITES" push 1 >/dev/null 2>"$T/err"; then
	fail "ATFTRACE_LINK=bogus accepted"
fi
assert_contains "$T/err" 'ATFTRACE_LINK=bogus: expected session, multi or perf' "bad link kind message"
echo ok
