#!/usr/bin/env bash
# record a shared library's functions: by path, and by library name (LD_LIBRARY_PATH).
source "$(dirname "$0")/lib.sh"
need_bpf
N=10

check() {   # session
	"$ATF" verify "$1" >/dev/null || fail "verify $1"
	"$TOOLS/record_stats" "$1" >"$T/stats"
	st() { awk -v k="$1" -v n="$2" '$1 == k && $3 == n { print $4 }' "$T/stats"; }
	assert_eq 1 "$(st call main)" "calls of main"
	assert_eq $N "$(st call lib_entry)" "calls of lib_entry"
	assert_eq $((2 * N)) "$(st call lib_leaf)" "calls of lib_leaf"
	read -r _ _ _ _ _ events _ _ _ _ _ _ _ maxdepth _ lost _ <<<"$(grep '^process ' "$T/stats")"
	assert_eq $((2 * (1 + 3 * N))) "$events" "events"
	assert_eq 2 "$maxdepth" "depth of lib_leaf (main 0, lib_entry 1)"
	assert_eq 0 "$lost" "lost"
	grep -q '"path": ".*/libatftest.so"' "$1"/pid_*/manifest.json || fail "libatftest.so not among the manifest's modules"
}

"$ATF" record -o "$T/bypath" -f main -f "$TARGETS/libatftest.so:lib_*" -- "$TARGETS/shlib_user" $N 2>"$T/err" || { cat "$T/err" >&2; fail "record by path failed"; }
check "$T/bypath"
LD_LIBRARY_PATH=$TARGETS "$ATF" record -o "$T/byname" -f main -f 'libatftest.so:lib_*' -- "$TARGETS/shlib_user" $N 2>"$T/err" || { cat "$T/err" >&2; fail "record by name failed"; }
check "$T/byname"
# a library the program does not load is waited for (a dlopen may map it); it never comes: the
# summary names it and the empty session says why, with exit status 0
"$ATF" record -o "$T/none" -f 'libnosuch.so.9:x*' -- "$TARGETS/shlib_user" 1 >/dev/null 2>"$T/err" || { cat "$T/err" >&2; fail "record with a library never loaded failed"; }
assert_contains "$T/err" "^atftrace record: libnosuch.so.9: not loaded by .*shlib_user yet" "waiting line"
assert_contains "$T/err" "^atftrace record: -f libnosuch.so.9:x\\*\\.\\.\\.: the target never loaded libnosuch.so.9$" "never loaded"
assert_contains "$T/err" "^atftrace record: warning: the session is empty: no function was attached \\(the -f modules were never loaded\\)$" "empty session"
# libc traced in a launched command: the launcher's own libc calls before the exec are not the
# target's; the target's one write is recorded, and nothing is reported as lost or ignored
"$ATF" record -o "$T/libc" -f 'libc.so.6:write' -f 'libc.so.6:close' -- /bin/echo hi >"$T/out" 2>"$T/err" \
	|| { cat "$T/err" >&2; fail "record of libc write failed"; }
assert_eq hi "$(cat "$T/out")" "echo's output"
"$TOOLS/record_stats" "$T/libc" >"$T/stats"
assert_eq 1 "$(awk '$1 == "call" && $3 == "__write" { print $4 }' "$T/stats")" "echo's writes"
grep -q "not recorded\|could not" "$T/err" && fail "events reported as dropped: $(cat "$T/err")"
echo "ok"
