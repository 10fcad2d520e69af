#!/usr/bin/env bash
# Functions whose first instruction the kernel's uprobes refuse (ENOTSUPP: a LOCK prefix, an I/O
# instruction) are left out, each named with its bytes and why, and everything else is traced:
# with every link kind, for a launched target (whose binary is not mapped yet when the links are
# made, so the kernel would refuse nothing at attach and the functions would be silently missing)
# and for all of libc (which failed the whole session with "Unknown error 524").
source "$(dirname "$0")/lib.sh"
need_bpf
N=7

for kind in session multi perf; do
	rc=0
	ATFTRACE_LINK=$kind "$ATF" record -o "$T/$kind" -- "$TARGETS/refused_insn" $N >/dev/null 2>"$T/err" || rc=$?
	assert_eq 0 "$rc" "exit status ($kind links): $(cat "$T/err")"
	"$TOOLS/record_stats" "$T/$kind" >"$T/stats"
	for f in plain_a plain_b; do
		assert_eq $N "$(awk -v f=$f '$1 == "call" && $3 == f { print $4 }' "$T/stats")" "$f calls ($kind)"
	done
	if [ "$(uname -m)" = x86_64 ]; then
		# a LOCK prefix is known before attach (bad-insn, as list-functions says); an I/O
		# instruction is found out by asking the kernel
		assert_contains "$T/err" "refused_insn: [0-9]+ matching functions cannot be probed: .*1 bad-insn" "refused_lock skipped as bad-insn ($kind)"
		assert_contains "$T/err" "refused_insn: 1 of 4 functions not traced: the kernel refuses to probe its first instruction$" "summary ($kind)"
		assert_contains "$T/err" "^atftrace:   refused_io at offset 0x[0-9a-f]+: ec [0-9a-f ]+: an instruction uprobes neither emulate nor single-step$" "refused_io ($kind)"
		assert_contains "$T/err" "launched [0-9]+: 3 functions in 1 module" "functions attached ($kind)"
		assert_eq "" "$(awk '$1 == "call" && $3 == "refused_lock"' "$T/stats")" "refused_lock is not traced ($kind)"
	fi
	"$ATF" verify "$T/$kind" >/dev/null || fail "verify ($kind)"
done

# all of libc: the one function Debian 12's libc starts with a LOCK prefix is left out, not the session
rc=0
"$ATF" record -o "$T/libc" -f 'libc.so.6:*' -- "$TARGETS/call_chain" 3 >/dev/null 2>"$T/err" || rc=$?
assert_eq 0 "$rc" "exit status of -f 'libc.so.6:*': $(cat "$T/err")"
"$ATF" list-functions "$(realpath /lib/x86_64-linux-gnu/libc.so.6)" >"$T/lf" 2>&1 || fail "list-functions libc: $(cat "$T/lf")"
assert_contains "$T/lf" " bad-insn +pthread_spin_lock$" "pthread_spin_lock (LOCK prefix) is left out as bad-insn"
"$ATF" verify "$T/libc" >/dev/null || fail "verify (libc)"
"$TOOLS/record_stats" "$T/libc" >"$T/stats"
calls=$(awk '$1 == "process" { print $8 }' "$T/stats")
[ "${calls:-0}" -gt 0 ] || fail "no libc call recorded: $(cat "$T/stats")"
# the refusals themselves were checked only on x86_64: elsewhere say so (exit 77), visibly
[ "$(uname -m)" = x86_64 ] || skip "the refused instructions (LOCK, in) checked here are x86_64's"
echo "ok"
