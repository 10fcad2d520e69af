#!/usr/bin/env bash
# The target as it really runs: through a #! script, a two-level shim (bash script -> sh script
# -> env -> program, as pyenv's shims do) and sh -c; libraries as its loader finds them (a
# private LD_LIBRARY_PATH copy, a RUNPATH $ORIGIN copy); the same file named two ways gets the
# same module id. Counts are exact, in one pid_<PID>/, and the recording ends with the program.
source "$(dirname "$0")/lib.sh"
need_bpf
N=17 M=9

counts() {   # session what: the dbg_* calls of debug_funcs N, in one process directory
	"$ATF" verify "$1" >/dev/null || fail "$2: verify"
	"$TOOLS/record_stats" "$1" >"$T/stats"
	assert_eq "processes 1" "$(head -n 1 "$T/stats")" "$2: process directories"
	assert_eq $N "$(awk '$1 == "call" && $3 == "dbg_outer" { print $4 }' "$T/stats")" "$2: dbg_outer calls"
	assert_eq $((2 * N)) "$(awk '$1 == "call" && $3 == "dbg_inner" { print $4 }' "$T/stats")" "$2: dbg_inner calls"
	assert_eq "target exited" "$(awk '$1 == "process" { print $18, $19 }' "$T/stats")" "$2: end reason"
}

# a #! script that execs the program
printf '#!/bin/sh\nexec "%s" "$@"\n' "$TARGETS/debug_funcs" >"$T/run.sh"
chmod +x "$T/run.sh"
"$ATF" record -o "$T/script" -f 'dbg_*' -- "$T/run.sh" $N >"$T/out" 2>"$T/err" || { cat "$T/err" >&2; fail "record of a #! script"; }
assert_eq 0 "$(cat "$T/out")" "the program's output"
counts "$T/script" "#! script"
assert_contains "$T/err" "run.sh is a script" "script noted"

# two levels of shims, the second through env, as pyenv does it
printf '#!/usr/bin/env bash\nset -e\nexec "%s" "$@"\n' "$T/shim2" >"$T/shim1"
printf '#!/bin/sh\nexec env SHIM_LEVEL=2 "%s" "$@"\n' "$TARGETS/debug_funcs" >"$T/shim2"
chmod +x "$T/shim1" "$T/shim2"
"$ATF" record -o "$T/shim" -f 'dbg_*' -- "$T/shim1" $N >/dev/null 2>"$T/err" || { cat "$T/err" >&2; fail "record through two shims"; }
counts "$T/shim" "two-level shim"
[ "$(grep -c "called exec" "$T/err")" -ge 3 ] || { cat "$T/err" >&2; fail "the execs of the shims were not followed"; }

# sh -c, with the program's library named by -f: resolved again in the program, after the exec
# (--allow-missing: sh itself has no main)
"$ATF" record -o "$T/shc" --allow-missing -f main -f 'libatftest.so:lib_*' -- sh -c "exec '$TARGETS/shlib_user' $M" >/dev/null 2>"$T/err" \
	|| { cat "$T/err" >&2; fail "record of sh -c"; }
"$TOOLS/record_stats" "$T/shc" >"$T/stats"
assert_eq $M "$(awk '$1 == "call" && $3 == "lib_entry" { print $4 }' "$T/stats")" "sh -c: lib_entry calls"
assert_eq 1 "$(awk '$1 == "call" && $3 == "main" { print $4 }' "$T/stats")" "sh -c: shlib_user's main"

# libraries as the loader finds them: a RUNPATH $ORIGIN copy, then a private LD_LIBRARY_PATH copy
mkdir -p "$T/app" "$T/priv"
cp "$TARGETS/shlib_user" "$TARGETS/libatftest.so" "$T/app/"
cp "$TARGETS/libatftest.so" "$T/priv/"
libpath() { python3 -c 'import json,sys,glob; m=json.load(open(glob.glob(sys.argv[1]+"/pid_*/manifest.json")[0])); print("\n".join(x["path"] for x in m["modules"]))' "$1" | grep libatftest; }
"$ATF" record -o "$T/runpath" -f 'libatftest.so:lib_*' -- "$T/app/shlib_user" $M >/dev/null 2>"$T/err" || { cat "$T/err" >&2; fail "record (RUNPATH)"; }
assert_eq "$T/app/libatftest.so" "$(libpath "$T/runpath")" "library found through RUNPATH \$ORIGIN"
"$ATF" list-functions -s -f 'libatftest.so:lib_*' "$T/app/shlib_user" >"$T/lf" 2>"$T/err" || { cat "$T/err" >&2; fail "list-functions (RUNPATH)"; }
assert_contains "$T/lf" "^module $T/app/libatftest.so " "list-functions finds the library record traces"
LD_LIBRARY_PATH=$T/priv "$ATF" record -o "$T/llp" -f 'libatftest.so:lib_*' -- "$T/app/shlib_user" $M >/dev/null 2>"$T/err" || { cat "$T/err" >&2; fail "record (LD_LIBRARY_PATH)"; }
assert_eq "$T/priv/libatftest.so" "$(libpath "$T/llp")" "library found through LD_LIBRARY_PATH"
"$TOOLS/record_stats" "$T/llp" >"$T/stats"
assert_eq $M "$(awk '$1 == "call" && $3 == "lib_entry" { print $4 }' "$T/stats")" "LD_LIBRARY_PATH copy: lib_entry calls"
assert_eq $((2 * M)) "$(awk '$1 == "call" && $3 == "lib_leaf" { print $4 }' "$T/stats")" "LD_LIBRARY_PATH copy: lib_leaf calls"

# one file, two names (usrmerge): the same module id, so the same function ids
LIBC=$(readlink -f "$(ldd "$TARGETS/calls_libc" | awk '$1 == "libc.so.6" { print $3 }')")
case $LIBC in /usr/lib/*) ;; *) fail "libc is not under /usr/lib: $LIBC" ;; esac
[ "$(readlink -f "${LIBC#/usr}")" = "$LIBC" ] || skip "no usrmerge: ${LIBC#/usr} is not $LIBC"
for name in "${LIBC#/usr}" "$LIBC"; do
	d=$T/ids${name//\//_}
	"$ATF" record -o "$d" -f "$name:strlen" -- "$TARGETS/calls_libc" strlen 5 >/dev/null 2>"$T/err" || { cat "$T/err" >&2; fail "record -f $name"; }
	jq -r '.modules[0].module_id' "$d"/pid_*/manifest.json >>"$T/ids"
	"$TOOLS/record_stats" "$d" | awk '$1 == "call" { print $3, $4 }' >>"$T/calls"
done
[ "$(sort -u "$T/ids" | wc -l)" = 1 ] || fail "module ids differ: $(tr '\n' ' ' <"$T/ids")"
[ "$(sort -u "$T/calls" | wc -l)" = 1 ] || fail "calls differ: $(cat "$T/calls")"
echo "ok: #! script, two-level shim, sh -c, RUNPATH and LD_LIBRARY_PATH copies, one id for $LIBC"
